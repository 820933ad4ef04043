package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/deadport"
	"github.com/sentinel-top/sentinel-top/internal/promapi"
	"github.com/sentinel-top/sentinel-top/ui"
)

// goLoadResult is what contrib/sentinelgolang's sentinel-go-load prints:
// the passes, blocks and breaker transitions of one sentinel-golang
// process, as it counted them itself.
type goLoadResult struct {
	Pid         int              `json:"pid"`
	Pass        map[string]int64 `json:"pass"`
	Block       map[string]int64 `json:"block"`
	Transitions []struct {
		Resource string `json:"resource"`
		From     string `json:"from"`
		To       string `json:"to"`
		AtMs     int64  `json:"atMs"`
	} `json:"transitions"`
}

// prometheusBin is the prometheus binary, or the test skipped without one
// (failed where SENTINEL_TOP_REQUIRE_PROMETHEUS is set: CI installs it).
func prometheusBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("SENTINEL_TOP_REQUIRE_PROMETHEUS") != "" {
			t.Fatal("prometheus is not installed (apt-get install prometheus)")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	return bin
}

// testProm is a real Prometheus run for a test.
type testProm struct {
	addr string
	done chan struct{} // closed when it exited
	log  bytes.Buffer  // its output, read once it exited
}

// failed says why Prometheus exited, "" while it runs.
func (p *testProm) failed() string {
	select {
	case <-p.done:
		return "prometheus exited: " + p.log.String()
	default:
		return ""
	}
}

