package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestMain runs the agents' processes of the tests' runs: Run runs this
// test binary again (os.Executable) as its children, with ChildEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(ChildEnv) != "" {
		var afterTraffic func(*childFleet)
		if os.Getenv(lateCallEnv) != "" {
			afterTraffic = addLateCall
		}
		if len(os.Args) < 2 || os.Args[1] != AgentsCommand {
			fmt.Fprintf(os.Stderr, "an agents' process run as %q, not %s\n", os.Args[1:], AgentsCommand)
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := runAgents(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr, afterTraffic)
		stop()
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// matchLines fails t for each pattern (a regular expression) that out
// does not match.
func matchLines(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, want := range patterns {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no %s in\n%s", want, out)
		}
	}
}

// runBench runs cfg, returning what it wrote to stdout and stderr.
func runBench(t *testing.T, cfg Config) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb strings.Builder
	err = Run(context.Background(), cfg, &out, &errb)
	return out.String(), errb.String(), err
}

// A fleet of 4 agents in 2 processes. Its one latency breaker opens, then
// probes after its 1 s retry timeout and opens again: measuring 3 s holds
// at least one of its transitions however the window falls (1 s could
// hold none).
func TestBenchSmallFleet(t *testing.T) {
	allocs := filepath.Join(t.TempDir(), "allocs.prof")
	cfg := DefaultConfig()
	cfg.Agents, cfg.Resources, cfg.Rate, cfg.Duration, cfg.PerProcess, cfg.MemProfile = 4, 3, 50, 3*time.Second, 2, allocs
	cfg.After = time.Second
	out, errOut, err := runBench(t, cfg)
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, errOut, out)
	}
	for _, f := range []string{allocs + ".base", allocs} { // the window's start and end
		b, err := os.ReadFile(f)
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("--memprofile: %s is not a pprof profile (%d bytes, %v)", f, len(b), err)
		}
	}
	matchLines(t, out,
		`(?m)^sentinel-top bench: 4 agents x 3 resources, 50 calls/s per resource \(600 calls/s\), measuring 3s, 1s after the fleet settled$`,
		`(?m)^connected:  4 targets in [0-9.]+ s, served by 2 agents' processes`,
		`(?m)^ingest:     [1-9][0-9,]* items/s, [0-9,]+ messages/s, `,
		`(?m)^accounted:  [0-9,]+ calls made, [0-9,]+ counted by the collector \(exact\)$`,
		`(?m)^ {12}[0-9]\.[0-9] items a buckets message, of 3 due$`,
		// Measured in the steady state: every series there as it begins.
		`(?m)^ {12}the collector [0-9,]+ items behind the agents as the window began \(with 12 of the 12 series\), [0-9,]+ as it ended$`,
		`(?m)^memory:     collector heap in use [0-9]+ MB \(peak [0-9]+ MB\), [0-9]+ MB live after a collection, heap reserved [0-9]+ MB; RSS [1-9][0-9]* MB \(peak [1-9][0-9]* MB\)$`,
		`(?m)^ {12}traffic kept to replay plans [0-9]+ MB at the window's start, [0-9]+ MB at its end, of its bound 256 MB: filling, and the heap with it \(--after: a window once it is full\)$`,
		`(?m)^ {12}agents' processes: RSS [1-9][0-9]* MB$`,
		`(?m)^health:     0 reconnects, 0 messages dropped by agents, 0 rejected, 0 over limits$`,
		`(?m)^latency:    breaker transition at an agent to the first snapshot showing it: p50 [0-9]+ ms, p99 [0-9]+ ms \([1-9][0-9]* transitions; [0-9]+ superseded before a snapshot\)$`,
		`(?m)^            [1-9][0-9]* snapshots published, [0-9.]+ a second$`,
	)
	if hugePageMode() != "" {
		matchLines(t, out, `(?m)^ {12}huge pages: the kernel's mode is [a-z]+(; [0-9]+ MB of this process in them)?$`)
	}
	if runtime.GOOS == "linux" {
		matchLines(t, out, `(?m)^ {12}the sockets' reads: (a pass's first reads in one system call \(io_uring\)|one recvfrom a connection \(.+\))$`)
	}
	// What it is doing, told on stderr as it goes, in order.
	var at []int
	for _, phase := range []string{"starting 4 agents in 2 processes", "agents ready; the collector dials them",
		"every target up in [0-9.]+ s; ", "settled; measuring in 1s", "measuring for 3s", "stopping the calls; counting them at both ends",
		"timing encoding/json and the collector's decoder on an agent's messages, for reference"} {
		loc := regexp.MustCompile(`(?m)^bench: +[0-9]+\.[0-9] s  ` + phase).FindStringIndex(errOut)
		if loc == nil {
			t.Errorf("no %q on stderr:\n%s", phase, errOut)
			continue
		}
		at = append(at, loc[0])
	}
	if !slices.IsSorted(at) {
		t.Errorf("stderr out of order:\n%s", errOut)
	}
	// Every resource is called in every bucket: 3 items a buckets message,
	// counted, not assumed.
	m := regexp.MustCompile(`(?m)^ {12}([0-9,]+) items in ([0-9,]+) buckets messages written by the agents \([0-9,]+ messages in all\); ([0-9,]+) items in ([0-9,]+) messages read by the collector$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no items written and read in\n%s", out)
	}
	items, msgs := atoi(t, m[1]), atoi(t, m[2])
	if msgs == 0 || items != 3*msgs {
		t.Errorf("%d items in %d buckets messages, want 3 a message:\n%s", items, msgs, out)
	}
	// The collector's items (what µs per item divides by) are counted
	// over a window that holds the agents': as many, but for what is on
	// its way at either end (4 agents' buckets, twice a second).
	if read := atoi(t, m[3]); read < items-3*8 || read > items+3*8 {
		t.Errorf("the collector read %d items where the agents wrote %d:\n%s", read, items, out)
	}
	if runtime.GOOS == "linux" && !regexp.MustCompile(`(?m)^cpu:        collector [0-9.]+ cores \(this process\), [0-9.]+ µs per item; agents [0-9.]+ cores \(2 processes\)\n {12}of the collector's, [0-9]+ % system time: `).MatchString(out) {
		t.Errorf("no CPU split on Linux:\n%s", out)
	}
	// The same run's reference, and the collector's µs per item read
	// against it: the figures the lines print agree.
	ref := regexp.MustCompile(`(?m)^reference:  encoding/json decodes the agents' buckets messages at ([0-9.]+) µs an item on this machine, the collector's decoder at ([0-9.]+) µs \(the fastest of 3 rounds over 40 messages, the agents stopped; json.Unmarshal into a reused struct, nothing checked\)$`).FindStringSubmatch(out)
	if ref == nil || atof(t, ref[1]) <= 0 || atof(t, ref[2]) <= 0 {
		t.Fatalf("no reference in\n%s", out)
	}
	if runtime.GOOS != "linux" {
		return
	}
	cpu := regexp.MustCompile(`(?m)^cpu: .*, ([0-9.]+) µs per item;`).FindStringSubmatch(out)
	times := regexp.MustCompile(`(?m)^ {12}the collector's ([0-9.]+) µs an item end to end are ([0-9.]+) times encoding/json's decoding alone$`).FindStringSubmatch(out)
	if cpu == nil || times == nil || times[1] != cpu[1] {
		t.Fatalf("the reference line does not read the cpu line's µs per item:\n%s", out)
	}
	if want, got := atof(t, times[1])/atof(t, ref[1]), atof(t, times[2]); math.Abs(got-want) > 0.01*want+0.01 {
		t.Errorf("%s / %s printed as %s times, want %.2f", times[1], ref[1], times[2], want)
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A call made but never counted (here: counted as made by the bench
// without reaching the statistic) is reported: bench must say which series
// came up short, and fail. A call added 3 s after its bucket was shipped is
// in the same run and must not be reported: the agent sends it with its
// next bucket (wsstream's TestLateAdditionsAreShippedOnce).
//
// Both are made in the agents' process (TestMain sets addLateCall there
// when it sees lateCallEnv).
func TestBenchMissingCallsFail(t *testing.T) {
	t.Setenv(lateCallEnv, "1")
	cfg := DefaultConfig()
	cfg.Agents, cfg.Resources, cfg.Rate, cfg.Duration = 2, 3, 50, time.Second
	// Prometheus's sum of the agents' metrics misses the call too, where it
	// is installed (TestBenchBesidePrometheus).
	cfg.Prometheus, _ = exec.LookPath("prometheus")
	out, _, err := runBench(t, cfg)
	if want := `(?m)^ {12}the passes it stored sum [0-9,]+ calls of the [0-9,]+ made \(MISSING 1\)$`; cfg.Prometheus != "" && !regexp.MustCompile(want).MatchString(out) {
		t.Errorf("no %s in\n%s", want, out)
	}
	if err == nil {
		t.Error("no error")
	}
	matchLines(t, out,
		`(?m)^accounted:  [0-9,]+ calls made, [0-9,]+ counted by the collector \(MISSING 1\)$`,
		`(?m)^ {12}1 instance x resource series of 6 differ, by up to 1 call:$`,
		`(?m)^ {12}bench-0001 GET:http://svc-2/api/v1/resource/2: [0-9,]+ made, [0-9,]+ counted$`,
		`(?m)^ {12}of them, 0 \(0 calls\) on targets that reconnected during the run, 1 \(1 calls\) on targets that never did$`,
	)
	if err == nil || !strings.Contains(err.Error(), "the collector counted") {
		t.Errorf("error: %v", err)
	}
}

// An agents' process ends when its standard input does: the bench is
// done with it, or gone.
func TestBenchAgentsEndWithStdin(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, stdin, sc, stderr, ready := runAgentsProcess(ctx, t, exe, "--count", "3", "--fleet", "3", "--resources", "2")
	if len(ready.Ports) != 3 {
		t.Fatalf("ready with %d ports, want 3", len(ready.Ports))
	}
	// The agents serve: a stream answers on each port.
	for _, p := range ready.Ports {
		conn, _, err := websocket.DefaultDialer.DialContext(ctx, fmt.Sprintf("ws://127.0.0.1:%d%s", p, agent.StreamPath), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, msg, err := conn.ReadMessage(); err != nil || !strings.Contains(string(msg), `"kind":"hello"`) {
			t.Errorf("port %d: %q %v", p, msg, err)
		}
		conn.Close()
	}
	stdin.Close()
	for sc.Scan() { // transitions, until it goes
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v; stderr %q", err, stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatal("killed at the timeout: it did not end with its stdin")
	}
}

// runAgentsProcess runs an agents' process with args and reads its ready
// line.
func runAgentsProcess(ctx context.Context, t *testing.T, exe string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner, *strings.Builder, event) {
	t.Helper()
	cmd := exec.CommandContext(ctx, exe, append([]string{AgentsCommand}, args...)...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("no ready line: %v; stderr %q", sc.Err(), stderr.String())
	}
	var ready event
	if err := json.Unmarshal(sc.Bytes(), &ready); err != nil || ready.V != protocolVersion || ready.Kind != "ready" {
		t.Fatalf("first line %s (%v)", sc.Bytes(), err)
	}
	return cmd, stdin, sc, stderr, ready
}

// The agents' processes make no call before "start" (at 10,000 targets on
// a small machine, connecting takes longer than the minute of buckets an
// agent keeps for a reader coming later), and do once it comes.
func TestBenchAgentsCallOnlyOnceStarted(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, begin := range []bool{false, true} {
		cmd, stdin, sc, stderr, _ := runAgentsProcess(ctx, t, exe, "--count", "2", "--fleet", "2", "--resources", "2", "--rate", "100")
		next := func(kind string) event {
			t.Helper()
			for sc.Scan() {
				var e event
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					t.Fatal(err)
				}
				if e.Kind == kind {
					return e
				}
			}
			t.Fatalf("no %s line: %v; stderr %q", kind, sc.Err(), stderr.String())
			return event{}
		}
		time.Sleep(300 * time.Millisecond)
		if begin {
			fmt.Fprintln(stdin, "start")
			next("started")
			time.Sleep(300 * time.Millisecond)
		}
		fmt.Fprintln(stdin, "stop")
		var made int64
		for range 2 {
			for _, n := range next("made").Calls {
				made += n
			}
		}
		if begin != (made > 0) {
			t.Errorf("started %v: %d calls made", begin, made)
		}
		stdin.Close()
		for sc.Scan() {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v; stderr %q", err, stderr.String())
		}
	}
}

// lateCallEnv makes the agents' process run addLateCall.
const lateCallEnv = "SENTINEL_TOP_BENCH_TEST_LATE_CALL"

// addLateCall adds a pass to agent 1's first resource in its last bucket
// with traffic, 2.5 s after that bucket closed (and was shipped), and counts
// it as made; and counts one call to its third resource as made without
// making it.
func addLateCall(f *childFleet) {
	for _, r := range f.agents[1].Guard().Resources() {
		if r.Name() != f.resources[0] {
			continue
		}
		now := time.Now().UnixMilli()
		for start := now - now%core.ResourceBucketMs; start > now-5000; start -= core.ResourceBucketMs {
			b, ok := r.Stat().Lookup(start)
			if !ok || b.Snapshot().Pass == 0 {
				continue
			}
			time.Sleep(time.Until(time.UnixMilli(start + core.ResourceBucketMs + 2500)))
			b.AddPass(1)
			r.Stat().Wrote(start) // as every write of a Guard is told
			f.made[1][0]++
			break
		}
	}
	f.made[1][2]++
}

// wsFrame is one server frame (unmasked).
func wsFrame(opcode byte, fin bool, payload []byte) []byte {
	b0 := opcode
	if fin {
		b0 |= 0x80
	}
	var h []byte
	switch n := len(payload); {
	case n < 126:
		h = []byte{b0, byte(n)}
	case n < 1<<16:
		h = []byte{b0, 126, byte(n >> 8), byte(n)}
	default:
		h = []byte{b0, 127, 0, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	return append(h, payload...)
}

func bucketsMessage(items int, hist bool) []byte {
	b := &wire.Buckets{Header: wire.Header{Ts: 1764460800512, Instance: "i-1"}, BucketMs: 500}
	for k := range items {
		it := wire.BucketItem{Resource: fmt.Sprintf(`GET:http://svc/{"resource":%d}`, k), Start: 1764460800000, Metrics: core.Metrics{Pass: 3, Complete: 3}}
		if hist {
			it.Hist[0], it.HasHist = 1, true
		}
		b.Items = append(b.Items, it)
	}
	return wire.AppendBuckets(nil, b)
}

// The scanner counts the same whatever the pieces the stream is written in.
func TestFrameScannerPieces(t *testing.T) {
	hello, err := wire.Marshal(&wire.Hello{Header: wire.Header{Ts: 1, Instance: "i-1"}, App: "a", StartedAt: 1, BucketMs: 500})
	if err != nil {
		t.Fatal(err)
	}
	big := bucketsMessage(400, true) // over 64 KiB: an 8-byte length
	small := bucketsMessage(20, false)
	var stream []byte
	stream = append(stream, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"...)
	stream = append(stream, wsFrame(websocket.TextMessage, true, hello)...)
	stream = append(stream, wsFrame(websocket.TextMessage, true, small)...)
	stream = append(stream, wsFrame(websocket.PingMessage, true, nil)...)
	stream = append(stream, wsFrame(websocket.TextMessage, true, big)...)
	// A fragmented message with a control frame between its fragments.
	stream = append(stream, wsFrame(websocket.TextMessage, false, small[:100])...)
	stream = append(stream, wsFrame(websocket.PongMessage, true, []byte(`{"resource":`))...)
	stream = append(stream, wsFrame(0, true, small[100:])...)
	stream = append(stream, wsFrame(websocket.TextMessage, true, []byte(`{"v":1,"kind":"buckets"`))...) // truncated: no items
	if len(small) < 126 || len(small) >= 1<<16 || len(big) < 1<<16 {
		t.Fatalf("sizes %d, %d do not cover the length encodings", len(small), len(big))
	}
	for _, size := range []int{1, 2, 3, 5, 7, 11, 12, 13, 64, 1000, 4096, len(stream)} {
		var c wireCount
		s := frameScanner{count: &c}
		for p := stream; len(p) > 0; {
			n := min(size, len(p))
			s.feed(p[:n])
			p = p[n:]
		}
		if m, b, i := c.load(); m != 5 || b != 4 || i != 20+400+20 {
			t.Errorf("pieces of %d: %d messages, %d buckets, %d items; want 5, 4, 440", size, m, b, i)
		}
	}
}

// Through a real websocket connection, as the agents write: the scanner
// sees what the reader receives.
func TestCountingListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var c wireCount
	msgs := [][]byte{bucketsMessage(20, true), bucketsMessage(1000, true), bucketsMessage(0, false)}
	// A plain response (a scrape of the agent's metrics page) whose body
	// holds what a buckets frame would: not counted.
	plain := bucketsMessage(5, true)
	plain = append([]byte{0x81, 126, byte(len(plain) >> 8), byte(len(plain))}, plain...)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			w.Write(plain)
			return
		}
		conn, err := (&websocket.Upgrader{WriteBufferSize: 32 << 10}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, m := range msgs {
			if conn.WriteMessage(websocket.TextMessage, m) != nil {
				return
			}
		}
		_ = conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second))
		_, _, _ = conn.ReadMessage() // until the client goes
	}))
	srv.Listener = countingListener{ln, &c}
	srv.Start()
	defer srv.Close()
	for range 2 { // on one connection, kept alive
		resp, err := http.Get(srv.URL + "/plain")
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); !bytes.Equal(b, plain) {
			t.Fatalf("plain body %q", b)
		}
		resp.Body.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for range msgs {
		if _, _, err := conn.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	if m, b, i := c.load(); m != 3 || b != 3 || i != 1020 {
		t.Errorf("%d messages, %d buckets, %d items; want 3, 3, 1020", m, b, i)
	}
}

