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
		Seed:     83,
		Script:   j.Script,
		Expect: []Expect{
			// The breakers opened 7 times, each on 5 to 9 calls (Java
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
