package triage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// selfBucket is a 500 ms bucket of pass calls admitted and block refused,
// every completion in histogram slot slot, slow counted against bound
// (every completion is slower when the slot's lower edge is at or over
// it), err of them failed.
func selfBucket(res string, at, pass, block int64, slot int, bound uint64, err int64) BucketStat {
	b := BucketStat{Resource: res, Start: at, BucketMs: 500, HasHist: true,
		Metrics: core.Metrics{Pass: pass, Block: block, Complete: pass, Error: err, RtMax: core.HistogramBounds[slot]}}
	b.Hist[slot] = pass
	b.RtSum = pass * core.HistogramBounds[slot]
	if slot > 0 && uint64(core.HistogramBounds[slot-1]) >= bound {
		b.Slow = pass
	}
	return b
}

// pushedBound plays a slow-ratio rule of maxAllowedRtMs 100 on one
// instance for 60 s of 10 calls per 500 ms bucket, all in slot 4 (11-20
// ms): 1200 healthy calls. At 60 s a push sets the bound to bound ms. When
// every call is then slow, the breaker trips on the first 20 of them (1 s,
// its minRequestAmount) and each probe, 10 s later, is a healthy call
// counted slow: it opens again, to 180 s. It returns the end and the
// number of entries into OPEN.
func pushedBound(e *Feeder, res string, bound uint64) (end int64, opens int64) {
	r := slowRule(res)
	r.MaxAllowedRtMs, r.StatIntervalMs, r.StatSlidingWindowBucketCount = 100, 1000, 2
	appFleet(e, "order", 1, t0, "v1", r)
	for at := t0; at < t0+60000; at += 500 {
		e.Bucket("order-1", selfBucket(res, at, 10, 0, 4, r.MaxAllowedRtMs, 0))
	}
	r.MaxAllowedRtMs = bound
	e.Rules("order-1", t0+60000, "v2", []core.BreakerRule{r}, nil)
	e.Bucket("order-1", selfBucket(res, t0+60000, 10, 0, 4, bound, 0))
	e.Bucket("order-1", selfBucket(res, t0+60500, 10, 0, 4, bound, 0))
	if uint64(core.HistogramBounds[3]) < bound {
		return t0 + 61000, 0 // not every call slow: no trip
	}
	trip := trans(res, core.Closed, core.Open, t0+61000)
	trip.Snapshot = core.WindowSnapshot{Total: 20, Bad: 20, Value: 1}
	e.Transition("order-1", trip)
	opens = 1
	for at := t0 + 61000; at < t0+180000; at += 500 {
		probe := (at-(t0+61000))%10000 == 0 && at > t0+61000
		pass := int64(0)
		if probe {
			pass = 1
			e.Transition("order-1", trans(res, core.Open, core.HalfOpen, at))
		}
		e.Bucket("order-1", selfBucket(res, at, pass, 10-pass, 4, bound, 0))
		if probe {
			p := trans(res, core.HalfOpen, core.Open, at+15)
			p.Probe = &core.Probe{RtMs: 15}
			e.Transition("order-1", p)
			opens++
		}
	}
	return t0 + 180000, opens
}

