package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/report/spectest"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// runCmd runs the program in-process.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// jsonReport is findings-v1's report (revision 2), as spectest has it.
type jsonReport = spectest.Report

// TestReportEveryFixture replays every built-in fixture through the
// collector, as `sentinel-top report --format json` does, and requires the
// findings its meta line expects: all of them, and nothing else of severity
// warning or above.
func TestReportEveryFixture(t *testing.T) {
	names := fixtures.Names()
	if len(names) < 9 {
		t.Fatalf("%d built-in fixtures", len(names))
	}
	for i, name := range names {
		if !racetest.Played(i, 5) {
			continue // one goroutine's replays: every fifth fixture under -race, all in .ci/run's run without it
		}
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCmd(t, "report", "--replay", name, "--format", "json")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			rep, err := spectest.Decode([]byte(out)) // strictly: no field the spec lacks
			if err != nil {
				t.Fatal(err)
			}
			if rep.V != 1 || rep.Source != name || rep.Messages == 0 || rep.Rejected != 0 || rep.Instances == 0 {
				t.Fatalf("report header %+v", rep)
			}
			want, err := fixtures.Expected(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.ResourcesSeen) == 0 {
				t.Error("no resourcesSeen")
			}
			for i := range rep.Plans {
				if err := rep.Plans[i].Check(); err != nil {
					t.Error(err)
				}
			}
			var got []string
			for _, f := range rep.Findings {
				if f.Summary == "" || f.Advice == "" || len(f.Instances) == 0 {
					t.Errorf("finding without evidence: %+v", f)
				}
				got = append(got, f.Severity+" "+f.Kind+" "+f.Resource)
			}
			var wantKeys []string
			for _, x := range want {
				wantKeys = append(wantKeys, x.Severity+" "+x.Kind+" "+x.Resource)
			}
			slices.Sort(got)
			slices.Sort(wantKeys)
			if !slices.Equal(got, wantKeys) {
				t.Fatalf("findings\n got %q\nwant %q", got, wantKeys)
			}
		})
	}
}

func TestReportIsByteIdentical(t *testing.T) {
	for _, format := range []string{"md", "text", "json"} {
		_, a, _ := runCmd(t, "report", "--replay", "recovery-herd", "--format", format)
		_, b, _ := runCmd(t, "report", "--replay", "recovery-herd", "--format", format)
		if a != b || len(a) < 200 {
			t.Fatalf("%s: two runs differ or are empty (%d, %d bytes)", format, len(a), len(b))
		}
	}
}

func TestReportFailOn(t *testing.T) {
	if code, _, errOut := runCmd(t, "report", "--replay", "healthy-baseline", "--fail-on", "warning"); code != exitOK {
		t.Fatalf("healthy baseline failed --fail-on warning: %d %s", code, errOut)
	}
	if code, _, _ := runCmd(t, "report", "--replay", "sawtooth-db-slow", "--fail-on", "warning"); code != exitFailOn {
		t.Fatalf("sawtooth passed --fail-on warning: exit %d", code)
	}
}

