//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/bench"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
	"github.com/sentinel-top/sentinel-top/internal/serveapi"
)

// serveChild starts this test binary as a `serve` process (TestMain runs
// it as the program), through sh so that script runs first (a ulimit, say),
// and returns its address and process; it is interrupted when the test
// ends, and done gives its exit code.
func serveChild(t *testing.T, script string, stderr *syncBuffer, args ...string) (addr string, proc *os.Process, done <-chan int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Port 0: the child picks its port and says it (no port freed here
	// for it that another listener could take first).
	argv := append([]string{"-c", script + `; exec "$0" "$@"`, exe, "serve", "--listen", "127.0.0.1:0"}, args...)
	cmd := exec.Command("sh", argv...)
	cmd.Env = append(os.Environ(), bench.ChildEnv+"=1")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exit, ended := make(chan int, 1), make(chan struct{})
	go func() {
		cmd.Wait()
		exit <- cmd.ProcessState.ExitCode()
		close(ended)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	return saidAddr(t, stderr, ended), cmd.Process, exit
}

// httpGet gets url, giving the status and body (0 and the error when it
// fails).
func httpGet(client *http.Client, url string) (int, string) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// TestServeSaysAtOnceThatTheRecordingStopped: a `serve --record` process
// whose file cannot grow past 256 KiB (RLIMIT_FSIZE, as a full disk stops
// a file: its writes fail, EFBIG here, ENOSPC there) says so as it
// happens: on stderr, in /metrics (sentinel_top_record_errors_total 1) and
// by /healthz, 200 until then and 503 from then on; it goes on serving,
// and exits 3 when stopped. Before, the file stopped growing while /healthz
// said ok and nothing was said until the process was stopped.
func TestServeSaysAtOnceThatTheRecordingStopped(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec.ndjson")
	var stderr syncBuffer
	addr, proc, done := serveChild(t, "ulimit -f 512", &stderr, "--demo", "recovery-herd", "--speed", "20", "--record", rec) // 512-byte blocks
	client := &http.Client{Timeout: 5 * time.Second}
	began := time.Now()
	var healthy, failed bool
	var stoppedAt time.Time
	for deadline := time.Now().Add(30 * time.Second); !failed; {
		if time.Now().After(deadline) {
			t.Fatalf("the recording never stopped (healthy %v): %s", healthy, stderr.String())
		}
		switch code, body := httpGet(client, "http://"+addr+"/healthz"); code {
		case http.StatusOK:
			healthy = true
		case http.StatusServiceUnavailable:
			failed, stoppedAt = true, time.Now()
			t.Logf("stopped after %s", time.Since(began).Round(time.Millisecond))
			if !strings.Contains(body, "recording stopped") {
				t.Errorf("/healthz: %q", body)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !healthy {
		t.Errorf("/healthz never answered 200 before the recording stopped")
	}
	// At once: by the time /healthz tells, stderr has said it.
	if want := "--record " + rec + ": write " + rec + ": file too large: the recording stopped"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
	code, page := httpGet(client, "http://"+addr+"/metrics")
	if code != http.StatusOK || !strings.Contains(page, "\nsentinel_top_record_errors_total 1\n") {
		t.Errorf("/metrics %d lacks sentinel_top_record_errors_total 1:\n%.3000s", code, page)
	}
	if !strings.Contains(page, "\nsentinel_top_messages_total ") {
		t.Errorf("/metrics no longer serves the collector's metrics:\n%.3000s", page)
	}
	st, err := os.Stat(rec)
	if err != nil || st.Size() > 256<<10 {
		t.Fatalf("the recording: %v, %d bytes (the limit is 256 KiB)", err, st.Size())
	}
	time.Sleep(time.Until(stoppedAt.Add(time.Second)))
	if code, _ := httpGet(client, "http://"+addr+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz %d a second after the recording stopped, want 503", code)
	}
	interrupted := time.Now()
	if err := proc.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		t.Logf("ended %s after the interrupt", time.Since(interrupted).Round(time.Millisecond))
		if code != exitRuntime {
			t.Errorf("serve exit %d after a failed recording, want %d: %s", code, exitRuntime, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not end when interrupted")
	}
}

// A fleet page: one instance of resources whose names are about 300 bytes,
// each with a breaker, so that /metrics has 11 series a resource (5
// counters, 3 gauges, 3 breaker states) of about 370 bytes each: 950 of
// them make the page of 10,500 series and 3.9 MB.
const (
	pageResources = 950
	pageNameBytes = 300
)

// steadyPeer is an agent of one instance with n resources that sends a
// bucket of each every 500 ms: its series stay, and so does the page.
func steadyPeer(n int) func(conn *websocket.Conn, now func() int64) error {
	return func(conn *websocket.Conn, now func() int64) error {
		var resources []string
		for i := range n {
			resources = append(resources, fmt.Sprintf("GET:/api/v1/%0*d", pageNameBytes-12, i))
		}
		var rules []core.BreakerRule
		for _, r := range resources {
			rules = append(rules, core.BreakerRule{Resource: r, Strategy: core.ErrorCount, Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
		}
		if err := frame(conn, &wire.Hello{Header: wire.Header{Ts: now(), Instance: "page-1"}, App: "page", BucketMs: 500, StartedAt: now() - 1000}); err != nil {
			return err
		}
		if err := frame(conn, &wire.Rules{Header: wire.Header{Ts: now(), Instance: "page-1"}, Version: "v1", Breakers: rules}); err != nil {
			return err
		}
		for {
			for part := range slices.Chunk(resources, 500) { // frames well under 1 MiB
				if err := frame(conn, buckets("page-1", now(), part)); err != nil {
					return err
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// nonReader sends a GET of path on a connection of its own, with as small
// a receive window as a slow client's, and never reads the answer.
func nonReader(t *testing.T, addr, path string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetReadBuffer(4 << 10)
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		t.Fatal(err)
	}
}

// waitPage gets /metrics until it holds want, and returns it.
func waitPage(t *testing.T, client *http.Client, addr, want string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, page := httpGet(client, "http://"+addr+"/metrics")
		if code == http.StatusOK && strings.Contains(page, want) {
			return page
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics (%d) never held %q:\n%.2000s", code, want, page)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMetricsScrapesAreBounded: /metrics is rendered by at most 8 scrapes
// at once, each as it is written: clients that never read take the 8 and
// are cut off within seconds (sentinel_top_serve_responses_cut_total), a
// scrape meanwhile gets 503 at once
// (sentinel_top_serve_requests_refused_total), and scrapes succeed again
// once they are gone. Before, each scrape gathered the whole page in memory
// first and nothing ever cut a client off. The page is twice the issue's
// (21,000 series, 7.8 MB), so that what a stalled client's socket buffers
// take (up to 4 MiB on Linux) cannot hold a whole page.
//
// Its serve process is this test binary: under the race detector, 7.8 MB
// pages take it 40 s, so it runs without (.ci/run runs it so).
func TestMetricsScrapesAreBounded(t *testing.T) {
	if racetest.Enabled {
		t.Skip("without -race: .ci/run runs it so")
	}
	target := streamPeer(t, steadyPeer(2*pageResources))
	var stderr syncBuffer
	addr, _, _ := serveChild(t, "true", &stderr, "--targets", target)
	client := &http.Client{Timeout: 20 * time.Second}
	page := waitPage(t, client, addr, fmt.Sprintf(`sentinel_top_breaker_state{app="page",instance="page-1",provenance="exact",resource="GET:/api/v1/%0*d"`, pageNameBytes-12, 2*pageResources-1))
	series := strings.Count(page, "\nsentinel_top_resource_") + strings.Count(page, "\nsentinel_top_breaker_state")
	t.Logf("/metrics: %d series of resources, %d bytes", series, len(page))
	if series < 20_000 || len(page) < 7_000_000 {
		t.Fatalf("a page of %d series and %d bytes, want 21,000 and 7.8 MB", series, len(page))
	}

	began := time.Now()
	for range serveapi.MaxMetricsRenders {
		nonReader(t, addr, "/metrics")
	}
	// While the 8 are stalled (5 s from their first write that waits), a
	// scrape is refused at once. It must not take a slot before they have
	// theirs: their requests get 2 s to arrive.
	time.Sleep(2 * time.Second)
	var refused int
	for time.Since(began) < 15*time.Second && refused == 0 {
		code, body := httpGet(client, "http://"+addr+"/metrics")
		if code == http.StatusServiceUnavailable {
			refused++
			if !strings.Contains(body, "retry") {
				t.Errorf("503 %q", body)
			}
		}
	}
	if refused == 0 {
		_, p := httpGet(client, "http://"+addr+"/metrics")
		t.Errorf("no scrape refused while 8 clients that never read were being answered:\n%s", grepLines(p, "sentinel_top_serve_"))
	}
	page = waitPage(t, client, addr, fmt.Sprintf("sentinel_top_serve_responses_cut_total{endpoint=\"/metrics\"} %d\n", serveapi.MaxMetricsRenders))
	t.Logf("%d non-reading scrapers cut off, and a scrape served, within %s", serveapi.MaxMetricsRenders, time.Since(began).Round(100*time.Millisecond))
	if n := metricValue(page, `sentinel_top_serve_requests_refused_total{endpoint="/metrics"}`); n < 1 {
		t.Errorf("the refused scrape is not counted:\n%s", grepLines(page, "sentinel_top_serve_"))
	}
}

// metricValue is the value of the sample named series (with its labels)
// in a page, -1 when there is none.
func metricValue(page, series string) float64 {
	for _, l := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}

// grepLines are the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestServeCutsTrickledRequests: requests to /healthz and /metrics whose
// body (announced at 100,000 bytes) or headers come a byte at a time are
// cut off when they have not arrived whole within 10 s, and connections
// over --max-conns are closed as they arrive and counted; /metrics serves
// again once they are gone. Before, none of 5,000 such connections was
// closed in 60 s.
func TestServeCutsTrickledRequests(t *testing.T) {
	t.Parallel() // it waits 10 s on its own child
	const maxConns = 20
	var stderr syncBuffer
	addr, _, _ := serveChild(t, "true", &stderr, "--demo", "recovery-herd", "--max-conns", fmt.Sprint(maxConns))
	client := &http.Client{Timeout: 10 * time.Second}
	waitPage(t, client, addr, "sentinel_top_serve_connections ")
	client.CloseIdleConnections()

	type trickler struct {
		ended chan time.Duration
	}
	began := time.Now()
	var peers []trickler
	for i := range maxConns + 6 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		path := []string{"/healthz", "/metrics"}[i%2]
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n", path, addr)
		if i%3 == 0 {
			head = fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nX-Slow: ", path, addr)
		}
		p := trickler{ended: make(chan time.Duration, 1)}
		go func() {
			io.Copy(io.Discard, conn)
			p.ended <- time.Since(began)
		}()
		go func() {
			if _, err := io.WriteString(conn, head); err != nil {
				return
			}
			for {
				time.Sleep(500 * time.Millisecond)
				if _, err := conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}()
		peers = append(peers, p)
	}
	var atOnce, cut int
	var held []time.Duration
	for _, p := range peers {
		select {
		case d := <-p.ended:
			held = append(held, d.Round(100*time.Millisecond))
			switch {
			case d < 2*time.Second:
				atOnce++
			case d < 14*time.Second:
				cut++
			}
		case <-time.After(time.Until(began.Add(20 * time.Second))):
		}
	}
	t.Logf("held %v", held)
	// The page read before the tricklers came on a connection the client
	// closed: the server may not have seen it end yet when they arrive,
	// and then it holds one of the places (it never holds more).
	early := atOnce - 6
	if len(held) != len(peers) || early < 0 || early > 1 || cut != maxConns-early {
		t.Fatalf("of %d trickling connections, %d ended: %d at once (want 6, over --max-conns, or 7 while the page's own was held), %d cut after about 10 s (want the %d others)",
			len(peers), len(held), atOnce, cut, len(peers)-atOnce)
	}
	page := waitPage(t, client, addr, fmt.Sprintf("sentinel_top_serve_connections_refused_total %d\n", atOnce))
	if !strings.Contains(page, "sentinel_top_serve_connections 1\n") {
		t.Errorf("connections after the tricklers:\n%s", grepLines(page, "sentinel_top_serve_conn"))
	}
}

// TestScrapersPeakRSS runs a real `serve` process, collecting the 10,500
// series of steadyPeer, under 60 scrapers of /metrics scraping as fast as
// they can (half asking for gzip) and 40 clients that ask for it and never
// read (each connecting again when cut off), on loopback, and requires its
// peak resident memory to stay under the default 512 MiB budget. It runs
// 15 s (SENTINEL_TOP_HOSTILE_FOR sets it): opt in with
// SENTINEL_TOP_HOSTILE=1. SENTINEL_TOP_SERVE_BIN runs another build of the
// command instead of this test binary (an older one, to compare).
func TestScrapersPeakRSS(t *testing.T) {
	if os.Getenv("SENTINEL_TOP_HOSTILE") != "1" {
		t.Skip("opt-in: SENTINEL_TOP_HOSTILE=1")
	}
	run := 15 * time.Second
	if d, err := time.ParseDuration(os.Getenv("SENTINEL_TOP_HOSTILE_FOR")); err == nil {
		run = d
	}
	target := streamPeer(t, steadyPeer(pageResources))
	var stderr syncBuffer
	script := "true"
	if bin := os.Getenv("SENTINEL_TOP_SERVE_BIN"); bin != "" {
		script = `exec "` + bin + `" "$@"` // instead of "$0", this binary
	}
	addr, proc, done := serveChild(t, script, &stderr, "--targets", target)
	hwm := watchHWM(proc.Pid)
	client := &http.Client{Timeout: 10 * time.Second}
	page := waitPage(t, client, addr, `sentinel_top_breaker_state{app="page"`)
	t.Logf("/metrics: %d bytes; serve's resident memory before the scrapers %d MiB", len(page), hwm()>>10)

	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var ok, busy, failed, cut atomic.Int64
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: i%2 == 0}}
			defer c.CloseIdleConnections()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
				resp, err := c.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					failed.Add(1)
				case resp.StatusCode == http.StatusOK:
					ok.Add(1)
				case resp.StatusCode == http.StatusServiceUnavailable:
					busy.Add(1)
					time.Sleep(100 * time.Millisecond) // as told: retry
				default:
					failed.Add(1)
				}
			}
		}()
	}
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				fmt.Fprintf(conn, "GET /metrics HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
				for ctx.Err() == nil { // never read: wait for serve to close it
					time.Sleep(200 * time.Millisecond)
					conn.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := conn.Write([]byte("\r\n")); err != nil {
						cut.Add(1)
						break
					}
				}
				conn.Close()
			}
		}()
	}
	wg.Wait()
	rss := hwm() >> 10
	proc.Signal(os.Interrupt)
	<-done
	t.Logf("peak RSS %d MiB over %s: %d scrapes served, %d answered 503, %d failed; non-reading clients cut off %d times",
		rss, run, ok.Load(), busy.Load(), failed.Load(), cut.Load())
	if rss >= 512 {
		t.Errorf("peak RSS %d MiB, over the 512 MiB budget\n%s", rss, tail(stderr.String()))
	}
	if ok.Load() == 0 {
		t.Errorf("no scrape was served\n%s", tail(stderr.String()))
	}
}
