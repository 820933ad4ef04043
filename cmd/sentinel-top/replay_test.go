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
