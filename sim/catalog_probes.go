package sim

import (
	"time"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/fixtures/expect"
)

// Downstreams that stay down for minutes while the breakers in front of
// them probe every few seconds, and every probe fails: a sawtooth, whose
// advice must never be to loosen what the breaker counts as bad.

const (
	searchRes = "GET:http://search-service/api/search"
	couponRes = "POST:http://coupon-service/api/redeem"
)

// Brownout: the search service answers every call in 340-390 ms for 140 s,
// just over the breakers' 300 ms bound.
func Brownout() *Scenario {
	return &Scenario{
		Name:  "brownout",
		Title: "a brownout just over the slow-call bound",
		Description: "Three listing instances call the search service at about 60 req/s each with a slow-ratio breaker " +
			"(0.5 over 300 ms, minRequestAmount 100, a 5 s window of 5 buckets that holds about 300 calls) and " +
			"retry timeouts of 10, 11.5 and 13 s, one per instance. Healthy searches take 60 ms, 135 ms at p99. From " +
			"0:40 to 3:00 the search service browns out: every call takes 340-390 ms. Each breaker opens on " +
			"hundreds of slow calls 2 to 3 s in, and every probe meets the brownout and reopens it, up to 13 times " +
			"in a row, until the service is back and a probe closes it. The rule caught a real degradation: raising " +
			"maxAllowedRtMs to 400 would have let the brownout through.",
		Duration: 4 * mn,
		Seed:     31,
		Downstreams: []*Downstream{{
			Name:    "search-service",
			Latency: LogNormal{Median: 60 * ms, P99: 135 * ms},
			Faults:  []Fault{{From: 40 * sec, To: 180 * sec, Latency: Uniform{340 * ms, 390 * ms}}},
		}},
		Instances: fleetOf("listing", 3, func(i int, in *Instance) {
			in.Calls = []Call{diurnalCall(searchRes, "search-service", 2*sec, 60, 4*mn, i)}
			in.Rules = always([]core.BreakerRule{slowRule(searchRes, 300, 0.5, 100, 5000, 5, 10000+uint32(i)*1500)}, nil)
		}),
		Expect: []Expect{
			// Probes of 359 ms are under 2 x maxAllowedRtMs, but the healthy
			// p99 (over 100 ms, at most 200) is not above half of it: the
			// search service is failing, and the retry timeout is what to
			// change. No rule-advice: 300 ms is at least 2 x 100 ms.
			{Kind: "sawtooth", Severity: "warning", App: "listing", Resource: searchRes,
				Instances: names("listing", 3), Facts: map[string]any{
					"count": 13, "periodMs": 11872, "probeRtMs": 359,
					"suggest": map[string]any{"retryTimeoutMs": 30000, "maxAllowedRtMs": nil},
				}},
		},
		// Fewer probes into the brownout, caught as soon; the longer wait
		// blocks more calls after it ends.
		ExpectPlans: []expect.Plan{retryPlan("listing", searchRes, names("listing", 3), 30000, []uint32{30000, 35000, 40000},
			&whatif.Result{StepMs: 500, Estimated: true,
				Current: whatif.Metrics{Trips: 3, OutagesCaught: 3, DetectMs: []int64{2338, 2204, 2798}, Probes: 37,
					PassedDuringOutage: whatif.Range{509, 515}, BlockedHealthy: whatif.Range{302, 1895}},
				Proposed: whatif.Metrics{Trips: 3, OutagesCaught: 3, DetectMs: []int64{2338, 2204, 2798}, Probes: 14,
					PassedDuringOutage: whatif.Range{485, 494}, BlockedHealthy: whatif.Range{3245, 3564}}},
			"sawtooth")},
	}
}

// HerdSawtooth: six checkout instances with one rule trip together on a
// coupon service that is down for two minutes, and probe it together.
func HerdSawtooth() *Scenario {
	return &Scenario{
		Name:  "herd-sawtooth",
		Title: "six instances probing a dead downstream together",
		Description: "Six checkout instances redeem coupons at about 50 req/s each with the same error-ratio breaker " +
			"(0.5, minRequestAmount 20, a 1 s window, retryTimeoutMs 10000). From 0:30 to 2:30 the coupon service " +
			"is down and refuses every call at once: the six breakers open within a few milliseconds of each other, " +
			"and every 10 s all six let a probe through within a third of a second, and each fails, eleven times " +
			"in a row, until the service is back and the six probes close them together.",
		Duration: 200 * sec,
		Seed:     32,
		Downstreams: []*Downstream{{
			Name:    "coupon-service",
			Latency: LogNormal{Median: 20 * ms, P99: 80 * ms},
			Faults:  []Fault{{From: 30 * sec, To: 150 * sec, ErrorRate: 1, Latency: Uniform{1 * ms, 3 * ms}}},
		}},
		Instances: fleetOf("checkout", 6, func(i int, in *Instance) {
			in.Calls = []Call{diurnalCall(couponRes, "coupon-service", time.Second, 50, 200*sec, i)}
			in.Rules = always([]core.BreakerRule{errRule(couponRes, 0.5, 20, 1000, 2, 10000)}, nil)
		}),
		// One retry timeout for both findings and the plan: the sawtooth's
		// 30 s, spread by a third over the six instances.
		Expect: []Expect{
			{Kind: "sawtooth", Severity: "warning", App: "checkout", Resource: couponRes,
				Instances: names("checkout", 6), Facts: map[string]any{
					"count": 11, "periodMs": 10019, "probeRtMs": 2,
					"suggest": map[string]any{"retryTimeoutMs": 30000, "maxAllowedRtMs": nil},
				}},
			{Kind: "sync-half-open", Severity: "warning", App: "checkout", Resource: couponRes,
				Instances: names("checkout", 6), Facts: map[string]any{
					"count": 12, "spreadMs": 336,
					"suggest": map[string]any{"retryTimeoutMs": map[string]any{"min": 30000, "max": 40000}},
				}},
		},
		// 51 failed probes fewer, each one fast call, for thousands of
		// calls refused after the coupon service is back.
		ExpectPlans: []expect.Plan{retryPlan("checkout", couponRes, names("checkout", 6), 30000,
			[]uint32{30000, 32000, 34000, 36000, 38000, 40000},
			&whatif.Result{StepMs: 500, Estimated: true,
				Current: whatif.Metrics{Trips: 6, OutagesCaught: 6, DetectMs: []int64{512, 509, 510, 512, 514, 509}, Probes: 74,
					PassedDuringOutage: whatif.Range{205, 332}, BlockedHealthy: whatif.Range{5, 1039}},
				Proposed: whatif.Metrics{Trips: 6, OutagesCaught: 6, DetectMs: []int64{512, 509, 510, 512, 514, 509}, Probes: 23,
					PassedDuringOutage: whatif.Range{155, 192}, BlockedHealthy: whatif.Range{3987, 5007}}},
			"sawtooth", "sync-half-open")},
	}
}
