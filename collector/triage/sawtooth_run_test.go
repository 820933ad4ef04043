package triage_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/fixtures/fixturetest"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// sawtoothRun is the spec's shortest sawtooth (findings-v1: "3 or more
// consecutive HALF_OPEN -> OPEN transitions ... with no -> CLOSED between
// them"), written here rather than read from the engine so that a change
// of the engine's threshold fails these tests.
const sawtoothRun = 3

// TestSawtoothRunLength feeds runs of failed probes around the threshold
// through the engine's public API: a run of exactly 3 is a sawtooth of
// count 3, a run of 2 is none, and runs do not add up across a close, a
// restart or instances.
func TestSawtoothRunLength(t *testing.T) {
	const (
		app   = "order"
		res   = "GET:http://member-service/api/user/info"
		t0    = int64(1764460800000)
		retry = 10000
	)
	rule := core.BreakerRule{Resource: res, Strategy: core.SlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 500,
		MinRequestAmount: 20, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: retry}
	tr := func(from, to core.State, at int64) core.Transition {
		return core.Transition{Resource: res, Strategy: core.SlowRequestRatio, From: from, To: to, AtMs: at,
			Threshold: 0.5, RetryTimeoutMs: retry}
	}
	// run trips inst's breaker at start and fails n probes, 12 s apart; it
	// returns the time of the last OPEN.
	run := func(e *triage.Feeder, inst string, start int64, n int) int64 {
		trip := tr(core.Closed, core.Open, start)
		trip.Snapshot = core.WindowSnapshot{Total: 40, Bad: 40, Value: 1}
		e.Transition(inst, trip)
		at := start
		for range n {
			e.Transition(inst, tr(core.Open, core.HalfOpen, at+retry))
			at += retry + 2000
			failed := tr(core.HalfOpen, core.Open, at)
			failed.Probe = &core.Probe{RtMs: 2100}
			e.Transition(inst, failed)
		}
		return at
	}
	closeAt := func(e *triage.Feeder, inst string, at int64) int64 {
		e.Transition(inst, tr(core.Open, core.HalfOpen, at+retry))
		e.Transition(inst, tr(core.HalfOpen, core.Closed, at+retry+20))
		return at + retry + 20
	}
	cases := []struct {
		name      string
		feed      func(e *triage.Feeder) int64 // returns now
		count     int64                        // 0: no sawtooth
		severity  triage.Severity
		instances []string
	}{
		{"a run of 2 is not a sawtooth", func(e *triage.Feeder) int64 {
			return run(e, "order-1", t0+60000, 2) + 1000
		}, 0, 0, nil},
		{"a run of 3 is a sawtooth of 3", func(e *triage.Feeder) int64 {
			return run(e, "order-1", t0+60000, 3) + 1000
		}, 3, triage.Critical, []string{"order-1"}},
		{"a run of 3 that closed is still one, a warning", func(e *triage.Feeder) int64 {
			return closeAt(e, "order-1", run(e, "order-1", t0+60000, 3)) + 60000
		}, 3, triage.Warning, []string{"order-1"}},
		{"a run of 4 counts 4", func(e *triage.Feeder) int64 {
			return run(e, "order-1", t0+60000, 4) + 1000
		}, 4, triage.Critical, []string{"order-1"}},
		{"runs of 2 and 2 across a close are not one of 4", func(e *triage.Feeder) int64 {
			end := closeAt(e, "order-1", run(e, "order-1", t0+60000, 2))
			return run(e, "order-1", end+30000, 2) + 1000
		}, 0, 0, nil},
		{"runs of 2 and 1 across a restart are not one of 3", func(e *triage.Feeder) int64 {
			end := run(e, "order-1", t0+60000, 2)
			e.Hello("order-1", app, end+1000, end+500)
			return run(e, "order-1", end+30000, 1) + 1000
		}, 0, 0, nil},
		{"runs of 2 on two instances are not a sawtooth", func(e *triage.Feeder) int64 {
			run(e, "order-1", t0+60000, 2)
			return run(e, "order-2", t0+61000, 2) + 1000
		}, 0, 0, nil},
		{"runs of 2 and 3 on two instances: count 3, on the one", func(e *triage.Feeder) int64 {
			run(e, "order-1", t0+60000, 2)
			return run(e, "order-2", t0+61000, 3) + 1000
		}, 3, triage.Critical, []string{"order-2"}},
		{"a run of 2, a close, then 3: count 3", func(e *triage.Feeder) int64 {
			end := closeAt(e, "order-1", run(e, "order-1", t0+60000, 2))
			return run(e, "order-1", end+30000, 3) + 1000
		}, 3, triage.Critical, []string{"order-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := triage.NewFeeder(triage.Config{})
			for _, inst := range []string{"order-1", "order-2"} {
				e.Hello(inst, app, t0, t0-60000)
				e.Rules(inst, t0, "v1", []core.BreakerRule{rule}, nil)
			}
			now := c.feed(e)
			var got []triage.Finding
			for _, f := range e.Findings(now) {
				if f.Kind == triage.KindSawtooth {
					got = append(got, f)
				}
			}
			if c.count == 0 {
				if len(got) != 0 {
					t.Fatalf("sawtooth found: %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d sawtooth findings, want 1: %+v", len(got), got)
			}
			f := got[0]
			if f.Facts.(*triage.SawtoothFacts).Count != c.count || f.Severity != c.severity || f.App != app || f.Resource != res || !slices.Equal(f.Instances, c.instances) {
				t.Fatalf("sawtooth %s %s/%s count %d on %v, want %s count %d on %v",
					f.Severity, f.App, f.Resource, f.Facts.(*triage.SawtoothFacts).Count, f.Instances, c.severity, c.count, c.instances)
			}
		})
	}
}

// TestFixtureSawtoothCounts pins the sawtooth findings of every fixture to
// the failed probes its transitions hold: a resource has a sawtooth when an
// instance's breaker failed sawtoothRun or more probes in a row (no CLOSED
// between them, no restart), with the longest such run as its count and the
// instances that had one. The fixtures' meta lines name the findings but
// not their counts; this derives them from the recorded transitions.
func TestFixtureSawtoothCounts(t *testing.T) {
	var sawtooths, shortRuns int
	for i, name := range fixtures.Names() {
		if !racetest.Played(i, 5) {
			continue // one goroutine's replays: every fifth fixture under -race, all in .ci/run's run without it
		}
		t.Run(name, func(t *testing.T) {
			want := longestRuns(t, name)
			res, err := fixturetest.ReplayFixture(name)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range res.Findings {
				if f.Kind == triage.KindSawtooth {
					got[f.App+" "+f.Resource] = fmt.Sprintf("count %d on %v", f.Facts.(*triage.SawtoothFacts).Count, f.Instances)
				}
			}
			wantText := map[string]string{}
			for ar, runs := range want {
				var longest int64
				var insts []string
				for inst, n := range runs {
					if n >= sawtoothRun {
						insts = append(insts, inst)
						longest = max(longest, n)
					}
				}
				slices.Sort(insts)
				if len(insts) > 0 {
					wantText[ar] = fmt.Sprintf("count %d on %v", longest, insts)
					sawtooths++
				} else {
					shortRuns++
				}
				t.Logf("%s: longest runs of failed probes %v", ar, runs)
			}
			if fmt.Sprint(got) != fmt.Sprint(wantText) {
				t.Fatalf("sawtooth findings\n got %v\nwant %v", got, wantText)
			}
		})
	}
	// The fixtures hold both sides of the threshold.
	if (sawtooths == 0 || shortRuns == 0) && !racetest.Enabled {
		t.Errorf("fixtures have %d sawtooths and %d resources with shorter runs of failed probes", sawtooths, shortRuns)
	}
}

// longestRuns reads a fixture's transitions: for each "app resource" with
// a failed probe, each instance's longest run of them.
func longestRuns(t *testing.T, name string) map[string]map[string]int64 {
	t.Helper()
	type breaker struct{ inst, res, rule string }
	runs := map[breaker]int64{}
	out := map[string]map[string]int64{}
	restart := func(inst string, _ int64) {
		for b := range runs {
			if b.inst == inst {
				runs[b] = 0
			}
		}
	}
	readFixture(t, name, restart, func(msg wire.Message, app map[string]string) {
		m, ok := msg.(*wire.State)
		if !ok {
			return
		}
		b := breaker{m.Instance, m.Resource, m.RuleID}
		switch {
		case m.From == core.HalfOpen && m.To == core.Open:
			runs[b]++
			ar := app[m.Instance] + " " + m.Resource
			if out[ar] == nil {
				out[ar] = map[string]int64{}
			}
			out[ar][m.Instance] = max(out[ar][m.Instance], runs[b])
		case m.To == core.Closed:
			runs[b] = 0
		}
	})
	return out
}
