package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
)

// TestReportRangeSurvivesPoisonedStarts: a recording whose buckets start
// at 0 and in the year 9999 (their messages stamped like the rest) is
// reported over its true range, the two refused as clock_skew, and no
// duration the text prints is negative.
func TestReportRangeSurvivesPoisonedStarts(t *testing.T) {
	const t0 = int64(1764460800000)
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add(`{"v":1,"kind":"hello","ts":%d,"instance":"gw-1","app":"gw","host":"h","pid":1,"startedAt":%d,"sdk":"t","bucketMs":500}`, t0, t0)
	for i := range int64(20) {
		add(`{"v":1,"kind":"buckets","ts":%d,"instance":"gw-1","bucketMs":500,"items":[{"resource":"db","start":%d,"pass":5,"complete":5,"rtSum":50,"rtMin":10,"rtMax":10}]}`,
			t0+500*(i+1), t0+500*i)
		if i == 10 {
			for _, start := range []int64{0, 253402300799000} {
				add(`{"v":1,"kind":"buckets","ts":%d,"instance":"gw-1","bucketMs":500,"items":[{"resource":"db","start":%d,"pass":1}]}`, t0+500*(i+1), start)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "poisoned.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "report", "--replay", path, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.From != t0 || rep.To != t0+10_000 || rep.Rejected != 2 {
		t.Fatalf("range %d..%d with %d rejected; want %d..%d with 2", rep.From, rep.To, rep.Rejected, t0, t0+10_000)
	}
	if !strings.Contains(errOut, "items[0].start 0 is 490128h0m5.5s behind") || !strings.Contains(errOut, "items[0].start 253402300799000 is 69899399h") {
		t.Fatalf("the rejects do not say why: %s", errOut)
	}
	code, out, errOut = runCmd(t, "report", "--replay", path)
	if code != exitOK {
		t.Fatalf("text: exit %d, stderr %s", code, errOut)
	}
	if want := "2025-11-30 00:00:00.000 UTC to 00:00:10.000 UTC (10s)"; !strings.Contains(out, want) {
		t.Fatalf("the text's range is not %q:\n%s", want, out)
	}
	if neg := regexp.MustCompile(`\(-|-[0-9.]+(ms|s|m|h)\b| -[0-9]+ ms`).FindString(out); neg != "" {
		t.Fatalf("a negative duration %q:\n%s", neg, out)
	}
}

// aheadClock is a real clock read ahead by a fixed offset: a peer whose
// clock is wrong.
type aheadClock struct {
	core.Clock
	by time.Duration
}

func (c aheadClock) Now() time.Time   { return c.Clock.Now().Add(c.by) }
func (c aheadClock) UnixMilli() int64 { return c.Clock.UnixMilli() + c.by.Milliseconds() }

// TestLiveReportRangeIsTheWatch: of two real agents on loopback, one's
// clock 23 h ahead (inside the 24 h skew window, so its data is taken and
// its clock warned about), a report watching them for 2 s spans the watch
// and the backlog a connection is sent, not 23 h.
func TestLiveReportRangeIsTheWatch(t *testing.T) {
	var targets []string
	for i, by := range []time.Duration{0, 23 * time.Hour} {
		a, err := agent.New(agent.Options{App: "order", Instance: fmt.Sprint("order-", i), Clock: aheadClock{core.NewRealClock(), by}})
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, busyAgent(t, a))
	}
	began := time.Now().UnixMilli()
	code, out, errOut := runCmd(t, "report", "--targets", strings.Join(targets, ","), "--for", "2s", "--format", "json")
	ended := time.Now().UnixMilli()
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Instances != 2 {
		t.Fatalf("%d instances, want both: stderr %s", rep.Instances, errOut)
	}
	if rep.From < began-liveBacklog.Milliseconds() || rep.To > ended || rep.To < rep.From {
		t.Fatalf("range %d..%d (%s long), want within the watch %d..%d and its backlog",
			rep.From, rep.To, time.Duration(rep.To-rep.From)*time.Millisecond, began, ended)
	}
	if !strings.Contains(errOut, "order-1") || !strings.Contains(errOut, "clock") {
		t.Fatalf("the skewed clock is not warned about: %s", errOut)
	}
}