// TestSelfInflictedSlowRatio: a bound of 5 ms against calls of 11-20 ms.
// The calls that passed: 1200 before the push, 20 that tripped it, 11
// probes: 1231, all in the 11-20 ms slot, so every one is surely slower
// than 5 ms (healthyBadShare 1) and their median is over 10 ms. The
// breaker opened 12 times. Their p99 is at most 20 ms, at least 11: the
// advice is 2 x 10 = 20 ms. The sawtooth of the same rule names the rule
// as its cause and proposes no retryTimeoutMs; the plan proposes
// maxAllowedRtMs 20 alone, replayed with outages judged by that bound.
func TestSelfInflictedSlowRatio(t *testing.T) {
	const res = "GET:/member/info"
	e := NewFeeder(Config{})
	end, opens := pushedBound(e, res, 5)
	if opens != 12 {
		t.Fatalf("opens %d", opens)
	}
	fs := e.Findings(end)
	f := one(t, fs, KindSelfInflicted)
	x := f.Facts.(*SelfInflictedFacts)
	if f.Severity != Critical || f.PeakSeverity != Critical || f.From != t0+61000 || f.To != t0+171015 ||
		len(f.Instances) != 1 || f.Instances[0] != "order-1" {
		t.Fatalf("finding %+v", f)
	}
	if x.Calls != 1231 || x.Bad != 1231 || x.MedianFloorMs != 10 || x.MedianMs != 20 || x.P99Ms != 20 || x.Inferred {
		t.Fatalf("facts %+v", x)
	}
	b, _ := json.Marshal(x)
	if want := `{"rule":{"resource":"GET:/member/info","strategy":0,"retryTimeoutMs":10000,"minRequestAmount":20,"statIntervalMs":1000,"statSlidingWindowBucketCount":2,"maxAllowedRtMs":5,"threshold":0.5,"probeNum":0},` +
		`"healthyBadShare":1,"trips":12,"suggest":{"maxAllowedRtMs":20}}`; string(b) != want {
		t.Fatalf("facts %s\nwant  %s", b, want)
	}
	if want := "maxAllowedRtMs 5 counts 100 % of the 1231 calls that passed as slow, their median over 10 ms: the rule, not the downstream, opened this breaker 12 times"; f.Summary != want {
		t.Errorf("summary %q", f.Summary)
	}
	if want := "raise maxAllowedRtMs from 5 to 20 ms, 2x the least the calls' p99 can be (over 10, at most 20 ms), so that a healthy call no longer counts as slow"; f.Advice != want {
		t.Errorf("advice %q", f.Advice)
	}

	st := one(t, fs, KindSawtooth)
	y := st.Facts.(*SawtoothFacts)
	if y.Cause != KindSelfInflicted || y.Suggest != (SawtoothSuggest{}) || y.Count != 11 {
		t.Fatalf("sawtooth %+v", y)
	}
	if want := "the rule, not the downstream, keeps this breaker open (self-inflicted): the failed probes took 15 ms (median), calls the rule counts bad; change the rule as that finding says, not retryTimeoutMs (10000 ms)"; st.Advice != want {
		t.Errorf("sawtooth advice %q", st.Advice)
	}
	if strings.Contains(st.Advice, "raise retryTimeoutMs") || strings.Contains(st.Advice, "stayed down") {
		t.Errorf("sawtooth blames the downstream: %q", st.Advice)
	}

	plans := e.Plans(end, fs)
	if len(plans) != 1 {
		t.Fatalf("plans %+v", plans)
	}
	p := plans[0]
	if !p.Safe || p.Proposed != (RuleValues{MaxAllowedRtMs: 20}) || p.Why != "" || p.WhatIf == nil {
		t.Fatalf("plan %+v", p)
	}
	if !containsKind(p.Because, KindSelfInflicted) || containsKind(p.Because, KindSawtooth) {
		t.Errorf("because %v", p.Because)
	}
	// The current rule's replay (over the whole input, the 60 s before
	// the push too) trips on the first second of healthy calls and fails
	// every probe, one each 10 s: 17 over the 180 s; it blocks every other
	// call of the 3600 offered, 3600 - 20 - 17 = 3563. The proposal, whose
	// bound the 11-20 ms calls never pass, never trips. No outage: by the
	// proposal's bound none of the calls is bad.
	b, _ = json.Marshal(p.WhatIf)
	if want := `{"stepMs":500,"estimated":true,` +
		`"current":{"trips":1,"lowConfidenceTrips":0,"outagesCaught":0,"detectMs":[],"probes":17,"passedDuringOutage":[0,0],"blockedHealthy":[3563,3563]},` +
		`"proposed":{"trips":0,"lowConfidenceTrips":0,"outagesCaught":0,"detectMs":[],"probes":0,"passedDuringOutage":[0,0],"blockedHealthy":[0,0]}}`; string(b) != want {
		t.Errorf("whatIf %s\nwant   %s", b, want)
	}
	// rule-advice proposes the same bound from the healthy p99 before the
	// push: one value for the field.
	if ra := one(t, fs, KindRuleAdvice).Facts.(*RuleAdviceFacts); ra.Suggest.MaxAllowedRtMs != 20 {
		t.Errorf("rule-advice %+v", ra.Suggest)
	}
	for _, g := range fs {
		if k, v, ok := findingValues(&g); ok && k.resource == res && v.RetryTimeoutMs > 0 {
			t.Errorf("%s proposes retryTimeoutMs %d", g.Kind, v.RetryTimeoutMs)
		}
	}
}

func containsKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// A bound of 10 ms, the lower edge of the calls' 11-20 ms slot, is at or
// under their median: every call is slower. A bound of 20 ms is not: the
// calls may all take 20 ms or less, and no push of it trips the breaker.
func TestSelfInflictedBoundAtTheMedian(t *testing.T) {
	const res = "GET:/member/info"
	e := NewFeeder(Config{})
	end, _ := pushedBound(e, res, 10)
	if x := one(t, e.Findings(end), KindSelfInflicted).Facts.(*SelfInflictedFacts); x.HealthyBadShare != 1 {
		t.Fatalf("facts %+v", x)
	}
	e = NewFeeder(Config{})
	end, _ = pushedBound(e, res, 20)
	if got := only(t, e.Findings(end), KindSelfInflicted); len(got) != 0 {
		t.Fatalf("a bound over the calls: %+v", got)
	}
}