func TestReportBadInputFileLineAndCount(t *testing.T) {
	dir := t.TempDir()
	rc, err := fixtures.Open("sawtooth-db-slow")
	if err != nil {
		t.Fatal(err)
	}
	good, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitN(good, []byte("\n"), 4)
	bad := bytes.Join([][]byte{lines[0], lines[1], []byte("{not json"), []byte(`{"v":7,"kind":"hello","ts":1,"instance":"x"}`), lines[2], lines[3]}, []byte("\n"))
	path := filepath.Join(dir, "bad.ndjson")
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "report", "--replay", path, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{path + ":3: ", path + ":4: ", "2 rejected"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if rep.Rejected != 2 || rep.Messages == 0 {
		t.Fatalf("rejected %d, messages %d", rep.Rejected, rep.Messages)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"report"},
		{"report", "--replay", "a", "--targets", "b:1"},
		{"report", "--replay", "sawtooth-db-slow", "--format", "yaml"},
		{"report", "--replay", "sawtooth-db-slow", "--fail-on", "panic"},
		{"report", "--targets", "127.0.0.1:1"},
		{"--replay", "sawtooth-db-slow", "--speed", "fast"},
		{"--targets", "localhost"},
		{"--bogus"},
		{"report", "--format"},
		{"--demo", "no-such-scenario"},
		{"serve", "--replay", "x", "--tls-cert", "c.pem"},
	} {
		if code, _, errOut := runCmd(t, args...); code != exitUsage || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestNoTerminal(t *testing.T) {
	code, _, errOut := runCmd(t, "--replay", "sawtooth-db-slow")
	if code != exitUsage || !strings.Contains(errOut, "sentinel-top report") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"report", "--help"}, {"serve", "--help"}, {"help", "report"}} {
		code, out, errOut := runCmd(t, args...)
		if code != exitOK || strings.Count(out, "Usage: sentinel-top") != 1 || !strings.Contains(out, "Examples:") || errOut != "" {
			t.Errorf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
	}
	if code, out, _ := runCmd(t, "--version"); code != exitOK || !strings.HasPrefix(out, "sentinel-top ") {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestEnvironmentFlags(t *testing.T) {
	t.Setenv("SENTINEL_TOP_REPLAY", "sawtooth-db-slow")
	t.Setenv("SENTINEL_TOP_FORMAT", "json")
	code, out, errOut := runCmd(t, "report")
	if code != exitOK || !strings.HasPrefix(out, "{") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Setenv("SENTINEL_TOP_SPEED", "warp")
	if code, _, _ := runCmd(t, "--replay", "x"); code != exitUsage {
		t.Fatalf("bad env value accepted: %d", code)
	}
}

// TestReportDemoFastClock runs a live demo over loopback websockets with a
// virtual clock 40 times faster than the wall clock and reports on 200 s of it.
func TestReportDemoFastClock(t *testing.T) {
	code, out, errOut := runCmd(t, "report", "--demo", "sawtooth-db-slow", "--for", "200s", "--speed", "40", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"kind": "sawtooth"`) {
		t.Fatalf("no sawtooth in the demo's report:\n%s", out)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeEndpoints replays a fixture through `serve` at 60 times real
// time and reads its merged stream, metrics and report, token required.
func TestServeEndpoints(t *testing.T) {
	addr, _ := startServe(t, "--replay", "sawtooth-db-slow", "--speed", "60", "--serve-token", "tk")
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path, token string) (int, string) {
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
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

	// The merged stream, early in the replay: hello and rules of both
	// instances first.
	var conn *websocket.Conn
	dialer := &websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		conn, _, err = dialer.Dial("ws://"+addr+"/sentinel/stream", http.Header{"Authorization": {"Bearer tk"}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	kinds := map[wire.Kind]int{}
	for i := 0; i < 6; i++ {
		_, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		kinds[m.Kind()]++
	}
	if kinds[wire.KindHello] != 2 || kinds[wire.KindRules] != 2 {
		t.Fatalf("re-served stream began with %v", kinds)
	}

	// Metrics while it plays: a breaker goes OPEN; at the end, the finding.
	var sawOpen bool
	deadline = time.Now().Add(20 * time.Second)
	for {
		code, body := get("/metrics", "tk")
		if code != 200 {
			t.Fatalf("metrics: %d %s", code, body)
		}
		sawOpen = sawOpen || strings.Contains(body,
			`sentinel_top_breaker_state{app="order",instance="order-1",provenance="exact",resource="GET:http://member-service/api/user/info",state="OPEN"} 1`)
		if strings.Contains(body, `sentinel_top_findings{kind="sawtooth",severity="warning"} 1`) {
			for _, want := range []string{
				`sentinel_top_resource_pass_total{app="order",resource="GET:http://member-service/api/user/info"}`,
				`sentinel_top_breaker_transitions_total{app="order",from="HALF_OPEN",resource="GET:http://member-service/api/user/info",to="OPEN"}`,
				`sentinel_top_messages_total`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("metrics lack %s", want)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed the sawtooth:\n%.2000s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawOpen {
		t.Error("the breaker state gauge never showed OPEN during the replay")
	}
	if code, _ := get("/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("metrics without token: %d", code)
	}
	if code, body := get("/report", "tk"); code != 200 || !strings.Contains(body, `"kind": "sawtooth"`) {
		t.Errorf("report: %d %.300s", code, body)
	}
	if code, body := get("/report?format=xml", "tk"); code != http.StatusBadRequest || !strings.Contains(body, "json, md or text") {
		t.Errorf("report?format=xml: %d %.300s", code, body)
	}
	if code, body := get("/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("healthz without a token: %d %q", code, body)
	}
}

// TestRecordThenReplay records a live demo over loopback and replays the
// recording: it holds what the collector accepted, and gives the same
// findings.
func TestRecordThenReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "incident.ndjson.gz")
	code, live, errOut := runCmd(t, "report", "--demo", "sawtooth-db-slow", "--for", "200s", "--speed", "40",
		"--format", "json", "--record", path)
	if code != exitOK {
		t.Fatalf("live: exit %d: %s", code, errOut)
	}
	code, replayed, errOut := runCmd(t, "report", "--replay", path, "--format", "json")
	if code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	var a, b jsonReport
	if err := json.Unmarshal([]byte(live), &a); err != nil {
		t.Fatalf("live report: %v\n%s", err, live)
	}
	if err := json.Unmarshal([]byte(replayed), &b); err != nil {
		t.Fatalf("replayed report: %v\n%s", err, replayed)
	}
	if a.Messages == 0 || a.Messages != b.Messages || a.Instances != b.Instances || len(a.Findings) != len(b.Findings) || b.Rejected != 0 {
		t.Fatalf("live %+v\nreplayed %+v", a, b)
	}
	if !strings.Contains(replayed, `"kind": "sawtooth"`) {
		t.Fatalf("the recording lost the sawtooth:\n%s", replayed)
	}
}

// TestRecordWriteErrorFails: a recording that cannot be written fails the
// run with exit 3 and says why, for the report and for serve, instead of
// ending as if it had been written.
//
// The report ends at the error: /dev/full refuses the first write (the
// recording's first flush, a second into the demo), and a report asked to
// watch for ten minutes (30 s at 20 times the speed) exits then.
func TestRecordWriteErrorFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	began := time.Now()
	code, out, errOut := runCmd(t, "report", "--demo", "recovery-herd", "--for", "10m", "--speed", "20", "--record", "/dev/full", "--record-overwrite")
	took := time.Since(began)
	if code != exitRuntime || !strings.Contains(errOut, "--record /dev/full: write /dev/full: no space left on device") {
		t.Fatalf("report --record /dev/full: exit %d, stderr %q", code, errOut)
	}
	if took > 10*time.Second || out != "" {
		t.Fatalf("report --record /dev/full took %s to fail (want about a second, not --for's 30 s) and printed %q", took, out)
	}
}

// TestReportShowsPlans: the text and Markdown reports of an incident give
// its rule plan, numbered, after the findings, the finding naming it, and
// the replay of both rules side by side.
func TestReportShowsPlans(t *testing.T) {
	for format, want := range map[string][]string{
		"text": {
			"   Plan:                   Plan 1 below (safe)\n",
			"\nPlans\n\nPlan 1. breaker rule  app order  resource GET:http://member-service/api/user/info\n",
			"   Change:                 retryTimeoutMs 10000 -> 30000 to 40000, one per instance\n",
			"   Per instance:           retryTimeoutMs: order-1 30000, order-2 40000\n",
			"   Because:                sawtooth (finding 1)\n",
			"       detected after (ms)                620, 669        620, 669\n",
		},
		"md": {
			"- **Plan:** Plan 1 below (safe)\n",
			"\n## Plans\n\n### Plan 1. breaker rule: `order` on `GET:http://member-service/api/user/info`\n",
			"- **Per instance:** retryTimeoutMs: `order-1` 30000, `order-2` 40000\n",
			"|  | current rule | proposed rule |\n|---|---:|---:|\n| trips | 2 | 2 |\n",
			"| detected after (ms) | 620, 669 | 620, 669 |\n",
		},
	} {
		code, out, errOut := runCmd(t, "report", "--replay", "sawtooth-db-slow", "--format", format)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", format, code, errOut)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s report lacks %q:\n%s", format, w, out)
			}
		}
	}
}
