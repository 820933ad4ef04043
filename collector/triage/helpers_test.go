package triage

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

const t0 = int64(1764460800000)

func slowRule(res string) core.BreakerRule {
	return core.BreakerRule{
		Resource: res, Strategy: core.SlowRequestRatio, Threshold: 0.5,
		MaxAllowedRtMs: 200, MinRequestAmount: 20, StatIntervalMs: 10000,
		StatSlidingWindowBucketCount: 10, RetryTimeoutMs: 10000,
	}
}

// appFleet feeds hello and one rules message to each instance of an app.
func appFleet(e *Feeder, app string, n int, ts int64, version string, breakers ...core.BreakerRule) []string {
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", app, i)
		names = append(names, name)
		e.Hello(name, app, ts, ts-1000)
		e.Rules(name, ts, version, breakers, nil)
	}
	return names
}

// traffic feeds buckets of 500 ms with pass entries per bucket on every
// instance over [from, to).
func traffic(e *Feeder, insts []string, res string, from, to, pass int64) {
	for t := from; t < to; t += 500 {
		for _, in := range insts {
			e.Bucket(in, BucketStat{Resource: res, Start: t, BucketMs: 500, Metrics: core.Metrics{Pass: pass, Complete: pass, RtSum: pass * 20, RtMax: 40, Hist: [core.HistogramSlots]int64{4: pass}}, HasHist: true})
		}
	}
}

func trans(res string, from, to core.State, at int64) core.Transition {
	return core.Transition{Resource: res, Strategy: core.SlowRequestRatio, From: from, To: to, AtMs: at, Threshold: 0.5, RetryTimeoutMs: 10000}
}

// sawtoothRun trips the breaker at start and fails probes failed times,
// every period ms (HALF_OPEN 5 ms before each re-open). It returns the time
// of the last OPEN.
func sawtoothRun(e *Feeder, inst, res string, start, period int64, failed int) int64 {
	t := trans(res, core.Closed, core.Open, start)
	t.Snapshot = core.WindowSnapshot{Total: 100, Bad: 90, Value: 0.9}
	e.Transition(inst, t)
	at := start
	for range failed {
		at += period
		e.Transition(inst, trans(res, core.Open, core.HalfOpen, at-5))
		p := trans(res, core.HalfOpen, core.Open, at)
		p.Probe = &core.Probe{RtMs: 900}
		e.Transition(inst, p)
	}
	return at
}

func closeBreaker(e *Feeder, inst, res string, at int64) {
	e.Transition(inst, trans(res, core.Open, core.HalfOpen, at-5))
	e.Transition(inst, trans(res, core.HalfOpen, core.Closed, at))
}

func only(t *testing.T, fs []Finding, kind Kind) []Finding {
	t.Helper()
	var out []Finding
	for _, f := range fs {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

func one(t *testing.T, fs []Finding, kind Kind) Finding {
	t.Helper()
	got := only(t, fs, kind)
	if len(got) != 1 {
		t.Fatalf("want 1 %s finding, got %d: %+v", kind, len(got), fs)
	}
	return got[0]
}

// Accessors of a finding's facts, whatever its kind, for tests.
func (f Finding) count() int64 {
	switch x := f.Facts.(type) {
	case *SawtoothFacts:
		return x.Count
	case *SyncHalfOpenFacts:
		return x.Count
	case *LowConfidenceFacts:
		return x.Count
	}
	return 0
}
func (f Finding) periodMs() int64 { return f.Facts.(*SawtoothFacts).PeriodMs }
func (f Finding) spreadMs() int64 { return f.Facts.(*SyncHalfOpenFacts).SpreadMs }
func (f Finding) worst() Evidence { return f.Facts.(*LowConfidenceFacts).Worst }
func (f Finding) groups() []RuleGroup {
	if x, ok := f.Facts.(*RuleDriftFacts); ok {
		return x.Groups
	}
	return nil
}
func (f Finding) passed() int64          { return f.Facts.(*UnprotectedFacts).Passed }
func (f Finding) apps() []string         { return f.Facts.(*SharedResourceFacts).Apps }
func (f Finding) rule() core.BreakerRule { return f.Facts.(*WindowMisalignedFacts).Rule }
func (f Finding) qps() float64           { return f.Facts.(*RuleAdviceFacts).QPS }

// firesInert checks whether feed gives one inert-rule finding, and returns
// it and its facts (nil when it does not fire).
func firesInert(t *testing.T, feed func(*Feeder) int64, want bool) (Finding, *InertRuleFacts) {
	t.Helper()
	f, _ := fires(t, feed, KindInertRule, want)
	if !want {
		return f, nil
	}
	return f, f.Facts.(*InertRuleFacts)
}

// factsJSON is a finding's facts as JSON, and as that JSON decodes.
func factsJSON(t *testing.T, f Finding) ([]byte, map[string]any) {
	t.Helper()
	b, err := json.Marshal(f.Facts)
	if err != nil {
		t.Fatal(err)
	}
	var js map[string]any
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	return b, js
}

// inst is the current instance of a name fed to f.
func (f *Feeder) inst(name string) *instState { return f.insts[name].in.in }