// A healthy stream gives no self-inflicted finding, and neither does a
// sound rule that trips on a real outage: 60 s of 11-20 ms calls under a
// 100 ms bound, then 30 s of 2 s calls that trip it and fail two probes,
// then the downstream recovers and a probe closes it. The calls that
// passed are the healthy ones (1200), the 20 slow ones that tripped it and
// the probes: their median is over 10 ms, under the bound.
func TestSelfInflictedNotOnHealthyOrRealOutage(t *testing.T) {
	const res = "GET:/member/info"
	r := slowRule(res)
	r.MaxAllowedRtMs, r.StatIntervalMs, r.StatSlidingWindowBucketCount = 100, 1000, 2
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", r)
	for at := t0; at < t0+120000; at += 500 {
		e.Bucket("order-1", selfBucket(res, at, 10, 0, 4, 100, 0))
	}
	if got := only(t, e.Findings(t0+120000), KindSelfInflicted); len(got) != 0 {
		t.Fatalf("healthy stream: %+v", got)
	}

	e = NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", r)
	for at := t0; at < t0+60000; at += 500 {
		e.Bucket("order-1", selfBucket(res, at, 10, 0, 4, 100, 0))
	}
	e.Bucket("order-1", selfBucket(res, t0+60000, 10, 0, 10, 100, 0))
	e.Bucket("order-1", selfBucket(res, t0+60500, 10, 0, 10, 100, 0))
	end := sawtoothRun(e, "order-1", res, t0+61000, 10000, 2)
	closeBreaker(e, "order-1", res, end+10000)
	for at := end + 10000; at < end+70000; at += 500 {
		e.Bucket("order-1", selfBucket(res, at, 10, 0, 4, 100, 0))
	}
	fs := e.Findings(end + 70000)
	if got := only(t, fs, KindSelfInflicted); len(got) != 0 {
		t.Fatalf("a real outage: %+v", got)
	}
}

// An error-count breaker whose threshold the healthy error rate exceeds
// in every window: 100 calls a second, 5 % failing, a 1 s window, so a
// window holds 5 errors on average (Poisson); Java trips above the count.
// A count of 1 trips on 2 errors, which 96 % of windows hold (1 - e^-5 x
// 6): self-inflicted. A count of 2 trips on 3, which 87.5 % hold: not 19
// windows in 20, no finding. The proposal is twice the 9 errors a healthy
// window holds 19 times in 20 (P(N <= 8) = 0.932, P(N <= 9) = 0.968): 18.
func TestSelfInflictedErrorCount(t *testing.T) {
	const res = "POST:/api/pay"
	feed := func(count float64) (*Feeder, int64) {
		r := core.BreakerRule{Resource: res, Strategy: core.ErrorCount, Threshold: count, MinRequestAmount: 5,
			StatIntervalMs: 1000, RetryTimeoutMs: 5000, Semantics: core.SemanticsJava}
		e := NewFeeder(Config{})
		appFleet(e, "pay", 1, t0, "v1", r)
		// Trips, each followed 5 s later by a probe that succeeds, and a
		// trip again within the next second: the traffic passes half the
		// time (50 calls a 500 ms bucket, 2 or 3 of them failing).
		at := t0
		for cycle := 0; cycle < 20; cycle++ {
			for k := 0; k < 2; k++ {
				e.Bucket("pay-1", selfBucket(res, at, 50, 0, 4, 0, int64(2+k)))
				at += 500
			}
			tr := core.Transition{Resource: res, Strategy: core.ErrorCount, From: core.Closed, To: core.Open, AtMs: at, Threshold: count, RetryTimeoutMs: 5000,
				Snapshot: core.WindowSnapshot{Total: 100, Bad: 5, Value: 5}}
			e.Transition("pay-1", tr)
			for k := 0; k < 10; k++ {
				e.Bucket("pay-1", selfBucket(res, at, 0, 50, 4, 0, 0))
				at += 500
			}
			e.Transition("pay-1", core.Transition{Resource: res, Strategy: core.ErrorCount, From: core.Open, To: core.HalfOpen, AtMs: at, Threshold: count, RetryTimeoutMs: 5000})
			e.Transition("pay-1", core.Transition{Resource: res, Strategy: core.ErrorCount, From: core.HalfOpen, To: core.Closed, AtMs: at + 10, Threshold: count, RetryTimeoutMs: 5000,
				Probe: &core.Probe{RtMs: 15}})
		}
		return e, at
	}
	e, end := feed(1)
	fs := e.Findings(end)
	f := one(t, fs, KindSelfInflicted)
	x := f.Facts.(*SelfInflictedFacts)
	// 20 cycles of 100 calls passed, 5 failing: 2000 calls, 100 errors.
	// The offered load is 100 a second over the 120 s reported.
	if x.Calls != 2000 || x.Errors != 100 || x.HealthyBadShare != 0.05 || x.Trips != 20 || x.WindowCalls != 100 || x.ErrorsPerWindow != 5 ||
		x.HealthyErrorsQ95 != 9 || x.Suggest == nil || x.Suggest.Threshold != 18 || f.Severity != Critical {
		t.Fatalf("facts %+v suggest %+v severity %v", x, x.Suggest, f.Severity)
	}
	if want := "an error count of 1 trips this breaker on the downstream's healthy errors: 5.0 % of the 2000 calls that passed failed, 5.0 in a 1000 ms window of 100.0 calls, enough to trip it in 19 windows of 20; it opened 20 times"; f.Summary != want {
		t.Errorf("summary %q", f.Summary)
	}
	if want := "raise count from 1 to 18, 2x the 9 errors a healthy window holds 19 times in 20, so that only a failing downstream trips the breaker"; f.Advice != want {
		t.Errorf("advice %q", f.Advice)
	}
	e, end = feed(2)
	if got := only(t, e.Findings(end), KindSelfInflicted); len(got) != 0 {
		t.Fatalf("count 2: %+v", got)
	}
}