func TestBenchHelpers(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	cpu, sys, faults, ok := procCPU()
	if !ok || cpu < 0 || sys < 0 || sys > cpu || faults <= 0 {
		t.Errorf("process CPU %v, system %v, %d page faults, %v", cpu, sys, faults, ok)
	}
	if rss := procStatusBytes("VmRSS:"); rss < 1<<20 {
		t.Errorf("RSS %d bytes", rss)
	}
	if openFilesLimit() <= 0 {
		t.Error("no open files limit read")
	}
}

// Targets that did not come up are told by their last errors, the most
// frequent first; errors that differ only in a port count as one.
func TestWhyDown(t *testing.T) {
	down := func(why string) *collector.TargetStatus {
		if why == "" {
			return &collector.TargetStatus{State: collector.TargetDown}
		}
		return &collector.TargetStatus{State: collector.TargetDown, Problem: feed.Problem{Kind: feed.ProblemOther, Detail: why}}
	}
	s := &collector.Snapshot{Targets: []*collector.TargetStatus{
		{State: collector.TargetUp},
		down("handshake: i/o timeout"),
		down("refused: nothing listens on 127.0.0.1:40001 (connection refused)"),
		down("refused: nothing listens on 127.0.0.1:40002 (connection refused)"),
		down("refused: nothing listens on 127.0.0.1:40003 (connection refused)"),
		down(""),
		down("handshake: i/o timeout"),
		down("reset \x1b[2J"),
		down("closed by the peer"),
	}}
	want := "3 refused: nothing listens on 127.0.0.1:40001 (connection refused); 2 handshake: i/o timeout; " +
		"1 not connected yet; 2 more reasons"
	if got := whyDown(s); got != want {
		t.Errorf("whyDown:\n got %s\nwant %s", got, want)
	}
	if strings.Contains(whyDown(&collector.Snapshot{Targets: s.Targets[7:8]}), "\x1b") {
		t.Error("an escape sequence printed as it came")
	}
	if got := whyDown(nil); got != "no snapshot yet" {
		t.Errorf("whyDown(nil) = %q", got)
	}
}

