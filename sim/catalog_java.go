package sim

import (
	"time"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/fixtures/expect"
)

// javaPriceRule is field report 000's rule on its own stack, Java Sentinel
// 1.8, as the poller reads it from /getRules: slow ratio 0.5 over 200 ms
// (grade 0, count 200, slowRatioThreshold 0.5), minRequestAmount 5, a 1 s
// window, timeWindow 10 s.
func javaPriceRule() core.BreakerRule {
	return core.BreakerRule{Resource: priceRes, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 200, Threshold: 0.5,
		MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, RetryTimeoutMs: 10000,
		Semantics: core.SemanticsJava}
}

// JavaLowTrafficTrips: field report 000 on Java Sentinel 1.8, read by the
// collector's Java poller. The report's gateways tripped a healthy price
// service on a few slow calls in a 1 s window; Java exposes no breaker
// state, so the trips are inferred from the per-second counts, and their
// windows bounded by them. The gateways' process start is not known (the
// transport does not give it): coldStart is unknown, not 0.
func JavaLowTrafficTrips() *Scenario {
	j := javaLowTrafficService()
	return &Scenario{
		Name:  "java-low-traffic-trips",
		Title: "Java gateways trip a healthy price service on a few slow calls",
		Description: "Two Java Sentinel 1.8.6 gateways, read by the collector's Java poller, call priceService:queryPrice " +
			"at about 10 req/s each under a slow-ratio degrade rule (count 200 ms, slowRatioThreshold 0.5, " +
			"minRequestAmount 5, statIntervalMs 1000, timeWindow 10 s). The price service is healthy (p99 68 ms), " +
			"but the network jitters: for a second and a half, 7 calls in 10 take 300-400 ms, and a breaker opens on " +
			"5 to 7 calls; its probe 10 s later finds the service fast and closes it. Once, on the first gateway, " +
			"the jitter lasts 25 s: its probe, fast by luck, closes the breaker, which trips again 0.7 s later, and " +
			"the next probe fails.",
		Duration: 4 * mn,
		Seed:     271, // whose draws play the story above (TestJavaLowTrafficTripsAgainstItsBreakers)
		Script:   j.Script,
		Expect: []Expect{
			// The breakers opened 7 times, each on 5 to 7 calls (Java
			// counts a 1 s window in one bucket). 5 trips closed at their
			// first probe: gateway-1 at 0:30 and 1:30, gateway-2 at 0:55,
			// 1:30 and 3:00. Inferred, each rested on at most the 5 to 7
			// calls its second completed; the weakest on at most 5, on
			// which Java trips with 3 slow (bound 0.33). The trip at 2:10
			// is not counted: the breaker tripped again 0.7 s after its
			// probe closed it (dated to the next second: within the 1 s
			// statIntervalMs); nor is the one after it, whose first probe
			// failed.
			{Kind: "low-confidence-trip", Severity: "warning", App: j.App, Resource: priceRes, Instances: j.Instances,
				Facts: map[string]any{
					"count": 5, "atThreshold": 0, "closedAtFirstProbe": 5, "coldStart": nil, "inferred": true,
					"worst": map[string]any{"k": 3, "n": 5, "lower": 0.33},
				}},
			// Java sends no histogram: no healthy p99, no RT advice.
			{Kind: "rule-advice", Severity: "info", App: j.App, Resource: priceRes, Instances: j.Instances,
				Facts: map[string]any{"qps": 10.1, "windowRequests": 10.1, "minRequestSeconds": 0.5, "p99Ms": nil}},
		},
		// Java's counts have no slow calls (a metric line gives the mean
		// response time alone): the replay's breaker never trips, so no
		// change can be checked, and none is proposed.
		ExpectPlans: []expect.Plan{{
			App: j.App, Resource: priceRes, Rule: "breaker", Instances: j.Instances,
			Because: []string{"low-confidence-trip", "rule-advice"}, Safe: false,
			Why: "no safe change found: the input does not tell which calls were slow (no response-time histogram and no slow count: " +
				"Java Sentinel's metric lines give a second's mean response time), so a slow-ratio rule cannot be replayed on it and no change can be checked",
			WhatIf: &whatif.Result{StepMs: 1000, Estimated: true,
				Current: whatif.Metrics{DetectMs: []int64{}}, Proposed: whatif.Metrics{DetectMs: []int64{}}},
		}},
	}
}

// javaLowTrafficService is JavaLowTrafficTrips' fleet.
func javaLowTrafficService() *JavaService {
	jitter := func(from, length time.Duration, share float64, insts ...string) Fault {
		return Fault{From: from, To: from + length, Share: share, Latency: Uniform{300 * ms, 400 * ms}, Instances: insts}
	}
	return &JavaService{
		App: "mall-gateway", Instances: []string{"mall-gateway-1", "mall-gateway-2"}, Version: "1.8.6",
		Rules:    RuleChange{Breakers: []core.BreakerRule{javaPriceRule()}},
		Resource: priceRes, QPS: 10,
		Calls: &JavaCalls{
			Latency: LogNormal{Median: 22 * ms, P99: 68 * ms},
			Faults: []Fault{
				jitter(30*sec, 1500*ms, 0.7, "mall-gateway-1"),
				jitter(55*sec, 1500*ms, 0.7, "mall-gateway-2"),
				jitter(90*sec, 1500*ms, 0.7),
				jitter(130*sec, 25*sec, 0.8, "mall-gateway-1"),
				jitter(180*sec, 1500*ms, 0.7, "mall-gateway-2"),
			},
		},
	}
}

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
		Resource: memberRes, QPS: 30, Calls: &JavaCalls{Latency: Uniform{15 * ms, 45 * ms}},
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
		// no slow count, so a slow-ratio rule cannot be replayed.
		ExpectPlans: []expect.Plan{{
			App: "order", Resource: memberRes, Rule: "breaker", Instances: j.Instances,
			Because: []string{"rule-advice"},
			Why: "no safe change found: the input does not tell which calls were slow (no response-time histogram and no slow count: " +
				"Java Sentinel's metric lines give a second's mean response time), so a slow-ratio rule cannot be replayed on it and no change can be checked",
			WhatIf: &whatif.Result{StepMs: 1000, Estimated: true},
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
		Resource: memberRes, QPS: 60,
		Calls: &JavaCalls{
			Latency: LogNormal{Median: 30 * ms, P99: 120 * ms},
			Faults:  []Fault{{From: 90 * sec, To: 180 * sec, Share: 0.75, Latency: Uniform{2000 * ms, 2500 * ms}}},
		},
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
