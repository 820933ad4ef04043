package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportOnSentinelMetricLog replays a Sentinel metric log file (as Java
// Sentinel and sentinel-golang write them) with its rotation.
func TestReportOnSentinelMetricLog(t *testing.T) {
	dir := t.TempDir()
	day := filepath.Join(dir, "order-metrics.log.2026-11-30")
	var a, b strings.Builder
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for i := 0; i < 120; i++ {
		ts := t0.Add(time.Duration(i) * time.Second)
		line := fmt.Sprintf("%d|%s|GET:/api_v2|10|2|10|1|35|0|3|0\n", ts.UnixMilli(), ts.Format("2006-01-02 15:04:05"))
		line += fmt.Sprintf("%d|%s|__cpu_usage__|3000|0|0|0|0|0|0|0\n", ts.UnixMilli(), ts.Format("2006-01-02 15:04:05"))
		if i < 60 {
			b.WriteString(line) // the older half, rotated away to .1
		} else {
			a.WriteString(line)
		}
	}
	a.WriteString("not|a|metric line\n")
	os.WriteFile(day, []byte(a.String()), 0o600)
	os.WriteFile(day+".1", []byte(b.String()), 0o600)

	code, out, errOut := runCmd(t, "report", "--replay", day+","+day+".1", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Instances != 1 || rep.Resources != 1 || rep.Rejected != 1 || rep.To-rep.From < 118000 {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(errOut, "order-metrics.log.2026-11-30:121") {
		t.Fatalf("the bad line is not named by file:line:\n%s\n%s", errOut, out)
	}
}

// TestReportSaysWhatNeverArrived: a recording in which an instance comes
// back after 3 minutes, its backlog reaching back one, reports the 2
// minutes never received, the warning whole (the reason included), in
// Markdown and on standard error.
func TestReportSaysWhatNeverArrived(t *testing.T) {
	const t0 = int64(1764460800000)
	var lines []string
	add := func(m map[string]any) {
		m["v"], m["instance"] = 1, "gw-1"
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	item := func(start int64) []any {
		return []any{map[string]any{"resource": "db", "start": start, "pass": 10, "block": 0, "complete": 10, "error": 0,
			"slow": 0, "rtSum": 100, "rtMin": 5, "rtMax": 20, "concurrency": 0}}
	}
	hello := map[string]any{"kind": "hello", "app": "gw", "startedAt": t0 - 1000, "bucketMs": 500}
	add(map[string]any{"kind": "hello", "ts": t0, "app": "gw", "startedAt": t0 - 1000, "bucketMs": 500})
	for k := range int64(20) {
		add(map[string]any{"kind": "buckets", "ts": t0 + k*500 + 500, "bucketMs": 500, "items": item(t0 + k*500)})
	}
	hello["ts"] = t0 + 190_000
	add(hello)
	for k := range int64(20) {
		add(map[string]any{"kind": "buckets", "ts": t0 + 190_000 + k, "bucketMs": 500, "items": item(t0 + 130_000 + k*500)})
	}
	path := filepath.Join(t.TempDir(), "gap.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "report", "--replay", path, "--format", "md")
	const want = "no data received from gw-1 for 2m0s from 2025-11-30 00:00:10 UTC: lost while out of reach " +
		"(a reconnect brings back an agent's last 60 s, Java Sentinel's 10 min); unknown, not idle"
	if code != 0 || !strings.Contains(out, "- **Warning:** `"+want+"`") || !strings.Contains(errOut, "warning: "+want+"\n") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
