package sim

import (
	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/fixtures/expect"
)

// Java Sentinel rules that judge their own service wrong (field reports
// 003 and 004): a slow-ratio count typed as a ratio, and a slow-ratio
// rule pushed without its ratio.

// javaSlowRule is a Java Sentinel 1.8 slow-ratio degrade rule as the Java
// poller reads it: count is the response-time bound, Math.round'ed to
// whole ms; slowRatioThreshold, when the JSON leaves it out, is 1.0.
func javaSlowRule(res string, maxRtMs uint64, threshold float64, minReq uint64, statMs, retryMs uint32) core.BreakerRule {
	return core.BreakerRule{
		Resource: res, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: maxRtMs, Threshold: threshold,
		MinRequestAmount: minReq, StatIntervalMs: statMs, RetryTimeoutMs: retryMs,
		Semantics: core.SemanticsJava, LimitApp: "default",
	}
}

// JavaCountHalf: a Java slow-ratio rule whose count 0.5 was meant as the
// ratio (field report 003). For grade 0, count is the response-time
// bound: Math.round(0.5) is 1 ms, and the ratio, left out, is 1.0. Every
// call of a healthy 15-45 ms service is slow, so the breaker opens on the
// first five calls and every probe, a healthy call, opens it again.
func JavaCountHalf() *Scenario {
	rule := javaSlowRule(memberRes, 1, 1.0, 5, 1000, 10000)
	j := &JavaService{
		App: "order", Instances: names("order", 2), Version: "1.8.6",
		Rules:    RuleChange{Breakers: []core.BreakerRule{rule}},
		Resource: memberRes, QPS: 30, Latency: Uniform{15 * ms, 45 * ms},
	}
	return &Scenario{
		Name:  "java-count-half",
		Title: "a Java slow-ratio count of 0.5 trips a healthy service for good",
		Description: "Two Java Sentinel 1.8.6 order instances, read by the collector's Java poller, call the member " +
			"service at about 30 req/s each; it answers every call in 15-45 ms. Their degrade rule is grade 0 (slow " +
			"ratio) with count 0.5, meant as a 50 % ratio, timeWindow 10, minRequestAmount 5, statIntervalMs 1000 and " +
			"no slowRatioThreshold. For grade 0 count is the response-time bound: Math.round(0.5) is 1 ms, so every " +
			"call is slow. The breakers open on the first five calls, and every probe 10 s later, a healthy call of " +
			"about 30 ms, opens them again: the member service is cut off for the whole recording by the rule alone.",
		Duration: 4 * mn,
		Seed:     81,
		Script:   j.Script,
		Expect: []Expect{
			// Each instance's breaker opens in its first second and fails a
			// probe every 10 s to the end: 1 + 23 entries into OPEN on each.
			// The rule, not the member service, keeps it open: the sawtooth
			// proposes no retry timeout.
			{Kind: "sawtooth", Severity: "critical", App: "order", Resource: memberRes, Instances: j.Instances,
				Facts: map[string]any{"count": 23, "periodMs": 10000, "probeRtMs": 31, "cause": "self-inflicted",
					"suggest": map[string]any{"retryTimeoutMs": nil, "maxAllowedRtMs": nil}}},
			// The calls that passed: the 5 or so of each first second and
			// the 23 probes, 59 in all, every second's mean 15-45 ms, over
			// the 1 ms bound. Java gives no histogram: no p99, no bound
			// proposed.
			{Kind: "self-inflicted", Severity: "critical", App: "order", Resource: memberRes, Instances: j.Instances,
				Facts: map[string]any{"rule": jsonValue(rule), "healthyBadShare": 1, "trips": 48, "inferred": true, "suggest": nil}},
			{Kind: "rule-advice", Severity: "info", App: "order", Resource: memberRes, Instances: j.Instances,
				Facts: map[string]any{"qps": 29.7, "windowRequests": 29.7, "minRequestSeconds": 0.17, "suggest": nil}},
		},
		// rule-advice's minRequestAmount 20 cannot be checked: Java sends
		// no slow count, so the replay of the 1 ms bound sees no slow call
		// and never trips, while the breakers opened.
		ExpectPlans: []expect.Plan{{
			App: "order", Resource: memberRes, Rule: "breaker", Instances: j.Instances,
			Because: []string{"rule-advice"},
			Why:     "no safe change found: the replay of the current rule never trips, while the recorded breakers opened 2 times, so no change can be checked on this input",
			WhatIf:  &whatif.Result{StepMs: 1000, Estimated: true},
		}},
	}
}

// JavaNoSlowRatio: a Java slow-ratio rule pushed without
// slowRatioThreshold (field report 004's JSON): Java takes 1.0, and the
// breaker trips only on a window of slow calls alone. For 90 s three
// calls in four take 2-2.5 s, and it never opens: Java judges a window at
// each completion from minRequestAmount on, so the first 40 completions
// of a second would all have to be slow (0.75^40, 1 in 100,000).
func JavaNoSlowRatio() *Scenario {
	rule := javaSlowRule(memberRes, 500, 1.0, 40, 1000, 30000)
	j := &JavaService{
		App: "order", Instances: names("order", 3), Version: "1.8.6",
		Rules:    RuleChange{Breakers: []core.BreakerRule{rule}},
		Resource: memberRes, QPS: 60, Latency: LogNormal{Median: 30 * ms, P99: 120 * ms},
		Faults: []Fault{{From: 90 * sec, To: 180 * sec, Share: 0.75, Latency: Uniform{2000 * ms, 2500 * ms}}},
	}
	return &Scenario{
		Name:  "java-no-slow-ratio",
		Title: "a Java slow-ratio rule without its ratio never trips",
		Description: "Three Java Sentinel 1.8.6 order instances, read by the collector's Java poller, call the member " +
			"service at about 60 req/s each under a degrade rule pushed as JSON with grade 0, count 500 (the 500 ms " +
			"bound), timeWindow 30, minRequestAmount 40 and statIntervalMs 1000, but no slowRatioThreshold: Java " +
			"takes 1.0, and trips only when every call of a window is slow. From 1:30 to 3:00 the member service's " +
			"database is slow and three calls in four take 2-2.5 s: each one-second window holds a few fast calls " +
			"among the slow ones, and the breaker never opens.",
		Duration: 210 * sec,
		Seed:     82,
		Script:   j.Script,
		Expect: []Expect{
			// 90 one-second windows on each of the 3 instances whose mean
			// response time was over 500 ms: 16438 calls let through. Java
			// reports means, so the count is inferred (every call of such a
			// second; about three in four were slow).
			{Kind: "inert-rule", Severity: "warning", App: "order", Resource: memberRes, Instances: j.Instances,
				Facts: map[string]any{"reason": "cannot-trip", "rule": ruleSet([]core.BreakerRule{rule}, nil),
					"badPassed": 16438, "inferred": true, "suggest": nil, "maxWindowRequests": nil}},
		},
		// Without a histogram the replay cannot tell which calls a
		// threshold of 0.5 would count: the change is not checked.
		ExpectPlans: []expect.Plan{{
			App: "order", Resource: memberRes, Rule: "breaker", Instances: j.Instances,
			Because: []string{"inert-rule"},
			Why:     "no safe change found: the input has no response-time histogram, so a new threshold of a slow-ratio rule cannot be checked on it",
		}},
	}
}
