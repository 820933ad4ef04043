package triage

import (
	"encoding/json"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// ratioOneFeed plays a slow-ratio rule of threshold 1.0 (500 ms, a 1 s
// window of 2 buckets, minRequestAmount 20) on one instance: 120 s of 10
// calls per 500 ms bucket, 11-20 ms each, but from 60 s to 60 s + slowFor
// seven of each ten take 1-2 s. The breaker never trips.
func ratioOneFeed(e *Feeder, res string, threshold float64, slowFor int64) int64 {
	r := slowRule(res)
	r.Threshold, r.MaxAllowedRtMs, r.StatIntervalMs, r.StatSlidingWindowBucketCount = threshold, 500, 1000, 2
	appFleet(e, "order", 1, t0, "v1", r)
	for at := t0; at < t0+120000; at += 500 {
		b := selfBucket(res, at, 10, 0, 4, 500, 0)
		if at >= t0+60000 && at < t0+60000+slowFor {
			b.Hist[4], b.Hist[10], b.Slow, b.RtMax = 3, 7, 7, 2000
		}
		e.Bucket("order-1", b)
	}
	return t0 + 120000
}

// TestInertRatioOne: 30 s of windows of 20 calls, 14 of them slow: more
// than half, not all, so a threshold of 1.0 never trips. 30 windows let
// 30 x 14 = 420 slow calls through, 70 % of their 600.
func TestInertRatioOne(t *testing.T) {
	const res = "GET:/member/info"
	f, x := firesInert(t, func(e *Feeder) int64 { return ratioOneFeed(e, res, 1, 30000) }, true)
	if f.Severity != Warning || x.Reason != InertCannotTrip || !x.RatioOne || x.BadPassed == nil || *x.BadPassed != 420 ||
		x.BadWindows != 30 || x.BadWindowCalls != 600 || x.BadFrom != t0+60000 || x.BadTo != t0+90000 || x.Inferred {
		t.Fatalf("%v %+v", f.Severity, x)
	}
	b, _ := json.Marshal(x)
	if want := `{"reason":"cannot-trip","rule":{"breakers":[{"resource":"GET:/member/info","strategy":0,"retryTimeoutMs":10000,"minRequestAmount":20,"statIntervalMs":1000,"statSlidingWindowBucketCount":2,"maxAllowedRtMs":500,"threshold":1,"probeNum":0}],"flows":[]},` +
		`"suggest":{"threshold":0.5},"badPassed":420}`; string(b) != want {
		t.Fatalf("facts %s\nwant  %s", b, want)
	}
	if want := "420 slow calls passed while the breaker stayed closed, 70 % of the 600 calls of 30 windows over 30 s that held more than half slow calls: threshold 1 trips it only on a window of slow calls alone"; f.Summary != want {
		t.Errorf("summary %q", f.Summary)
	}
	if want := "lower threshold from 1 to 0.5 so that a window where more than half the calls are slow trips the breaker, as every window it let through held"; f.Advice != want {
		t.Errorf("advice %q", f.Advice)
	}
}

// Not inert: a threshold under 1.0 (0.9 is no more than 14 of 20, but the
// rule can trip, and windows' shares are rule-advice's to judge); a
// single window of slow calls (14, fewer than 20 let through); a breaker
// seen to trip.
func TestInertRatioOneNot(t *testing.T) {
	const res = "GET:/member/info"
	firesInert(t, func(e *Feeder) int64 { return ratioOneFeed(e, res, 0.9, 30000) }, false)
	firesInert(t, func(e *Feeder) int64 { return ratioOneFeed(e, res, 1, 1000) }, false)
	firesInert(t, func(e *Feeder) int64 {
		end := ratioOneFeed(e, res, 1, 30000)
		tr := trans(res, core.Closed, core.Open, t0+100000)
		tr.Snapshot = core.WindowSnapshot{Total: 20, Bad: 20, Value: 1}
		e.Transition("order-1", tr)
		return end
	}, false)
}

// Java Sentinel reports a second's mean response time: a second whose
// mean is over the bound counts all its calls, and says so (inferred).
// 30 seconds of 20 calls averaging 1500 ms against 500: 600 calls.
func TestInertRatioOneJavaMeans(t *testing.T) {
	const res = "GET:/member/info"
	r := core.BreakerRule{Resource: res, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 500, Threshold: 1, MinRequestAmount: 5,
		StatIntervalMs: 1000, RetryTimeoutMs: 30000, Semantics: core.SemanticsJava}
	f, x := firesInert(t, func(e *Feeder) int64 {
		appFleet(e, "order", 1, t0, "v1", r)
		for at := t0; at < t0+120000; at += 1000 {
			rt := int64(30)
			if at >= t0+60000 && at < t0+90000 {
				rt = 1500
			}
			e.Bucket("order-1", BucketStat{Resource: res, Start: at, BucketMs: 1000,
				Metrics: core.Metrics{Pass: 20, Complete: 20, RtSum: 20 * rt, RtMin: rt, RtMax: rt}})
		}
		return t0 + 120000
	}, true)
	if *x.BadPassed != 600 || !x.Inferred || x.BadWindows != 30 || *x.Suggest != (InertSuggest{Threshold: 0.5}) {
		t.Fatalf("%+v", x)
	}
	if want := "600 calls passed, none blocked by the breaker, in 30 windows over 30 s whose mean response time was over the 500 ms bound (Java reports a second's mean, not each call's): slowRatioThreshold 1, Java's default when it is left out, trips it only on a window of slow calls alone"; f.Summary != want {
		t.Errorf("summary %q", f.Summary)
	}
	if want := "lower slowRatioThreshold from 1 to 0.5 so that a window where more than half the calls are slow trips the breaker, as every window it let through held"; f.Advice != want {
		t.Errorf("advice %q", f.Advice)
	}
}

// A breaker that cannot trip for its minRequestAmount counts the bad
// calls it let through too: an error ratio of 0.5 asking for 10000 calls
// in a 10 s window of 1000; for 30 s, 8 of each 10 calls fail. Windows
// are tumbling 10 s ones: the three from 60 s to 90 s hold 800 errors
// each (at or over the threshold); the others none.
func TestInertCannotTripBadPassed(t *testing.T) {
	const res = "POST:/api/pay"
	r := core.BreakerRule{Resource: res, Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 10000,
		StatIntervalMs: 10000, StatSlidingWindowBucketCount: 10, RetryTimeoutMs: 30000}
	f, x := firesInert(t, func(e *Feeder) int64 {
		appFleet(e, "pay", 1, t0, "v1", r)
		for at := t0; at < t0+120000; at += 500 {
			var errs int64
			if at >= t0+60000 && at < t0+90000 {
				errs = 40
			}
			e.Bucket("pay-1", selfBucket(res, at, 50, 0, 4, 0, errs))
		}
		return t0 + 120000
	}, true)
	if x.RatioOne || *x.BadPassed != 2400 || x.BadWindowCalls != 3000 || x.BadWindows != 3 || x.MaxWindowRequests != 1000 ||
		*x.Suggest != (InertSuggest{MinRequestAmount: 100}) {
		t.Fatalf("%+v", x)
	}
	if want := "minRequestAmount 10000 is more than the 1000 completions the busiest 10000 ms window held, so this breaker cannot trip at the traffic seen, however the downstream fails: " +
		"2400 failed calls passed while it stayed closed, of 3000 in 3 windows at or over its threshold (over 30 s)"; f.Summary != want {
		t.Errorf("summary %q", f.Summary)
	}
}

// The threshold proposed flows into the rule's plan, which replays it on
// the input: the current rule never trips, the proposal trips on the
// windows of 14 slow calls in 20, and the plan shows the change.
func TestInertRatioOnePlan(t *testing.T) {
	const res = "GET:/member/info"
	e := NewFeeder(Config{})
	end := ratioOneFeed(e, res, 1, 30000)
	fs := e.Findings(end)
	plans := e.Plans(end, fs)
	if len(plans) != 1 {
		t.Fatalf("plans %+v", plans)
	}
	p := plans[0]
	if !p.Safe || p.Proposed != (RuleValues{Threshold: 0.5}) || !containsKind(p.Because, KindInertRule) || p.WhatIf == nil {
		t.Fatalf("plan %+v", p)
	}
	// The outage is judged as the proposal counts bad windows (a 1.0
	// threshold would call none an outage, and the slow calls the
	// proposal blocks healthy ones): the 30 s of 14 slow calls in 20. The
	// current rule lets all its 600 calls through; the proposal trips
	// 975 ms into it (3 trips and 3 probes, 10 s apart), lets 49 to 114
	// through, and blocks 100 healthy calls after it ended.
	// rule-advice's maxAllowedRtMs of 2000, from a p99 this breaker that
	// never opens counted among its healthy calls, is never proposed: it
	// would hide the slow calls.
	b, _ := json.Marshal(p.WhatIf)
	if want := `{"stepMs":500,"estimated":false,` +
		`"current":{"trips":0,"lowConfidenceTrips":0,"outagesCaught":0,"detectMs":[],"probes":0,"passedDuringOutage":[600,600],"blockedHealthy":[0,0]},` +
		`"proposed":{"trips":3,"lowConfidenceTrips":0,"outagesCaught":1,"detectMs":[975],"probes":3,"passedDuringOutage":[49,114],"blockedHealthy":[100,100]}}`; string(b) != want {
		t.Fatalf("whatIf %s\nwant   %s", b, want)
	}
	if ra := one(t, fs, KindRuleAdvice).Facts.(*RuleAdviceFacts); ra.Suggest.MaxAllowedRtMs != 0 {
		t.Errorf("rule-advice still proposes %+v", ra.Suggest)
	}
	ch := p.Changes()
	if len(ch) != 1 || ch[0].String() != "threshold 1 -> 0.5" {
		t.Fatalf("changes %+v", ch)
	}
	// The finding agrees with its plan: it keeps its own value and words.
	x := one(t, fs, KindInertRule)
	if s := x.Facts.(*InertRuleFacts).Suggest; s == nil || s.Threshold != 0.5 || x.Advice != "lower threshold from 1 to 0.5 so that a window where more than half the calls are slow trips the breaker, as every window it let through held" {
		t.Fatalf("finding %+v", x)
	}
	// A Java rule's plan: Java gives no histogram, so no threshold of a
	// slow ratio can be checked.
	java := p.Current
	java.Semantics = core.SemanticsJava
	jp := Plan{Current: java, Proposed: RuleValues{Threshold: 0.5}, Safe: true, java: true}
	if ch := jp.Changes(); len(ch) != 1 || ch[0].String() != "slowRatioThreshold 1 -> 0.5" {
		t.Fatalf("java changes %+v", ch)
	}
}

// An error count above the calls a window holds cannot trip either: a
// Java count of 2000 in a 10 s window of 1000 calls (minRequestAmount 5).
// For 30 s, 8 calls in 10 fail: the three tumbling windows from 60 s to
// 90 s, where half the calls or more failed, let 2400 of their 3000 through.
// The proposal is a count of a tenth of the busiest window: 100.
func TestInertErrorCountOverTheWindow(t *testing.T) {
	const res = "POST:/api/pay"
	r := core.BreakerRule{Resource: res, Strategy: core.ErrorCount, Threshold: 2000, MinRequestAmount: 5,
		StatIntervalMs: 10000, RetryTimeoutMs: 30000, Semantics: core.SemanticsJava}
	f, x := firesInert(t, func(e *Feeder) int64 {
		appFleet(e, "pay", 1, t0, "v1", r)
		for at := t0; at < t0+120000; at += 500 {
			var errs int64
			if at >= t0+60000 && at < t0+90000 {
				errs = 40
			}
			e.Bucket("pay-1", selfBucket(res, at, 50, 0, 4, 0, errs))
		}
		return t0 + 120000
	}, true)
	if !x.CountOver || x.RatioOne || *x.BadPassed != 2400 || x.BadWindowCalls != 3000 || x.MaxWindowRequests != 1000 ||
		*x.Suggest != (InertSuggest{Threshold: 100}) {
		t.Fatalf("%+v", x)
	}
	if want := "an error count of 2000 (count) is more than the 1000 completions the busiest 10000 ms window held, so this breaker cannot trip at the traffic seen, however the downstream fails: " +
		"2400 failed calls passed while it stayed closed, of 3000 in 3 windows where half the calls or more failed (over 30 s)"; f.Summary != want {
		t.Errorf("summary %q", f.Summary)
	}
	if want := "lower count from 2000 to 100, a tenth of the busiest window, so that the breaker trips when that many of a window's calls fail"; f.Advice != want {
		t.Errorf("advice %q", f.Advice)
	}
	// A count within a window's calls is no finding of this kind.
	r.Threshold = 500
	firesInert(t, func(e *Feeder) int64 {
		appFleet(e, "pay", 1, t0, "v1", r)
		traffic(e, []string{"pay-1"}, res, t0, t0+120000, 50)
		return t0 + 120000
	}, false)
}