// Reasons that differ only in their numbers are one, most frequent first,
// the first in text order as the example.
func TestGroupReasons(t *testing.T) {
	got := groupReasons([]downReason{
		{why: "closed by the peer", n: 2},
		{why: "timed out: read tcp 127.0.0.1:33794->127.0.0.1:38808: i/o timeout", n: 1},
		{why: "timed out: read tcp 127.0.0.1:34064->127.0.0.1:40438: i/o timeout", n: 2},
		{why: "timed out: read tcp 127.0.0.1:35122->127.0.0.1:4253: i/o timeout", n: 1},
	})
	want := []downReason{
		{why: "timed out: read tcp 127.0.0.1:33794->127.0.0.1:38808: i/o timeout", n: 4, alike: 2},
		{why: "closed by the peer", n: 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("groupReasons:\n got %+v\nwant %+v", got, want)
	}
}

// TestBenchSaysWhatWasNeverReceived: data the collector knows it never
// received (a target out of reach longer than its backlog) is on the
// health lines, and nothing is said when there is none.
func TestBenchSaysWhatWasNeverReceived(t *testing.T) {
	for ms, want := range map[int64]string{0: "", 125_500: "            125.5 s of targets' data never received: out of reach longer than their backlog\n"} {
		r := &result{lat: newLatency(), unreceivedMs: ms}
		var b strings.Builder
		r.print(&b)
		if got := b.String(); (want == "") == strings.Contains(got, "never received") || !strings.Contains(got, want) {
			t.Errorf("%d ms never received: output\n%s", ms, got)
		}
	}
}

// The fill line says when the agents' messages held fewer items than due,
// and only then.
func TestBenchFillTellsBunchedCalls(t *testing.T) {
	for _, c := range []struct {
		rate           float64
		items, buckets int64
		want           string
		late           bool
	}{
		{2, 3_207_502, 418_749, "7.7 items a buckets message, of 20 due (38 %): the agents ran late", true},
		{4, 1_630_780, 81_539, "20.0 items a buckets message, of 20 due", false},
		{1, 1_000_000, 100_000, "10.0 items a buckets message, of 20 due", false}, // at 1 a second, half the buckets are due none
		{2, 0, 0, "", false},
	} {
		r := result{cfg: Config{Resources: 20, Rate: c.rate}, items: c.items, bucketsWritten: c.buckets}
		got := r.fill()
		if !strings.HasPrefix(got, c.want) || strings.Contains(got, "ran late") != c.late || c.want == "" && got != "" {
			t.Errorf("rate %v, %d items in %d messages: %q, want %q...", c.rate, c.items, c.buckets, got, c.want)
		}
	}
}

// The defaults are in bounds, and a field out of them is named by the
// flag that sets it.
func TestConfigBounds(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, c := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Agents = 0 }, "--agents 0: want 1 to 10000"},
		{func(c *Config) { c.Resources = 1001 }, "--resources 1001: want 1 to 1000"},
		{func(c *Config) { c.Rate = 0 }, "--rate 0: want (0, 10000] calls a second"},
		{func(c *Config) { c.Duration = time.Millisecond }, "--duration 1ms: want at least 1s"},
		{func(c *Config) { c.After = -time.Second }, "--after -1s: want 0 to 1h"},
		{func(c *Config) { c.After = 2 * time.Hour }, "--after 2h0m0s: want 0 to 1h"},
		{func(c *Config) { c.PerProcess = 5001 }, "--per-process 5001: want 1 to 5000"},
		{func(c *Config) { c.AgentsNice = 20 }, "--agents-nice 20: want 0 to 19"},
	} {
		cfg := DefaultConfig()
		c.set(&cfg)
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%v, want %s", err, c.want)
		}
		if err := Run(context.Background(), cfg, io.Discard, io.Discard); err == nil || err.Error() != c.want {
			t.Errorf("Run: %v, want %s", err, c.want)
		}
	}
}

