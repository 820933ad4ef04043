package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/report/spectest"
)

// A replay that yields nothing is exit 3 with one line naming the file:
// Java's binary index beside a metric log, an empty log.
func TestReplayOfNothingFromJava(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "price-metrics.log.2026-11-30.idx")
	os.WriteFile(idx, []byte{0, 0, 0, 0, 0x6b, 0x0e, 0x10, 0x4e, 0, 0, 0, 0, 0, 0, 1, 0xc6, '\n', 7}, 0o600)
	empty := filepath.Join(dir, "price-metrics.log.2026-11-30")
	os.WriteFile(empty, nil, 0o600)
	for _, tc := range []struct{ spec, want string }{
		{idx, "nothing replayable in " + idx + ": it is the index of a Sentinel metric log, not the log: replay " + empty},
		{empty, "nothing replayable in " + empty + ": it holds no metric lines"},
	} {
		code, out, errOut := runCmd(t, "report", "--replay", tc.spec)
		if code != exitRuntime || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.spec, code, out, errOut)
		}
	}
}

// The metric logs of three processes, as they lie on two hosts, are three
// instances; two names for one process is bad usage.
func TestReplayJavaMetricLogsOfSeveralProcesses(t *testing.T) {
	const dir = "../../collector/testdata/java/"
	a, pid, b := dir+"host-a/price-service-metrics.log.2026-12-01", dir+"host-a/price-service-metrics.log.pid28225.2026-12-01",
		dir+"host-b/price-service-metrics.log.2026-12-01"
	code, out, errOut := runCmd(t, "report", "--replay", a+","+pid+"@gw-2,"+b, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Instances != 3 || rep.Apps != 1 || rep.Rejected != 0 {
		t.Errorf("report %+v", rep)
	}
	code, _, errOut = runCmd(t, "report", "--replay", a+"@x,"+b+"@x")
	if code != exitUsage || !strings.Contains(errOut, `one instance name "x"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// The metric logs of the recorded Java Sentinel 1.8.9 applications hold
// trips that closed at their first probe, but no rules: the windows of the
// trips cannot be known, so low-confidence-trip judges none, and the
// report says so per resource, in its header and on standard error (with
// --format json, whose report carries findings-v1's fields alone). The
// trips listed are those whose first probe closed the breaker and whose
// next trip is not dated to the second of the close (with the rules
// unknown, so is statIntervalMs); the recordings' observers logged 8, 2, 2
// and 3 trips of queryPrice, checkStock and the two GET resources closed at
// their first probe in price-1.8.9, 7, 3, 2 and 1 in sparse-1.8.9.
func TestReplayJavaMetricLogSaysWhichTripsAreNotJudged(t *testing.T) {
	const why = "the breaker rules are unknown (a metric log holds none), so neither the window's length nor whether a ratio breaker tripped is known"
	for _, c := range []struct {
		log, app string
		trips    map[string]int // by resource: trips not judged, all closed at the first probe
	}{
		{"price-1.8.9/price-service-metrics.log.2026-12-01.gz", "price-service",
			map[string]int{"GET:/api/v1/items": 1, "GET:/api/v1/users": 3, "checkStock": 1, "queryPrice": 6}},
		{"sparse-1.8.9/price-sparse-metrics.log.2026-12-01.gz", "price-sparse",
			map[string]int{"GET:/api/v1/items": 2, "GET:/api/v1/users": 1, "checkStock": 3, "queryPrice": 2}},
	} {
		t.Run(c.app, func(t *testing.T) {
			log := filepath.Join("..", "..", "collector", "testdata", "java", c.log)
			code, out, errOut := runCmd(t, "report", "--replay", log, "--format", "text")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "not judged for low-confidence-trip") {
					lines = append(lines, strings.TrimSpace(l))
				}
			}
			var want []string
			for _, res := range []string{"GET:/api/v1/items", "GET:/api/v1/users", "checkStock", "queryPrice"} {
				n := c.trips[res]
				trips := "trips"
				if n == 1 {
					trips = "trip"
				}
				want = append(want, fmt.Sprintf("Warning:                %d %s of %s %s not judged for low-confidence-trip (%d closed at the first probe): %s",
					n, trips, c.app, res, n, why))
			}
			if !slices.Equal(lines, want) {
				t.Fatalf("header\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
			if strings.Contains(out, "low-confidence-trip  app") {
				t.Errorf("a low-confidence-trip finding without rules:\n%s", out)
			}
			code, js, errOut := runCmd(t, "report", "--replay", log, "--format", "json")
			rep, err := spectest.Decode([]byte(js))
			if code != exitOK || err != nil {
				t.Fatalf("exit %d, %v: %s", code, err, errOut)
			}
			for _, f := range rep.Findings {
				if f.Kind == "low-confidence-trip" {
					t.Errorf("finding %+v", f)
				}
			}
			if n := strings.Count(errOut, "not judged for low-confidence-trip"); n != 4 {
				t.Errorf("%d statements on standard error:\n%s", n, errOut)
			}
		})
	}
}