// startPrometheus runs a real Prometheus with cfg (its configuration file)
// until the test ends, on a port none of avoid uses, and returns it once
// it is ready.
func startPrometheus(t *testing.T, cfg string, avoid ...string) *testProm {
	t.Helper()
	bin := prometheusBin(t)
	dir := t.TempDir()
	p := &testProm{addr: freePort(t), done: make(chan struct{})}
	for slices.Contains(avoid, p.addr) {
		p.addr = freePort(t)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+p.addr, "--log.level=warn")
	prom.Stdout, prom.Stderr = &p.log, &p.log
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { prom.Wait(); close(p.done) }()
	t.Cleanup(func() { prom.Process.Kill(); <-p.done })
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := client.Get("http://" + p.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if msg := p.failed(); msg != "" {
			t.Fatal(msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 60 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitScraping waits until Prometheus has tried n targets.
func waitScraping(t *testing.T, promURL string, n int) {
	t.Helper()
	api := promapi.Client{HTTP: &http.Client{Timeout: 2 * time.Second}, Base: promURL}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if s, err := api.Vector("count(up)"); err == nil && len(s) == 1 && s[0].Value == float64(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus has not tried its %d targets after 30 s", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// baselines asks the server, from from, what each checkout process's
// pass and block counters held at its first scrape (the series that came
// with the process, not later), summed per resource.
func baselines(t *testing.T, promURL string, from time.Time) map[string][2]int64 {
	t.Helper()
	q := "sum by (pid, resource, result) (max by (job, app, host, pid, resource, result, block_type) (sentinel_go_handled_total{job=\"checkout\"}))"
	series, err := promapi.Client{HTTP: http.DefaultClient, Base: promURL}.Range(q, from, time.Now(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	earliest := map[string]time.Time{}
	for _, r := range series {
		if len(r.Points) > 0 {
			at := r.Points[0].At
			if e, ok := earliest[r.Labels["pid"]]; !ok || at.Before(e) {
				earliest[r.Labels["pid"]] = at
			}
		}
	}
	out := map[string][2]int64{}
	for _, r := range series {
		if len(r.Points) == 0 || !r.Points[0].At.Equal(earliest[r.Labels["pid"]]) {
			continue // none, or began after its process: counted whole
		}
		n := int64(r.Points[0].Value)
		b := out[r.Labels["resource"]]
		if r.Labels["result"] == "pass" {
			b[0] += n
		} else {
			b[1] += n
		}
		out[r.Labels["resource"]] = b
	}
	return out
}

// buildGoLoad builds contrib/sentinelgolang's sentinel-go-load, the
// sentinel-golang v1.0.4 service with its exporter enabled (its own
// module: the main one does not depend on sentinel-golang's code).
func buildGoLoad(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sentinel-go-load")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sentinel-go-load")
	cmd.Dir = filepath.Join("..", "..", "contrib", "sentinelgolang")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building sentinel-go-load: %v\n%s", err, out)
	}
	return bin
}

// TestPrometheusSourceReadsSentinelGolang runs a real Prometheus scraping,
// every second, two real sentinel-golang v1.0.4 processes with their own
// exporter (contrib/sentinelgolang's sentinel-go-load: one resource's
// calls fail for a while, so its error-ratio breaker trips, probes and
// closes) and a `sentinel-top serve` of a demo fleet. While the processes
// run, the dashboard with --prometheus shows them live; once they ended,
// `report --prometheus --from` must give exactly the passes and blocks
// each counted itself (the processes outlive their traffic by a few
// scrapes), the demo fleet's apps from sentinel-top's own metrics, the
// breaker states as inferred, and the source each transition the
// processes' listeners heard, marked inferred, timed within a step and a
// scrape of when it happened. It is skipped when no prometheus binary is
// installed, unless SENTINEL_TOP_REQUIRE_PROMETHEUS is set (CI installs it).
func TestPrometheusSourceReadsSentinelGolang(t *testing.T) {
	t.Parallel() // it waits on scrapes, as TestPrometheusScrapesServe does
	if testing.Short() {
		t.Skip("builds a program and runs a Prometheus server")
	}
	load := buildGoLoad(t)
	loadAddrs := []string{freePort(t), freePort(t)}
	serveAddr := freePort(t)
	for loadAddrs[1] == loadAddrs[0] || serveAddr == loadAddrs[0] || serveAddr == loadAddrs[1] {
		loadAddrs[1], serveAddr = freePort(t), freePort(t)
	}
	java := newJavaExposition(t, []string{"GET:/api/order", "queryPrice"})
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n"+
		"  - job_name: checkout\n    static_configs:\n      - targets: [%q, %q]\n"+
		"  - job_name: collector\n    honor_labels: true\n    static_configs:\n      - targets: [%q]\n"+
		"  - job_name: java\n    honor_timestamps: true\n    static_configs:\n      - targets: [%q]\n",
		loadAddrs[0], loadAddrs[1], serveAddr, java.addr)
	promURL := "http://" + startPrometheus(t, cfg).addr
	// Prometheus hands its scrape loops their targets a few seconds after
	// it is ready: the processes start once every target has been tried
	// (an up sample, 0 while nothing listens), so that it scrapes them
	// from their first second.
	waitScraping(t, promURL, 4)
	java.start()
	javaStop := time.AfterFunc(6*time.Second, java.stop) // as the processes' traffic
	defer javaStop.Stop()
	began := time.Now()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--demo", promScenario, "--listen", serveAddr}, nil, io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-served }()

	// The two processes: 6 s of traffic, the first resource failing from
	// 1.5 s (for 2 s, then 1 s), then 3 s more of /metrics.
	results := make([]goLoadResult, len(loadAddrs))
	errs := make([]error, len(loadAddrs))
	var wg sync.WaitGroup
	for i, addr := range loadAddrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, load, "-metrics", addr, "-duration", "6s", "-fail-from", "1500ms",
				"-fail-for", fmt.Sprint(2-i, "s"), "-linger", "3s", "-log-dir", t.TempDir())
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("sentinel-go-load %s: %w: %s", addr, err, stderr.String())
				return
			}
			errs[i] = json.Unmarshal(out.Bytes(), &results[i])
		}()
	}

	t.Run("dashboard", func(t *testing.T) {
		cmd := newCommand("sentinel-top", watchUsage, io.Discard)
		if code, ok := cmd.parse([]string{"--prometheus", promURL, "--prometheus-step", "1s"}, io.Discard, io.Discard); !ok {
			t.Fatalf("flags: exit %d", code)
		}
		s, err := cmd.in.open(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		feedCtx, stop := context.WithCancel(ctx)
		fed := make(chan error, 1)
		go func() { fed <- s.feed(feedCtx) }()
		published := make(chan struct{})
		go func() { s.c.Run(feedCtx); close(published) }()
		defer func() { stop(); <-published; <-fed; s.close() }()
		tm := teatest.NewTestModel(t, ui.New(s.c, ui.Options{Profile: ui.ColorNone, Location: time.UTC, TickInterval: 50 * time.Millisecond}),
			teatest.WithInitialTermSize(160, 40))
		var seen bytes.Buffer
		buf := make([]byte, 64<<10)
		for deadline := time.Now().Add(20 * time.Second); ; {
			n, _ := tm.Output().Read(buf)
			seen.Write(buf[:n])
			screen := ansi.Strip(seen.String())
			if strings.Contains(screen, "checkout") && strings.Contains(screen, "inventory:check") &&
				strings.Contains(screen, "payment:charge") {
				break
			}
			if time.Now().After(deadline) {
				snap := s.c.Snapshot()
				rejects, _ := s.rejects.Rejects()
				t.Fatalf("not on the screen after 20 s; rows %+v, source %+v, rejects %q", snap.Rows, s.prom.Stats(), rejects)
			}
			time.Sleep(50 * time.Millisecond)
		}
		tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
		tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
		if snap := s.c.Snapshot(); snap == nil || snap.Source != "prometheus "+promURL {
			t.Errorf("the dashboard's source is not the Prometheus server: %+v", snap)
		}
	})

	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	from := began.Add(-2 * time.Second).UTC().Format(time.RFC3339)

	// The report: every pass and block the processes counted, summed over
	// them per resource, exactly.
	var out, stderr bytes.Buffer
	if code := run(ctx, []string{"report", "--prometheus", promURL, "--from", from, "--prometheus-step", "1s",
		"--format", "json"}, nil, &out, &stderr); code != exitOK {
		t.Fatalf("report exit %d: %s", code, stderr.String())
	}
	var rep struct {
		Instances     int `json:"instances"`
		ResourcesSeen []struct {
			App, Resource, States        string
			Pass, Block, Complete, Error int64
		} `json:"resourcesSeen"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	want := map[string][2]int64{}
	for _, r := range results {
		for res, n := range r.Pass {
			w := want[res]
			w[0] += n
			want[res] = w
		}
		for res, n := range r.Block {
			w := want[res]
			w[1] += n
			want[res] = w
		}
	}
	// Less what each process had counted when it was first scraped: the
	// first sample of a series that came with its process is a baseline.
	for res, n := range baselines(t, promURL, began.Add(-2*time.Second)) {
		w := want[res]
		want[res] = [2]int64{w[0] - n[0], w[1] - n[1]}
	}
	got := map[string][2]int64{}
	var otherApps []string
	javaGot := map[string][4]int64{}
	for _, r := range rep.ResourcesSeen {
		if r.App == javaApp {
			javaGot[r.Resource] = [4]int64{r.Pass, r.Block, r.Complete, r.Error}
			if r.States != "unknown" {
				t.Errorf("java %s: states %s, want unknown (the exporter tells none)", r.Resource, r.States)
			}
			continue
		}
		if r.App != "checkout" {
			if r.States != "unknown" {
				t.Errorf("%s %s from sentinel-top's own metrics: states %s; a sum over instances tells none", r.App, r.Resource, r.States)
			}
			if r.Pass > 0 && !slices.Contains(otherApps, r.App) {
				otherApps = append(otherApps, r.App)
			}
			continue
		}
		got[r.Resource] = [2]int64{r.Pass, r.Block}
		wantStates := "unknown" // payment:charge never changed state: nothing tells it
		if r.Resource == "inventory:check" {
			wantStates = "inferred"
		}
		if r.States != wantStates {
			t.Errorf("%s: states %s, want %s", r.Resource, r.States, wantStates)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("checkout's [pass block] per resource:\n got %v\nwant %v (the processes' own counts, less their first scrape's)", got, want)
	}
	if javaWant := java.totals(); fmt.Sprint(javaGot) != fmt.Sprint(javaWant) {
		t.Errorf("%s's [pass block complete error] per resource:\n got %v\nwant %v (every second the exposition served)", javaApp, javaGot, javaWant)
	}
	if len(otherApps) == 0 {
		t.Errorf("no app of the demo fleet from sentinel-top's own metrics: %+v", rep.ResourcesSeen)
	}
	if !strings.Contains(stderr.String(), "cannot be judged at this resolution") {
		t.Errorf("the report does not say what it cannot judge at 1 s steps:\n%s", stderr.String())
	}
	t.Logf("checkout %v; %s %v; demo apps %v; %s", got, javaApp, javaGot, otherApps, strings.TrimSpace(stderr.String()))

	// The transitions, from the source: each the processes heard, inferred,
	// within a step (1 s) and a scrape (1 s) after it happened.
	p, err := source.NewPrometheus(source.PromOptions{URL: promURL, Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs, rejects, err := p.Range(ctx, began.Add(-2*time.Second), time.Now())
	if err != nil || len(rejects) > 0 {
		t.Fatalf("range: %v, rejected %v", err, rejects)
	}
	for _, r := range results {
		var heard, read []string
		for _, x := range r.Transitions {
			heard = append(heard, x.Resource+" "+strings.ToUpper(x.From)+">"+strings.ToUpper(x.To))
		}
		suffix := fmt.Sprintf("/%d", r.Pid)
		var states []*wire.State
		for _, m := range msgs {
			if st, ok := m.(*wire.State); ok && strings.HasPrefix(st.Instance, "checkout/") && strings.HasSuffix(st.Instance, suffix) {
				states = append(states, st)
				read = append(read, st.Resource+" "+strings.ReplaceAll(st.From.String(), "_", "")+">"+strings.ReplaceAll(st.To.String(), "_", ""))
			}
		}
		if fmt.Sprint(read) != fmt.Sprint(heard) {
			t.Errorf("pid %d: transitions read\n%v\nheard\n%v", r.Pid, read, heard)
			continue
		}
		for i, st := range states {
			lag := st.Ts - r.Transitions[i].AtMs
			// Within the step it was scraped in: a step and a scrape after
			// it, a scrape more when one was lost under load.
			if !st.Inferred || lag < -1500 || lag > 3500 {
				t.Errorf("pid %d: %s at %d (inferred %v), heard at %d: off by %d ms", r.Pid, read[i], st.Ts, st.Inferred, r.Transitions[i].AtMs, lag)
			}
		}
		if len(heard) < 3 {
			t.Errorf("pid %d: only %v: the breaker did not trip and recover", r.Pid, heard)
		}
	}
	if d := time.Since(began); d > 40*time.Second {
		t.Errorf("the test took %s; keep it under 40 s", d)
	}
}

// TestPrometheusFlagsAndExitCodes: the --prometheus flags' usage errors
// exit 2; a server that cannot be reached, is slow or answers too much
// exits 3 with the reason, at once.
func TestPrometheusFlagsAndExitCodes(t *testing.T) {
	closed := "http://" + deadport.Addr(t)
	slow, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	go func() { // accepts and never answers
		for {
			c, err := slow.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"report", "--replay", "sawtooth-db-slow", "--from", "-5m"}, exitUsage, "go with --prometheus"},
		{[]string{"report", "--prometheus", closed, "--from", "yesterday"}, exitUsage, "RFC 3339"},
		{[]string{"report", "--replay", "sawtooth-db-slow", "--prometheus-step", "5s"}, exitUsage, "go with --prometheus"},
		{[]string{"report", "--prometheus", closed, "--from", "-1m", "--to", "-2m"}, exitUsage, "the range is reversed"},
		{[]string{"report", "--prometheus", closed, "--from", "-1m", "--to", "-50s"}, exitUsage, "at least one --prometheus-step"},
		{[]string{"report", "--prometheus", closed, "--prometheus-step", "1500ms"}, exitUsage, "whole seconds"},
		{[]string{"report", "--prometheus", closed, "--prometheus-token", "x", "--prometheus-token-file", tokenFile}, exitUsage, "not both"},
		{[]string{"report", "--prometheus", "http://user:pw@127.0.0.1:9"}, exitUsage, "credentials"},
		{[]string{"report", "--prometheus", "ftp://127.0.0.1:9"}, exitUsage, "want http"},
		{[]string{"report", "--prometheus", closed, "--for", "10s"}, exitUsage, "--prometheus reads --from to --to"},
		{[]string{"report", "--prometheus", closed, "--prometheus-token-file", tokenFile}, exitRuntime, "prometheus unavailable"},
		{[]string{"--prometheus", closed}, exitRuntime, "prometheus unavailable"}, // the live dashboard, before its screen
		{[]string{"--prometheus", closed, "--from", "-1h"}, exitUsage, "give --to as well"},
		{[]string{"report", "--prometheus", "http://" + slow.Addr().String(), "--prometheus-timeout", "500ms"}, exitRuntime, "no answer within 500ms"},
	} {
		var stderr bytes.Buffer
		began := time.Now()
		code := run(context.Background(), c.args, nil, io.Discard, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("%q: exit %d, want %d saying %q; said:\n%s", c.args, code, c.code, c.says, stderr.String())
		}
		if d := time.Since(began); d > 10*time.Second {
			t.Errorf("%q took %s", c.args, d)
		}
	}
}

// javaApp is the app of the Java exposition: Java's exporter names its
// gauge after the app, dots as underscores.
const javaApp = "java_order"

// javaExposition serves, at /metrics, what Java Sentinel's
// sentinel-prometheus-metric-exporter serves (SentinelCollector): one gauge
// named after the app, labelled resource, classification and type
// (passQps, blockQps, successQps, exceptionQps, rt), one sample per second
// and resource stamped with its second. The exporter serves the seconds
// since its last scrape; this serves the last few at each scrape, so that
// a scrape lost under load (a 1 s timeout) loses nothing: Prometheus keeps
// one sample per timestamp. No JVM runs here: this is the exporter's
// format, written from its source, read by a real Prometheus.
type javaExposition struct {
	addr      string
	resources []string
	mu        sync.Mutex
	from      int64 // the first second served (Unix ms); 0 before start
	until     int64 // the last second served once stopped; 0 while it runs
}

// javaOverlap is how many seconds each scrape serves again.
const javaOverlap = 5

func newJavaExposition(t *testing.T, resources []string) *javaExposition {
	t.Helper()
	j := &javaExposition{resources: resources}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	j.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(j.serve), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return j
}

// start begins the traffic at the next second; stop ends it at the last
// whole second.
func (j *javaExposition) start() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.from = (time.Now().UnixMilli()/1000 + 1) * 1000
}

func (j *javaExposition) stop() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.until = time.Now().UnixMilli()/1000*1000 - 1000
}

// counts are a second's counts of the resource numbered i: they vary with
// both.
func javaCounts(sec int64, i int) (pass, block, success, exception int64) {
	n := (sec / 1000 % 7) + int64(i)*5 + 3
	return n * 4, n % 3, n*4 - 1, n % 2
}

// totals are the counts of every second from start to stop.
func (j *javaExposition) totals() map[string][4]int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[string][4]int64{}
	for sec := j.from; sec <= j.until; sec += 1000 {
		for i, res := range j.resources {
			p, b, s, e := javaCounts(sec, i)
			c := out[res]
			out[res] = [4]int64{c[0] + p, c[1] + b, c[2] + s, c[3] + e}
		}
	}
	return out
}

func (j *javaExposition) serve(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP %s sentinel_metrics\n# TYPE %s gauge\n", javaApp, javaApp)
	if j.from == 0 {
		return
	}
	end := time.Now().UnixMilli()/1000*1000 - 1000 // the last whole second
	if j.until > 0 {
		end = j.until
	}
	// One series' samples in time order, as the exporter writes them.
	for i, res := range j.resources {
		for _, typ := range []string{"passQps", "blockQps", "successQps", "exceptionQps", "rt"} {
			for sec := max(j.from, end-(javaOverlap-1)*1000); sec <= end; sec += 1000 {
				p, b, s, e := javaCounts(sec, i)
				v := map[string]int64{"passQps": p, "blockQps": b, "successQps": s, "exceptionQps": e, "rt": 12}[typ]
				fmt.Fprintf(w, "%s{resource=%q,classification=\"0\",type=%q} %d %d\n", javaApp, res, typ, v, sec)
			}
		}
	}
}
