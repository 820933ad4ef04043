package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