// TestBenchBesidePrometheus: with Config.Prometheus, a real Prometheus
// scrapes every agent's metrics page every second over the same window as
// the collector reads their streams: both are measured, per series too,
// and the calls Prometheus's last scrapes sum are checked against the
// calls made, as the collector's are (TestBenchMissingCallsFail: a call
// the agents made after their last bucket shipped is missing from both).
// It is skipped when no
// prometheus binary is installed, unless SENTINEL_TOP_REQUIRE_PROMETHEUS
// is set (CI installs it).
func TestBenchBesidePrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("SENTINEL_TOP_REQUIRE_PROMETHEUS") != "" {
			t.Fatal("prometheus is not installed (apt-get install prometheus)")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	cfg := DefaultConfig()
	cfg.Agents, cfg.Resources, cfg.Rate, cfg.Duration, cfg.PerProcess, cfg.Prometheus = 4, 3, 50, 2*time.Second, 2, bin
	out, errOut, err := runBench(t, cfg)
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, errOut, out)
	}
	matchLines(t, out,
		`(?m)^accounted:  [0-9,]+ calls made, [0-9,]+ counted by the collector \(exact\)$`,
		// 4 agents' 3 resources x 5 counters, 3 states for the latency
		// breaker of bench-0000, the scrapes' own 5 series a target; its
		// transitions, if any.
		`(?m)^prometheus: scraping 4 of 4 agents' metrics every 1s: (7[7-9]|8[0-9]) series in its head, [0-9,]+ samples a round of scrapes, the slowest scrape [0-9]+ ms$`,
		`(?m)^ {12}cpu [0-9.]+ cores; RSS [1-9][0-9]* MB \(peak [1-9][0-9]* MB\)$`,
		`(?m)^ {12}the passes it stored sum ([0-9,]+) calls of the ([0-9,]+) made \(exact\)$`,
		`(?m)^ {12}[0-9,]+ of [1-9][0-9,]* scrapes of the agents failed over the window \(a page not served within the 1 s timeout\)$`,
		`(?m)^ {12}a global view's query, sum by \(app, resource\) \(rate\(sentinel_top_resource_pass_total\{job="agents"\}\[5s\]\)\) over the window at a 1 s step: [0-9]+ ms, 12 series read, 12 returned$`,
		`(?m)^per series: 12 instance x resource series; collector [0-9.]+ µs/s of CPU and [0-9.]+ KB RSS each; prometheus [0-9.]+ µs/s and [0-9.]+ KB each \([0-9.]+ µs/s and [0-9.]+ KB per head series\)$`,
	)
	if !regexp.MustCompile(`(?m)^bench: +[0-9]+\.[0-9] s  starting prometheus to scrape the agents' metrics every 1s$`).MatchString(errOut) {
		t.Errorf("no word of prometheus on stderr:\n%s", errOut)
	}

}

