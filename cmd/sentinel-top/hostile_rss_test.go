//go:build linux

package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/hostiletest"
)

// TestHostilePeakRSS runs the built command as a child process against
// each hostile peer of SECURITY.md, real servers on loopback, and requires
// its peak resident memory (VmHWM, read from /proc until it exits) to stay
// under its --max-memory. Linux only (/proc).
//
// SENTINEL_TOP_HOSTILE=1 is its full form: every case under each command
// it applies to (report; the dashboard, in a tmux pane; serve, with 15
// readers that never read), at the default budget (512 MiB) and at 256 MiB,
// SENTINEL_TOP_HOSTILE_RUNS times each (1 by default), each live case for
// SENTINEL_TOP_HOSTILE_FOR (15 s by default). Cases run side by side as
// -parallel allows (each is its own process, whose VmHWM is its own).
//
// SENTINEL_TOP_HOSTILE=ci is the trimmed form .ci/run runs on every
// submission: each case once, under the command of SECURITY.md's table
// (serve for the re-served flood, report for the others), at 256 MiB, each
// live case for 10 s, the garbage replay within 64 MiB rather than 512 MiB.
func TestHostilePeakRSS(t *testing.T) {
	mode := os.Getenv("SENTINEL_TOP_HOSTILE")
	if mode == "" {
		t.Skip("opt-in: SENTINEL_TOP_HOSTILE=1 (full), SENTINEL_TOP_HOSTILE=ci (trimmed)")
	}
	trimmed := mode == "ci"
	run := 15 * time.Second
	if trimmed {
		run = 10 * time.Second
	}
	if d, err := time.ParseDuration(os.Getenv("SENTINEL_TOP_HOSTILE_FOR")); err == nil {
		run = d
	}
	runs := 1
	if n, err := strconv.Atoi(os.Getenv("SENTINEL_TOP_HOSTILE_RUNS")); err == nil && n > 0 {
		runs = n
	}
	budgets := []int64{512, 256} // MiB
	commands := []string{"report", "dashboard", "serve"}
	if trimmed {
		budgets, commands = []int64{256}, nil
	}
	if !trimmed {
		if _, err := exec.LookPath("tmux"); err != nil {
			t.Fatal("the dashboard's cases need tmux")
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sentinel-top")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	garbageBlocks, garbageCap := 512, "512MiB"
	if trimmed {
		garbageBlocks, garbageCap = 64, "64MiB"
	}
	bomb := gzipFile(t, dir, "bomb.ndjson.gz", bytes.Repeat([]byte{0}, 1<<20), 1024)
	garbage := gzipFile(t, dir, "garbage.ndjson.gz", bytes.Repeat([]byte("garbage, not a message\n"), 45590), garbageBlocks)
	live := []struct {
		name string
		peer func(t *testing.T) string // the target to dial
		// trimmed is the command the trimmed form runs it under: the
		// one of SECURITY.md's table.
		trimmed string
	}{
		{"app renamed every frame", func(t *testing.T) string { return streamPeer(t, appRenamer) }, "report"},
		{"rules naming 2,000 new resources as fast as it can", func(t *testing.T) string { return streamPeer(t, ruleFlood) }, "report"},
		{"rules naming 5,000 new resources five times a second", func(t *testing.T) string { return streamPeer(t, rulePaced) }, "report"},
		{"a new ruleId per state message", func(t *testing.T) string { return streamPeer(t, ruleIDFlood) }, "report"},
		{"Java rules naming 9,000 new resources every 5 s", func(t *testing.T) string {
			return "sentinel://" + javaRulesPeer(t) + "?app=hostile"
		}, "report"},
		{"Java /metric answering 32 MiB at every poll", func(t *testing.T) string { return javaTargets(javaMetricPeer(t, 1)) }, "report"},
		// Thirty such targets: the full form only (the trimmed one would
		// spend its two cores on parsing).
		{"30 Java targets answering 32 MiB at every poll", func(t *testing.T) string { return javaTargets(javaMetricPeer(t, 30)) }, ""},
		{"endless upgrade response headers", func(t *testing.T) string { addr, _ := hostiletest.EndlessHeaders(t); return addr }, "report"},
		{"buckets of 2,500 resources as fast as it can", func(t *testing.T) string { return streamPeer(t, bucketFlood) }, "serve"},
	}
	replays := []struct {
		name string
		args []string
	}{
		{"replay of a gzip bomb (1 GiB of zeros)", []string{"report", "--replay", bomb}},
		{"replay of " + garbageCap + " of garbage lines, gzipped", []string{"report", "--replay", garbage, "--max-replay-bytes", garbageCap}},
	}
	for _, budget := range budgets {
		maxMemory := fmt.Sprintf("%dMiB", budget)
		for k := range runs {
			for _, tc := range live {
				commands := commands
				if trimmed {
					commands = []string{tc.trimmed}
					if tc.trimmed == "" {
						commands = nil
					}
				}
				for _, command := range commands {
					t.Run(fmt.Sprintf("%s/%s/%s/run %d", maxMemory, tc.name, command, k+1), func(t *testing.T) {
						t.Parallel()
						target := tc.peer(t)
						switch command {
						case "report":
							peakUnder(t, budget, bin, nil, "report", "--targets", target, "--for", fmt.Sprint(int(run.Seconds()))+"s",
								"--format", "json", "--max-memory", maxMemory)
						case "serve":
							peakUnder(t, budget, bin, func(cmd *exec.Cmd, stderr *syncBuffer) { stallReaders(t, cmd, stderr, run) },
								"serve", "--targets", target, "--listen", "127.0.0.1:0", "--max-memory", maxMemory)
						case "dashboard":
							dashboardPeak(t, budget, bin, run, "--targets", target, "--max-memory", maxMemory)
						}
					})
				}
			}
			for _, tc := range replays {
				t.Run(fmt.Sprintf("%s/%s/report/run %d", maxMemory, tc.name, k+1), func(t *testing.T) {
					t.Parallel()
					peakUnder(t, budget, bin, nil, append(tc.args, "--max-memory", maxMemory)...)
				})
			}
		}
	}
}

// peakUnder runs bin with args until it exits (during, when set, is
// called once it started, and ends it), and requires its peak resident
// memory to stay under budget MiB.
func peakUnder(t *testing.T, budget int64, bin string, during func(*exec.Cmd, *syncBuffer), args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hwm := watchHWM(cmd.Process.Pid)
	if during != nil {
		during(cmd, &stderr)
	}
	err := cmd.Wait()
	// The kernel's figure after exit counts the test process's own size
	// at the fork too; /proc's, read until the end, does not.
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10 // KiB to MiB
	if own := hwm() >> 10; own > 0 {
		rss = own
	}
	judgePeak(t, budget, rss, time.Since(began), strings.Join(args, " "), err, stderr.String())
}

// judgePeak logs a peak (a line "peak RSS N MiB" the docs' table is made
// of) and fails it at budget MiB or more.
func judgePeak(t *testing.T, budget, rss int64, took time.Duration, what string, err error, stderr string) {
	t.Helper()
	t.Logf("peak RSS %d MiB of %d in %s: %s: sentinel-top %s (%v)", rss, budget, took.Round(time.Second), t.Name(), what, err)
	if rss <= 0 {
		t.Errorf("no peak read\n%s", tail(stderr))
	}
	if rss >= budget {
		t.Errorf("peak RSS %d MiB, over the %d MiB budget\n%s", rss, budget, tail(stderr))
	}
}

// dashboardPeak runs the dashboard with args in a tmux pane of its own
// server for run, and requires its peak resident memory to stay under
// budget MiB.
func dashboardPeak(t *testing.T, budget int64, bin string, run time.Duration, args ...string) {
	t.Helper()
	sock := fmt.Sprintf("sentinel-top-rss-%d-%d", os.Getpid(), dashboardSeq.Add(1))
	tmux := func(a ...string) ([]byte, error) {
		return exec.Command("tmux", append([]string{"-L", sock}, a...)...).CombinedOutput()
	}
	line := "exec " + bin
	for _, a := range args {
		line += " '" + a + "'"
	}
	if out, err := tmux("new-session", "-d", "-s", "rss", "-x", "120", "-y", "40", line); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer tmux("kill-server")
	out, err := tmux("display-message", "-p", "-t", "rss", "#{pane_pid}")
	if err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("tmux pane pid %q", out)
	}
	began := time.Now()
	hwm := watchHWM(pid)
	time.Sleep(run)
	screen, _ := tmux("capture-pane", "-p", "-t", "rss")
	rss := hwm() >> 10
	if !bytes.Contains(screen, []byte("instance")) {
		t.Errorf("the dashboard is not on the screen:\n%s", screen)
	}
	judgePeak(t, budget, rss, time.Since(began), strings.Join(args, " "), nil, string(screen))
}

// dashboardSeq names each dashboard case's tmux server.
var dashboardSeq atomic.Int64

// watchHWM reads the peak resident size of process pid (VmHWM, KiB) until
// it exits; the returned function gives the last figure read.
func watchHWM(pid int) func() int64 {
	var last atomic.Int64
	go func() {
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				return
			}
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					var kb int64
					fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
					if kb > 0 {
						last.Store(kb)
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return last.Load
}

// streamPeer serves a websocket stream on loopback that sends what send
// makes, as fast as the connection takes it, and returns its address.
func streamPeer(t *testing.T, send func(conn *websocket.Conn, now func() int64) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		go func() { // answer pings: read until the connection ends
			for {
				if _, _, err := conn.NextReader(); err != nil {
					return
				}
			}
		}()
		send(conn, func() int64 { return time.Now().UnixMilli() })
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// frame encodes and sends m.
func frame(conn *websocket.Conn, m wire.Message) error {
	data, err := wire.Marshal(m)
	if err != nil {
		return err
	}
	return conn.WriteMessage(websocket.TextMessage, data)
}

// names are n resource names of about 200 bytes, unique to prefix.
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/%0190d", prefix, i)
	}
	return out
}

func buckets(instance string, now int64, resources []string) *wire.Buckets {
	start := now/500*500 - 500
	b := &wire.Buckets{Header: wire.Header{Ts: now, Instance: instance}, BucketMs: 500}
	for _, r := range resources {
		b.Items = append(b.Items, wire.NewBucketItem(r, start, core.Metrics{Pass: 5, Complete: 5, RtSum: 50}, true))
	}
	return b
}

// appRenamer announces its instance under a new app before every frame,
// each with 1,000 new resources.
func appRenamer(conn *websocket.Conn, now func() int64) error {
	for k := 0; ; k++ {
		app := fmt.Sprintf("app-%d", k)
		if err := frame(conn, &wire.Hello{Header: wire.Header{Ts: now(), Instance: "renamer"}, App: app, BucketMs: 500, StartedAt: 1}); err != nil {
			return err
		}
		if err := frame(conn, buckets("renamer", now(), names(app, 1000))); err != nil {
			return err
		}
	}
}

// ruleFlood sends rules naming 2,000 new resources each.
func ruleFlood(conn *websocket.Conn, now func() int64) error {
	if err := frame(conn, &wire.Hello{Header: wire.Header{Ts: now(), Instance: "rules"}, App: "rules", BucketMs: 500}); err != nil {
		return err
	}
	for k := 0; ; k++ {
		var rules []core.BreakerRule
		for _, n := range names(fmt.Sprint("rules-", k), 2000) {
			rules = append(rules, core.BreakerRule{Resource: n, Strategy: core.ErrorCount, Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
		}
		if err := frame(conn, &wire.Rules{Header: wire.Header{Ts: now(), Instance: "rules"}, Version: fmt.Sprint(k), Breakers: rules}); err != nil {
			return err
		}
	}
}

// rulePaced sends, five times a second, rules naming 5,000 new resources
// of about 30 bytes (just under 1 MiB a message, the frame bound).
func rulePaced(conn *websocket.Conn, now func() int64) error {
	if err := frame(conn, &wire.Hello{Header: wire.Header{Ts: now(), Instance: "paced"}, App: "paced", BucketMs: 500}); err != nil {
		return err
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for k := 0; ; k++ {
		var rules []core.BreakerRule
		for i := range 5000 {
			rules = append(rules, core.BreakerRule{Resource: fmt.Sprintf("paced-%d/%020d", k, i), Strategy: core.ErrorCount,
				Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
		}
		if err := frame(conn, &wire.Rules{Header: wire.Header{Ts: now(), Instance: "paced"}, Version: fmt.Sprint(k), Breakers: rules}); err != nil {
			return err
		}
		<-tick.C
	}
}

// ruleIDFlood sends state messages, each of a new rule id.
func ruleIDFlood(conn *websocket.Conn, now func() int64) error {
	if err := frame(conn, &wire.Hello{Header: wire.Header{Ts: now(), Instance: "states"}, App: "states", BucketMs: 500}); err != nil {
		return err
	}
	for k := 0; ; k++ {
		m := &wire.State{Header: wire.Header{Ts: now(), Instance: "states"}, Resource: fmt.Sprint("db-", k%100), Strategy: core.ErrorCount,
			From: core.Closed, To: core.Open, RuleID: fmt.Sprintf("rule-%0200d", k), Threshold: 5, RetryTimeoutMs: 1000,
			Snapshot: &wire.Snapshot{Total: 10, Error: 6, Value: 6}}
		if err := frame(conn, m); err != nil {
			return err
		}
	}
}

// bucketFlood sends buckets of 2,500 resources (about 750 KiB a frame).
func bucketFlood(conn *websocket.Conn, now func() int64) error {
	if err := frame(conn, &wire.Hello{Header: wire.Header{Ts: now(), Instance: "flood"}, App: "flood", BucketMs: 500}); err != nil {
		return err
	}
	resources := names("flood", 2500)
	for {
		if err := frame(conn, buckets("flood", now(), resources)); err != nil {
			return err
		}
	}
}

// javaRulesPeer answers like Java Sentinel's command API, with degrade
// rules naming 9,000 new resources at every poll.
func javaRulesPeer(t *testing.T) string {
	t.Helper()
	var polls atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metric":
			fmt.Fprintf(w, "%d|db|5|0|5|0|10|0|0|0\n", time.Now().UnixMilli()/1000*1000-2000)
		case "/getRules":
			if r.URL.Query().Get("type") != "degrade" {
				w.Write([]byte("[]"))
				return
			}
			k := polls.Add(1)
			bw := bufio.NewWriter(w)
			bw.WriteString("[")
			for i, n := range names(fmt.Sprint("GET:/java-", k), 9000) {
				if i > 0 {
					bw.WriteString(",")
				}
				fmt.Fprintf(bw, `{"resource":%q,"grade":2,"count":5,"timeWindow":10,"minRequestAmount":5,"statIntervalMs":1000}`, n)
			}
			bw.WriteString("]")
			bw.Flush()
		case "/version":
			w.Write([]byte("1.8.8"))
		default:
			http.Error(w, "Unknown command", http.StatusBadRequest)
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// javaMetricPeer serves n Java command APIs on loopback whose /metric
// answers 32 MiB of valid lines at every poll: 1,600 resources of
// 300-byte names over the 60 seconds before (96,000 lines; Java answers at
// most 100,000). It returns their addresses.
func javaMetricPeer(t *testing.T, n int) []string {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metric":
			bw := bufio.NewWriterSize(w, 64<<10)
			now := time.Now().UnixMilli()/1000*1000 - 60000
			for s := range int64(60) {
				for i := range 1600 {
					fmt.Fprintf(bw, "%d|GET:/api/v1/catalogue/%0290d|3|1|3|0|30|0|0|0\n", now+s*1000, i)
				}
			}
			bw.Flush()
		case "/getRules":
			w.Write([]byte("[]"))
		case "/version":
			w.Write([]byte("1.8.9"))
		default:
			http.Error(w, "Unknown command", http.StatusBadRequest)
		}
	})}
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		addrs = append(addrs, ln.Addr().String())
	}
	t.Cleanup(func() { srv.Close() })
	return addrs
}

// javaTargets is the --targets of Java command APIs at addrs, one app.
func javaTargets(addrs []string) string {
	specs := make([]string, len(addrs))
	for i, a := range addrs {
		specs[i] = "sentinel://" + a + "?app=catalogue"
	}
	return strings.Join(specs, ",")
}

// gzipFile writes block n times, gzipped, to dir/name.
func gzipFile(t *testing.T, dir, name string, block []byte, n int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	for range n {
		zw.Write(block)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// stallReaders waits for serve to say where it listens, connects readers
// that never read to its stream, and ends serve after run.
func stallReaders(t *testing.T, cmd *exec.Cmd, w *syncBuffer, run time.Duration) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var addr string
	for addr == "" && time.Now().Before(deadline) {
		s := w.String()
		if i := strings.Index(s, "http://"); i >= 0 {
			addr, _, _ = strings.Cut(s[i+len("http://"):], " ")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if addr == "" {
		cmd.Process.Kill()
		t.Fatalf("serve did not say where it listens: %s", w.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	for range 15 { // every slot but one: they never read, nor answer pings
		conn, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+addr+source.DefaultStreamPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	<-ctx.Done()
	cmd.Process.Signal(os.Interrupt)
}

// tail is the end of s, for a failure message.
func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}