// Critical while the rule runs and the breaker keeps opening; once a push
// fixes the bound and the breaker closes, the finding stays, a warning
// (its peak critical), for the postmortem.
func TestSelfInflictedEnds(t *testing.T) {
	const res = "GET:/member/info"
	e := NewFeeder(Config{})
	end, _ := pushedBound(e, res, 5)
	r := slowRule(res)
	r.MaxAllowedRtMs, r.StatIntervalMs, r.StatSlidingWindowBucketCount = 20, 1000, 2
	e.Rules("order-1", end, "v3", []core.BreakerRule{r}, nil)
	for at := end; at < end+60000; at += 500 {
		e.Bucket("order-1", selfBucket(res, at, 10, 0, 4, 20, 0))
	}
	f := one(t, e.Findings(end+60000), KindSelfInflicted)
	if f.Severity != Warning || f.PeakSeverity != Critical || f.Facts.(*SelfInflictedFacts).Rule.MaxAllowedRtMs != 5 {
		t.Fatalf("finding %+v", f)
	}
}

// A finding whose value its plan changed shows the plan's value, never its
// own: self-inflicted's bound and inert-rule's threshold, as every other
// proposal.
func TestSelfInflictedAndThresholdAgreeWithPlans(t *testing.T) {
	rule := core.BreakerRule{Resource: "r", Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 5, Threshold: 1, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 10000}
	fs := []Finding{
		{Kind: KindSelfInflicted, App: "a", Resource: "r", Facts: &SelfInflictedFacts{Rule: rule, Suggest: &SelfInflictedSuggest{MaxAllowedRtMs: 40}}},
		{Kind: KindInertRule, App: "a", Resource: "r", Facts: &InertRuleFacts{Reason: InertCannotTrip, Rule: RuleSet{Breakers: []core.BreakerRule{rule}},
			RatioOne: true, Suggest: &InertSuggest{Threshold: 0.5}}},
	}
	if ps := Proposals(fs); len(ps) != 2 || ps[0].Values != (RuleValues{MaxAllowedRtMs: 40}) || ps[1].Values != (RuleValues{Threshold: 0.5}) {
		t.Fatalf("proposals %+v", ps)
	}
	plan := Plan{App: "a", Resource: "r", Rule: "breaker", Current: planRule(&rule), Proposed: RuleValues{MaxAllowedRtMs: 20, Threshold: 0.6}, Safe: true,
		Because: []Kind{KindInertRule, KindSelfInflicted}}
	AgreeWithPlans(fs, []Plan{plan})
	x, y := fs[0].Facts.(*SelfInflictedFacts), fs[1].Facts.(*InertRuleFacts)
	if *x.Suggest != (SelfInflictedSuggest{MaxAllowedRtMs: 20}) || *y.Suggest != (InertSuggest{Threshold: 0.6}) {
		t.Fatalf("suggest %+v %+v", *x.Suggest, *y.Suggest)
	}
	const say = "the plan for this rule, replayed on this input's traffic: threshold 1 -> 0.6 and maxAllowedRtMs 5 -> 20"
	if fs[0].Advice != say || fs[1].Advice != say {
		t.Fatalf("advice %q / %q", fs[0].Advice, fs[1].Advice)
	}
	plan.Safe, plan.Proposed, plan.Why = false, RuleValues{}, "no safe change found: because"
	fs[0].Facts = &SelfInflictedFacts{Rule: rule, Suggest: &SelfInflictedSuggest{MaxAllowedRtMs: 40}}
	AgreeWithPlans(fs[:1], []Plan{plan})
	if x := fs[0].Facts.(*SelfInflictedFacts); x.Suggest != nil || fs[0].Advice != plan.Why {
		t.Fatalf("unsafe plan: %+v %q", x.Suggest, fs[0].Advice)
	}
}