// writes records each Write to a child's standard output, and when.
type writes struct {
	mu  sync.Mutex
	got []timedWrite
}

type timedWrite struct {
	at    time.Time
	lines int
}

func (w *writes) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, timedWrite{time.Now(), bytes.Count(b, []byte("\n"))})
	return len(b), nil
}

func (w *writes) taken() []timedWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// A child's transitions are written together, at most transitionsEvery
// after the first (each write wakes the bench's reader in the process it
// measures); a line of another kind is written at once, with the
// transitions held before it.
func TestChildWritesTransitionsTogether(t *testing.T) {
	w := &writes{}
	out := &childOut{lines: make(chan event, 64)}
	done := make(chan error, 1)
	go func() { done <- out.run(w) }()
	start := time.Now()
	for i := range 5 {
		out.trySend(event{Kind: "transition", Agent: i, To: core.Open})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(w.taken()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	got := w.taken()
	if len(got) != 1 || got[0].lines != 5 {
		t.Fatalf("writes %+v, want one of the 5 transitions", got)
	}
	if waited := got[0].at.Sub(start); waited < transitionsEvery/2 {
		t.Errorf("the transitions were written %v after the first, not held", waited)
	}
	out.trySend(event{Kind: "transition", Agent: 9, To: core.Closed})
	sent := time.Now()
	out.send(event{Kind: "mark"})
	for len(w.taken()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	got = w.taken()
	if len(got) != 2 || got[1].lines != 2 {
		t.Fatalf("writes %+v, want a second one of the transition and the mark", got)
	}
	if waited := got[1].at.Sub(sent); waited >= transitionsEvery/2 {
		t.Errorf("the mark was written %v after it was sent", waited)
	}
	close(out.lines)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// News of a transition can come after the snapshots showing it were read
// (the agents' lines are written together): it is timed by the first
// snapshot after it that showed the new state, even when the snapshot
// before showed that state too (OPEN, an unseen HALF_OPEN, OPEN again).
func TestLatencyTimesLateNewsByTheFirstSnapshotAfter(t *testing.T) {
	l := newLatency()
	l.measure(true)
	t0 := time.Unix(1_780_000_000, 0)
	ms := func(d int64) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }
	show := func(at int64, st core.State) {
		s := &collector.Snapshot{At: t0.UnixMilli() + at, Breakers: []collector.BreakerState{{Instance: "gw-1", Resource: "r", State: st}}}
		l.seen(s, "r", ms(at+5))
	}
	news := func(at int64, to core.State) { l.transition("gw-1", to, t0.UnixMilli()+at, ms(at)) }
	show(0, core.Closed)
	show(1000, core.Open)     // opened at 900
	show(2000, core.Open)     // half-open at 1900, open again at 1950
	news(900, core.Open)      // 105 ms
	news(1900, core.HalfOpen) // never shown: superseded by the next
	news(1950, core.Open)     // 55 ms, by the snapshot of 2000
	show(2250, core.Open)
	p50, p99, n, superseded := l.quantiles()
	if n != 2 || p50 != 105*time.Millisecond || p99 != 105*time.Millisecond || superseded != 0 {
		t.Fatalf("measured %d (p50 %v, p99 %v, %d superseded), want 55 ms and 105 ms", n, p50, p99, superseded)
	}
	if got := l.measured; got[1] != 55*time.Millisecond {
		t.Fatalf("measured %v, want the second 55 ms", got)
	}
}

// The watcher counts each time a target went down once, reading again
// only the statuses a snapshot did not share with the one before, and
// keeps the last shownKept snapshots' states of a breaker, the earliest
// first.
func TestLatencyWatcherReadsWhatChanged(t *testing.T) {
	l := newLatency()
	up := &collector.TargetStatus{Name: "a", State: collector.TargetUp}
	down := &collector.TargetStatus{Name: "a", State: collector.TargetDown, Since: 10, Problem: feed.Problem{Kind: feed.ProblemRefused}}
	again := &collector.TargetStatus{Name: "a", State: collector.TargetDown, Since: 20, Problem: feed.Problem{Kind: feed.ProblemRefused}}
	for _, st := range []*collector.TargetStatus{up, down, down, up, again, again} {
		l.seen(&collector.Snapshot{Targets: []*collector.TargetStatus{st}}, "r", time.Now())
	}
	if n := l.downWhy[collector.ProblemText(down.Problem)]; n != 2 {
		t.Fatalf("down %d times, want 2", n)
	}
	// A status shared with the snapshot before is not read: one changed
	// in place (never done by the collector) goes uncounted.
	again.Since = 30
	l.seen(&collector.Snapshot{Targets: []*collector.TargetStatus{again}}, "r", time.Now())
	if n := l.downWhy[collector.ProblemText(down.Problem)]; n != 2 {
		t.Fatalf("a shared status read again: down %d times", n)
	}
	var r *shownRing
	for i := range shownKept + 8 {
		r = r.add(shownState{state: core.State(i % 2), atMs: int64(i)})
	}
	if sh, ok := r.first(20, core.State(1)); !ok || sh.atMs != 21 {
		t.Fatalf("first after 20 showing 1: %+v %v, want the snapshot of 21", sh, ok)
	}
	if sh, ok := r.first(0, core.State(0)); !ok || sh.atMs != 8 {
		t.Fatalf("first after 0 showing 0: %+v %v, want 8, the earliest kept", sh, ok)
	}
	if _, ok := r.first(shownKept+8, core.State(0)); ok {
		t.Fatal("a snapshot found after the last")
	}
}

// TestTrafficLine: the traffic log's line says what it held at either
// end of the window and whether it was still filling (within 1/64 of its
// bound is full); none is printed when no traffic is kept.
func TestTrafficLine(t *testing.T) {
	const bound = 256 << 20
	for _, c := range []struct {
		w    trafficWindow
		want string
	}{
		{trafficWindow{}, ""},
		{trafficWindow{{20 << 20, bound}, {41 << 20, bound}},
			"traffic kept to replay plans 20 MB at the window's start, 41 MB at its end, of its bound 256 MB: filling, and the heap with it (--after: a window once it is full)"},
		{trafficWindow{{bound - 4096, bound}, {bound - 4096, bound}},
			"traffic kept to replay plans 256 MB at the window's start, 256 MB at its end, of its bound 256 MB"},
		{trafficWindow{{0, bound}, {bound - bound/32, bound}},
			"traffic kept to replay plans 0 MB at the window's start, 248 MB at its end, of its bound 256 MB: filling, and the heap with it (--after: a window once it is full)"},
	} {
		if got := c.w.String(); got != c.want {
			t.Errorf("%v: %q, want %q", c.w, got, c.want)
		}
	}
}

// TestHugePagesLine: the memory section's huge pages line says the
// kernel's mode and how much the process holds; nothing where the kernel
// has no transparent huge pages.
func TestHugePagesLine(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never\n": "madvise",
		"[always] madvise never\n": "always",
		"always madvise [never]\n": "never",
		"":                         "",
		"] broken [":               "",
	} {
		if got := chosenMode(in); got != want {
			t.Errorf("chosenMode(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		h    hugePages
		want string
	}{
		{hugePages{}, ""},
		{hugePages{mode: "madvise", bytes: 200 << 20, known: true}, "the kernel's mode is madvise; 200 MB of this process in them"},
		{hugePages{mode: "always", bytes: 3 << 20, known: true}, "the kernel's mode is always; 3 MB of this process in them"},
		{hugePages{mode: "never"}, "the kernel's mode is never"},
	} {
		if got := c.h.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.h, got, c.want)
		}
	}
}
