package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/fixtures/expect"
)

const (
	ms  = time.Millisecond
	sec = time.Second
	mn  = time.Minute
)

// Catalog returns the recorded scenarios, sorted by name: the incidents of
// the field reports, a real outage and a healthy baseline. Each call builds
// them anew, so callers may change what they get.
func Catalog() []*Scenario {
	out := []*Scenario{
		PriceFalseTrip(),
		GrayColdStart(),
		SawtoothDBSlow(),
		RecoveryHerd(),
		RulePushPartial(),
		StartupNaked(),
		SharedResourceName(),
		RealOutage(),
		HealthyBaseline(),
		RulesWiped(),
		BreakerCannotTrip(),
		RuleNameCase(),
		PushMissed(),
		StartWithoutRules(),
		OutageErrorRamp(), OutageDBSlow(),
		VipThrottled(), LimitAppSelf(),
		JavaLowTrafficTrips(),
		Brownout(), HerdSawtooth(),
		RuleRevertRestart(), RuleOverwriteLoadRules(),
		WarmUpDeploy(),
		JavaCountHalf(), JavaNoSlowRatio(),
	}
	slices.SortFunc(out, func(a, b *Scenario) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Lookup returns the catalogue's scenario of that name, or the demo's
// ("demo").
func Lookup(name string) (*Scenario, bool) {
	if name == "demo" {
		return DemoScenario(), true
	}
	for _, s := range Catalog() {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Names are the names Lookup knows: "demo", then the catalogue's, sorted.
func Names() []string {
	out := []string{"demo"}
	for _, s := range Catalog() {
		out = append(out, s.Name)
	}
	return out
}

// names returns app-1 .. app-n.
func names(app string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", app, i+1)
	}
	return out
}

// fleetOf builds n instances of app, each finished by build.
func fleetOf(app string, n int, build func(i int, in *Instance)) []*Instance {
	out := make([]*Instance, n)
	for i, name := range names(app, n) {
		in := &Instance{App: app, Name: name}
		build(i, in)
		out[i] = in
	}
	return out
}

// always is one rule set loaded at start.
func always(breakers []core.BreakerRule, flows []core.FlowRule) []RuleChange {
	return []RuleChange{{At: 0, Breakers: breakers, Flows: flows}}
}

// retryEach is a plan's retryTimeoutMs of each instance: ms[i] for insts[i].
func retryEach(insts []string, ms ...uint32) map[string]expect.Values {
	out := make(map[string]expect.Values, len(insts))
	for i, name := range insts {
		out[name] = expect.Values{RetryTimeoutMs: ms[i]}
	}
	return out
}

// retryPlan is a safe plan for the breaker of app and res that proposes
// retryTimeoutMs retry, each instance its own value (each[i] for
// insts[i]), merged from the findings of kinds because and replayed as
// whatIf.
func retryPlan(app, res string, insts []string, retry uint32, each []uint32, whatIf *whatif.Result, because ...string) expect.Plan {
	return expect.Plan{
		App: app, Resource: res, Rule: "breaker", Instances: insts,
		Proposed: expect.Values{RetryTimeoutMs: retry}, PerInstance: retryEach(insts, each...),
		Because: because, Safe: true, WhatIf: whatIf,
	}
}

// slowRule is a slow-ratio breaker.
func slowRule(res string, maxRtMs uint64, threshold float64, minReq uint64, statMs, buckets, retryMs uint32) core.BreakerRule {
	return core.BreakerRule{
		Resource: res, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: maxRtMs, Threshold: threshold,
		MinRequestAmount: minReq, StatIntervalMs: statMs, StatSlidingWindowBucketCount: buckets, RetryTimeoutMs: retryMs,
	}
}

// errRule is an error-ratio breaker.
func errRule(res string, threshold float64, minReq uint64, statMs, buckets, retryMs uint32) core.BreakerRule {
	return core.BreakerRule{
		Resource: res, Strategy: core.ErrorRatio, Threshold: threshold,
		MinRequestAmount: minReq, StatIntervalMs: statMs, StatSlidingWindowBucketCount: buckets, RetryTimeoutMs: retryMs,
	}
}

// qpsRule is a direct, rejecting QPS limit.
func qpsRule(res string, qps float64) core.FlowRule {
	return core.FlowRule{Resource: res, Threshold: qps}
}

// A sound slow-ratio breaker for busy traffic: 20 requests at least, a ten
// second window of ten buckets, 30 s open.
func soundSlow(res string, maxRtMs uint64) core.BreakerRule {
	return slowRule(res, maxRtMs, 0.5, 20, 10000, 10, 30000)
}

func soundErr(res string) core.BreakerRule { return errRule(res, 0.5, 20, 10000, 10, 30000) }

const priceRes = "priceService:queryPrice"

// PriceFalseTrip: a healthy price service tripped by the gateways' own
// breaker. Slow ratio 0.5 over 200 ms, minRequestAmount 5, a one-second
// window and a ten-second timeWindow, at 10-12 requests per second per
// gateway: a neighbour pulling images jitters the network, three slow calls
// in a window of five trip it, and a probe that meets the next jitter trips
// it again, while the price service itself answers in 68 ms at p99. The
// gateways have been up for over a minute when the jitter starts: no trip is
// a cold start.
func PriceFalseTrip() *Scenario {
	return &Scenario{
		Name:  "price-false-trip",
		Title: "price service tripped while healthy",
		Description: "Four gateways call priceService:queryPrice at 10-12 req/s each with a slow-ratio breaker of " +
			"threshold 0.5, maxAllowedRtMs 200, minRequestAmount 5, a 1 s window and a 10 s retry timeout. " +
			"The price service is healthy (p99 68 ms), but from 1:20 to 4:20 a neighbour on the gateways' nodes pulls " +
			"images and the network jitters: for a second or so, about 3 calls in 5 take 300-400 ms. Three slow " +
			"calls out of five or six trip the breaker, dozens of times; the probe 10 s later mostly finds the " +
			"service fast and closes it, but three times it lands in the next jitter and trips it again.",
		Duration: 5 * mn,
		Seed:     17,
		Downstreams: []*Downstream{{
			Name:    "price-service",
			Latency: LogNormal{Median: 22 * ms, P99: 68 * ms},
			Jitter: &Jitter{
				Every: 12 * sec, Length: Uniform{800 * ms, 1800 * ms},
				Share: 0.6, Latency: Uniform{300 * ms, 400 * ms}, From: 80 * sec, To: 260 * sec,
			},
		}},
		Instances: fleetOf("gateway", 4, func(i int, in *Instance) {
			in.Calls = []Call{{
				Resource: priceRes, Downstream: "price-service",
				Traffic: Diurnal{Mean: 11, Swing: 0.1, Period: 5 * mn, Phase: time.Duration(i) * mn},
			}}
			in.Rules = always([]core.BreakerRule{slowRule(priceRes, 200, 0.5, 5, 1000, 2, 10000)}, nil)
		}),
		Expect: []Expect{
			{Kind: "low-confidence-trip", Severity: "warning", App: "gateway", Resource: priceRes,
				Instances: names("gateway", 4),
				Facts: map[string]any{
					"count": 26, "atThreshold": 10, "closedAtFirstProbe": 26, "coldStart": 0,
					"worst":   map[string]any{"k": 3, "n": 6, "lower": 0.27},
					"suggest": map[string]any{"minRequestAmount": 20, "statIntervalMs": 6000},
				}},
			// Healthy calls' p99 is at most 100 ms: maxAllowedRtMs 200 fits;
			// the minimum and the 1 s window (11.1 calls) do not.
			{Kind: "rule-advice", Severity: "info", App: "gateway", Resource: priceRes,
				Instances: names("gateway", 4), Facts: map[string]any{
					"qps": 11.1, "windowRequests": 11.1, "minRequestSeconds": 0.45, "p99Ms": 100, "rtOverP99": 2,
					"suggest": map[string]any{"minRequestAmount": 20, "statIntervalMs": 6000, "maxAllowedRtMs": nil},
				}},
		},
		// A 2 s window (11 calls a second, 2 buckets) would hold fewer than
		// 20 calls most of the time: 6 s holds them 19 times in 20. The
		// replay counts the reading worse for each rule: on it, the calls
		// the real breakers refused during a jitter are dealt the jitter's
		// slow outcomes, on which the proposal trips too (on the other
		// reading, far less). Two jitters that the next probe met again
		// are outages by the data: both rules catch them, the proposal up
		// to 1.8 s later, within its window.
		ExpectPlans: []expect.Plan{{
			App: "gateway", Resource: priceRes, Rule: "breaker", Instances: names("gateway", 4),
			Proposed: expect.Values{MinRequestAmount: 20, StatIntervalMs: 6000},
			Because:  []string{"low-confidence-trip", "rule-advice"}, Safe: true,
			WhatIf: &whatif.Result{StepMs: 500, Estimated: true,
				Current: whatif.Metrics{Trips: 30, LowConfidenceTrips: 30, OutagesCaught: 2, DetectMs: []int64{781, 0}, Probes: 37,
					PassedDuringOutage: whatif.Range{11, 23}, BlockedHealthy: whatif.Range{1403, 3175}},
				Proposed: whatif.Metrics{Trips: 24, OutagesCaught: 2, DetectMs: []int64{2556, 1051}, Probes: 32,
					PassedDuringOutage: whatif.Range{31, 42}, BlockedHealthy: whatif.Range{103, 1310}}},
		}},
	}
}

const (
	grayRes   = "POST:http://risk-service/api/v2/check"
	memberRes = "GET:http://member-service/api/user/info"
)

// GrayColdStart: a gray-release endpoint at single-digit QPS whose first
// calls open cold connections with TLS handshakes.
func GrayColdStart() *Scenario {
	return &Scenario{
		Name:  "gray-cold-start",
		Title: "gray release tripped by its cold start",
		Description: "Three order instances switch a new gray-release risk check on one after another (0:15, 0:55, 1:35), " +
			"at about 4 req/s each. Its breaker is slow ratio 0.5 over 1000 ms with minRequestAmount 5 in a 10 s window. " +
			"The connection pool starts empty: the first calls each open a connection and pay a 1.0-1.5 s TLS " +
			"handshake, so 3 or 4 of the first 5 or 6 calls are slow and the breaker opens on that alone, rejecting " +
			"every risk check for 10 s; the probe then finds warm connections and closes it.",
		Duration: 3 * mn,
		Seed:     2,
		Downstreams: []*Downstream{
			{
				Name:    "risk-service-v2",
				Latency: LogNormal{Median: 40 * ms, P99: 120 * ms},
				Pool:    &Pool{Handshake: Uniform{1000 * ms, 1500 * ms}, IdleTimeout: 90 * sec},
			},
			{Name: "member-service", Latency: LogNormal{Median: 15 * ms, P99: 60 * ms}},
		},
		Instances: fleetOf("order", 3, func(i int, in *Instance) {
			in.Calls = []Call{
				{Resource: memberRes, Downstream: "member-service", Traffic: Diurnal{Mean: 40, Swing: 0.15, Period: 3 * mn, Phase: time.Duration(i) * 20 * sec}},
				{Resource: grayRes, Downstream: "risk-service-v2", Traffic: Steps{{At: 15*sec + time.Duration(i)*40*sec, QPS: 4}}},
			}
			in.Rules = always([]core.BreakerRule{
				soundSlow(memberRes, 300),
				slowRule(grayRes, 1000, 0.5, 5, 10000, 10, 10000),
			}, nil)
		}),
		Expect: []Expect{
			{Kind: "low-confidence-trip", Severity: "warning", App: "order", Resource: grayRes,
				Instances: names("order", 3),
				Facts: map[string]any{
					// The third instance's check began 95 s after its
					// process started: a cold pool, not a cold start.
					"count": 3, "atThreshold": 1, "closedAtFirstProbe": 3, "coldStart": 2,
					"worst":   map[string]any{"k": 3, "n": 6, "lower": 0.27},
					"suggest": map[string]any{"minRequestAmount": 20},
				}},
			// The handshakes are left out with the trips' windows: healthy
			// calls' p99 is at most 200 ms, under half of maxAllowedRtMs 1000.
			{Kind: "rule-advice", Severity: "info", App: "order", Resource: grayRes,
				Instances: names("order", 3), Facts: map[string]any{
					"qps": 4, "windowRequests": 40, "minRequestSeconds": 1.25, "p99Ms": 200, "rtOverP99": 5,
					"suggest": map[string]any{"minRequestAmount": 20, "statIntervalMs": nil, "maxAllowedRtMs": nil},
				}},
		},
		// The proposal's replay trips as often, on the side of its
		// estimates worse for it: the calls the real breakers refused after
		// each cold start are dealt the handshakes' slow outcomes.
		ExpectPlans: []expect.Plan{{
			App: "order", Resource: grayRes, Rule: "breaker", Instances: names("order", 3),
			Proposed: expect.Values{MinRequestAmount: 20},
			Because:  []string{"low-confidence-trip", "rule-advice"}, Safe: true,
			WhatIf: &whatif.Result{StepMs: 500, Estimated: true,
				Current:  whatif.Metrics{Trips: 3, LowConfidenceTrips: 3, Probes: 4, BlockedHealthy: whatif.Range{65, 103}},
				Proposed: whatif.Metrics{Trips: 3, Probes: 3, BlockedHealthy: whatif.Range{42, 52}}},
		}},
	}
}

const stockRes = "GET:http://inventory-service/api/stock"

// SawtoothDBSlow: the member service's database is slow for two minutes;
// a ten-second timeWindow probes it, fails and reopens again and again.
func SawtoothDBSlow() *Scenario {
	return &Scenario{
		Name:  "sawtooth-db-slow",
		Title: "avalanche restart against a slow database",
		Description: "Two order instances call the member service at about 50 req/s each with a slow-ratio breaker " +
			"(0.5 over 500 ms, minRequestAmount 20, 1 s window, retryTimeoutMs 10000). From 0:40 to 2:40 the member " +
			"service's database runs slow queries and its calls take over 2 s: the breakers open on a full window " +
			"of slow calls, let one probe through 10 s later, which meets the same slow database and reopens them " +
			"2 s after, and so on every 12 s: about ten failed probes in a row, until the database recovers and a " +
			"probe closes them.",
		Duration: 4 * mn,
		Seed:     3,
		Downstreams: []*Downstream{
			{
				Name:    "member-service",
				Latency: LogNormal{Median: 18 * ms, P99: 70 * ms},
				Faults:  []Fault{{From: 40 * sec, To: 160 * sec, Latency: Uniform{2000 * ms, 2600 * ms}, Recovery: 2 * sec}},
			},
			{Name: "inventory-service", Latency: LogNormal{Median: 12 * ms, P99: 45 * ms}},
		},
		Instances: fleetOf("order", 2, func(i int, in *Instance) {
			in.Calls = []Call{
				{Resource: memberRes, Downstream: "member-service", Traffic: Diurnal{Mean: 50, Swing: 0.1, Period: 4 * mn, Phase: time.Duration(i) * mn}},
				{Resource: stockRes, Downstream: "inventory-service", Traffic: Diurnal{Mean: 30, Swing: 0.1, Period: 4 * mn, Phase: time.Duration(i) * mn}},
			}
			in.Rules = always([]core.BreakerRule{
				slowRule(memberRes, 500, 0.5, 20, 1000, 2, 10000),
				soundSlow(stockRes, 300),
			}, nil)
		}),
		Expect: []Expect{
			// Probes of over 2 s against maxAllowedRtMs 500: the database
			// is still slow, so the retry timeout is what to change. No
			// rule-advice: the healthy p99 (at most 100 ms) fits the rule.
			{Kind: "sawtooth", Severity: "warning", App: "order", Resource: memberRes,
				Instances: names("order", 2), Facts: map[string]any{
					"count": 9, "periodMs": 12269, "probeRtMs": 2252,
					"suggest": map[string]any{"retryTimeoutMs": 30000, "maxAllowedRtMs": nil},
				}},
		},
		// Fewer probes into the slow database, the outages caught as
		// soon; the longer wait blocks more calls after it recovers.
		ExpectPlans: []expect.Plan{retryPlan("order", memberRes, names("order", 2), 30000, []uint32{30000, 40000},
			&whatif.Result{StepMs: 500, Estimated: true,
				Current: whatif.Metrics{Trips: 2, OutagesCaught: 2, DetectMs: []int64{620, 669}, Probes: 20,
					PassedDuringOutage: whatif.Range{278, 307}, BlockedHealthy: whatif.Range{664, 893}},
				Proposed: whatif.Metrics{Trips: 2, OutagesCaught: 2, DetectMs: []int64{620, 669}, Probes: 7,
					PassedDuringOutage: whatif.Range{265, 298}, BlockedHealthy: whatif.Range{1105, 1342}}},
			"sawtooth")},
	}
}

const herdRes = "GET:http://inventory-service/api/stock"

// HerdJitterAt is when recovery-herd pushes the jittered retry timeouts.
const HerdJitterAt = 170 * sec

// RecoveryHerd: eight gateways with the same retry timeout probe a
// recovering downstream at the same instant, again and again; after a rule
// push that spreads their timeouts over ten seconds, the same outages get
// probes one instance at a time.
func RecoveryHerd() *Scenario {
	outage := func(from time.Duration) Fault {
		return Fault{From: from, To: from + 20*sec, Latency: Uniform{3 * sec, 5 * sec}, Recovery: 8 * sec}
	}
	return &Scenario{
		Name:  "recovery-herd",
		Title: "synchronized half-open probes, then jittered timeouts",
		Description: "Eight gateways call the inventory service at about 40 req/s each with a 2 s timeout and the same " +
			"slow-ratio breaker (retryTimeoutMs 10000). The inventory service hangs for 20 s at 0:30 and again at " +
			"1:50, recovering over 8 s each time: the eight breakers open within a second of each other and then " +
			"all eight probe it at the same instant, every 12 s, until it is back. At 2:50 a rule push gives each " +
			"gateway its own retry timeout, 10 s plus 0 to 9.8 s by instance (so the app's rules now differ by " +
			"design); the same outages at 3:40 and 5:00 get their probes one instance at a time.",
		Duration: 6 * mn,
		Seed:     4,
		Downstreams: []*Downstream{{
			Name:    "inventory-service",
			Latency: LogNormal{Median: 25 * ms, P99: 90 * ms},
			Faults:  []Fault{outage(30 * sec), outage(110 * sec), outage(220 * sec), outage(300 * sec)},
		}},
		Instances: fleetOf("gateway", 8, func(i int, in *Instance) {
			in.Calls = []Call{{
				Resource: herdRes, Downstream: "inventory-service", Timeout: 2 * sec,
				Traffic: Diurnal{Mean: 40, Swing: 0.1, Period: 6 * mn, Phase: time.Duration(i) * 45 * sec},
			}}
			base := slowRule(herdRes, 500, 0.5, 20, 1000, 2, 10000)
			jittered := base
			jittered.RetryTimeoutMs += uint32(i) * 1400
			in.Rules = []RuleChange{
				{At: 0, Breakers: []core.BreakerRule{base}},
				{At: HerdJitterAt + time.Duration(i)*20*ms, Breakers: []core.BreakerRule{jittered}},
			}
		}),
		Expect: []Expect{
			{Kind: "sync-half-open", Severity: "warning", App: "gateway", Resource: herdRes},
			// No rule-advice: the 2 s timeouts are outages, and the healthy
			// p99 (at most 200 ms) fits maxAllowedRtMs 500.
		},
		// No plan: the flood's fix, a retry timeout of each gateway's own,
		// is what the push at 2:50 did (10 to 19.8 s): no gateway would get
		// a longer one than it runs.
	}
}

const orderRes = "createOrder"

// RulePushPartial: the createOrder QPS limit is lowered from 1000 to 200;
// the push reaches five of eight gateways.
func RulePushPartial() *Scenario {
	return &Scenario{
		Name:  "rule-push-partial",
		Title: "a QPS limit pushed to 5 of 8 gateways",
		Description: "Eight gateways limit createOrder to 1000 QPS each. At 0:40 the limit is lowered to 200 for a " +
			"sales event; the push reaches gateway-1 to gateway-5, while gateway-6 to gateway-8 keep the old rule. " +
			"From 1:00 to 1:45 each gateway is offered about 1100 req/s: five admit 200/s and reject the rest, three " +
			"admit 1000/s, and the order service behind them, sized for 2500 req/s, slows down and fails half its " +
			"calls until the event ends.",
		Duration: 150 * sec,
		Seed:     5,
		Downstreams: []*Downstream{{
			Name:     "order-service",
			Latency:  LogNormal{Median: 20 * ms, P99: 60 * ms},
			Overload: &Overload{QPS: 2500, Latency: Uniform{800 * ms, 3000 * ms}, ErrorRate: 0.5},
		}},
		Instances: fleetOf("gateway", 8, func(i int, in *Instance) {
			in.Calls = []Call{{
				Resource: orderRes, Downstream: "order-service", Timeout: 3 * sec,
				Traffic: Steps{{At: 0, QPS: 150}, {At: 60 * sec, QPS: 1100}, {At: 105 * sec, QPS: 150}},
			}}
			in.Rules = always(nil, []core.FlowRule{qpsRule(orderRes, 1000)})
			if i < 5 {
				in.Rules = append(in.Rules, RuleChange{At: 40*sec + time.Duration(i)*37*ms, Flows: []core.FlowRule{qpsRule(orderRes, 200)}})
			}
		}),
		Expect: []Expect{
			// The newest version is the one the push meant to spread.
			{Kind: "rule-drift", Severity: "critical", App: "gateway", Resource: orderRes,
				Instances: names("gateway", 8), Facts: map[string]any{
					"newest": version(RuleChange{Flows: []core.FlowRule{qpsRule(orderRes, 200)}}),
					"groups": []any{
						ruleGroup(RuleChange{Flows: []core.FlowRule{qpsRule(orderRes, 200)}}, orderRes, names("gateway", 5), 40*sec),
						ruleGroup(RuleChange{Flows: []core.FlowRule{qpsRule(orderRes, 1000)}}, orderRes, names("gateway", 8)[5:], 0),
					},
				}},
		},
	}
}

// StartupNaked: a new instance serves traffic for 30 s before its rules
// load.
func StartupNaked() *Scenario {
	s := &Scenario{
		Name:  "startup-naked",
		Title: "a new instance runs without rules for 30 s",
		Description: "Four gateways limit createOrder to 200 QPS each. gateway-5 starts at 1:00 and takes its share of " +
			"the traffic at once, but its rules arrive from the configuration centre only at 1:30: for 30 s it admits " +
			"everything, bursts of 320 req/s included, with no rule at all.",
		Duration: 150 * sec,
		Seed:     6,
		Downstreams: []*Downstream{{
			Name: "order-service", Latency: LogNormal{Median: 30 * ms, P99: 90 * ms},
		}},
		Instances: fleetOf("gateway", 5, func(i int, in *Instance) {
			in.Calls = createOrderCalls()
			in.Rules = always(nil, []core.FlowRule{qpsRule(orderRes, 200)})
		}),
		Expect: []Expect{
			// gateway-5's empty rule set is not the newest version: it had
			// not loaded the app's yet.
			{Kind: "rule-drift", Severity: "warning", App: "gateway", Resource: orderRes,
				Instances: names("gateway", 5), Facts: map[string]any{
					"newest": version(RuleChange{Flows: []core.FlowRule{qpsRule(orderRes, 200)}}),
					"groups": []any{
						ruleGroup(RuleChange{Flows: []core.FlowRule{qpsRule(orderRes, 200)}}, orderRes, names("gateway", 4), 0),
						ruleGroup(RuleChange{}, orderRes, []string{"gateway-5"}, 60*sec),
					},
				}},
			{Kind: "unprotected", Severity: "warning", App: "gateway", Resource: orderRes,
				Instances: []string{"gateway-5"}, Facts: map[string]any{"cause": "started-without-rules", "passed": 5118}},
		},
	}
	late := s.Instances[4]
	late.Start = 60 * sec
	late.Rules[0].At = 90 * sec
	return s
}

const riskRes = "risk-check"

// SharedResourceName: a gateway and the service behind it both name their
// resource risk-check.
func SharedResourceName() *Scenario {
	gateways := fleetOf("gateway", 3, func(i int, in *Instance) {
		in.Calls = []Call{{Resource: riskRes, Downstream: "risk-service", Traffic: Diurnal{Mean: 60, Swing: 0.2, Period: 3 * mn, Phase: time.Duration(i) * mn}}}
		in.Rules = always([]core.BreakerRule{soundSlow(riskRes, 1000)}, nil)
	})
	risks := fleetOf("risk", 2, func(i int, in *Instance) {
		in.Calls = []Call{{Resource: riskRes, Downstream: "risk-vendor", Traffic: Diurnal{Mean: 90, Swing: 0.2, Period: 3 * mn, Phase: time.Duration(i) * mn}}}
		in.Rules = always([]core.BreakerRule{soundSlow(riskRes, 800), soundErr(riskRes)}, nil)
		in.Rules[0].Breakers[0].ID = "slow"
		in.Rules[0].Breakers[1].ID = "errors"
	})
	return &Scenario{
		Name:  "shared-resource-name",
		Title: "two apps name their resource risk-check",
		Description: "Three gateways guard their calls to the risk service as risk-check; the two risk service " +
			"instances guard their own calls to a third-party risk vendor under the same name. Both sides are " +
			"healthy, and each process keeps its own statistics and breakers, but a rule pushed for risk-check by " +
			"name, or a dashboard or alert keyed by it, takes the two for one.",
		Duration: 3 * mn,
		Seed:     7,
		Downstreams: []*Downstream{
			{Name: "risk-service", Latency: LogNormal{Median: 45 * ms, P99: 140 * ms}},
			{Name: "risk-vendor", Latency: LogNormal{Median: 30 * ms, P99: 110 * ms}, ErrorRate: 0.002},
		},
		Instances: append(gateways, risks...),
		Expect: []Expect{
			{Kind: "shared-resource", Severity: "warning", App: "gateway", Resource: riskRes,
				Instances: append(names("gateway", 3), names("risk", 2)...), Facts: map[string]any{"apps": []any{"gateway", "risk"}}},
		},
	}
}

const payRes = "POST:http://payment-service/api/pay"

// RealOutage: a downstream really fails at high traffic; the breaker trips
// on a large sample and closes once the downstream is back.
func RealOutage() *Scenario {
	return &Scenario{
		Name:  "real-outage",
		Title: "a real outage, handled",
		Description: "Four checkout instances call the payment service at 80-120 req/s each with a 1.5 s timeout and " +
			"an error-ratio breaker (0.5, minRequestAmount 50, 1 s window, retryTimeoutMs 30000). From 1:00 to 1:20 " +
			"the payment service hangs: the window fills with timeouts and every breaker opens on 50 failures out " +
			"of 50. The service is back by 1:24; the first probes, 30 s after the trips, succeed and the breakers " +
			"close. Nothing here needs a rule change.",
		Duration: 4 * mn,
		Seed:     8,
		Downstreams: []*Downstream{{
			Name:    "payment-service",
			Latency: LogNormal{Median: 35 * ms, P99: 110 * ms},
			Faults:  []Fault{{From: 60 * sec, To: 80 * sec, Latency: Fixed(5 * sec), Recovery: 4 * sec}},
		}},
		Instances: fleetOf("checkout", 4, func(i int, in *Instance) {
			in.Calls = []Call{{
				Resource: payRes, Downstream: "payment-service", Timeout: 1500 * ms,
				Traffic: Diurnal{Mean: 100, Swing: 0.2, Period: 4 * mn, Phase: time.Duration(i) * mn},
			}}
			in.Rules = always([]core.BreakerRule{errRule(payRes, 0.5, 50, 1000, 2, 30000)}, nil)
		}),
		Expect: []Expect{},
	}
}

const (
	productRes = "GET:/api/product/detail"
	deductRes  = "POST:http://inventory-service/api/deduct"
	selectRes  = "db:member.select"
)

// HealthyBaseline: a busy, well-configured fleet: no finding above info.
func HealthyBaseline() *Scenario {
	diurnal := func(mean float64, i int) Traffic {
		return Sum{
			Diurnal{Mean: mean, Swing: 0.4, Period: 5 * mn, Phase: time.Duration(i) * 20 * sec},
			Bursts{Base: 0, Peak: mean / 2, Every: 50 * sec, Length: 3 * sec, Offset: time.Duration(i) * 7 * sec},
		}
	}
	gateways := fleetOf("gateway", 3, func(i int, in *Instance) {
		in.Calls = []Call{
			{Resource: productRes, Downstream: "product-service", Traffic: diurnal(120, i), Timeout: 2 * sec},
			{Resource: orderRes, Downstream: "order-service", Traffic: diurnal(40, i), Timeout: 3 * sec},
		}
		in.Rules = always(
			[]core.BreakerRule{soundSlow(productRes, 400)},
			[]core.FlowRule{qpsRule(orderRes, 500), qpsRule(productRes, 2000)},
		)
	})
	orders := fleetOf("order", 3, func(i int, in *Instance) {
		in.Calls = []Call{
			{Resource: memberRes, Downstream: "member-service", Traffic: diurnal(50, i), Timeout: 2 * sec},
			{Resource: deductRes, Downstream: "inventory-service", Traffic: diurnal(40, i), Timeout: 2 * sec},
		}
		in.Rules = always([]core.BreakerRule{soundSlow(memberRes, 300), soundErr(deductRes)}, nil)
	})
	members := fleetOf("member", 2, func(i int, in *Instance) {
		in.Calls = []Call{{Resource: selectRes, Downstream: "member-db", Traffic: diurnal(75, i), Timeout: time.Second}}
		in.Rules = always([]core.BreakerRule{soundSlow(selectRes, 200)}, nil)
	})
	insts := append(append(gateways, orders...), members...)
	return &Scenario{
		Name:  "healthy-baseline",
		Title: "a busy, healthy fleet",
		Description: "Three gateways, three order instances and two member instances, 60 to 200 req/s per resource " +
			"with a daily swing and short bursts, small error rates and the odd network hiccup. Every breaker " +
			"asks for 20 requests in a 10 s window and allows at least twice the p99 response time; every QPS " +
			"limit is above the peak. No breaker opens and no finding above info is expected.",
		Duration: 5 * mn,
		Seed:     9,
		Downstreams: []*Downstream{
			{Name: "product-service", Latency: LogNormal{Median: 30 * ms, P99: 110 * ms}, ErrorRate: 0.001,
				Jitter: &Jitter{Every: 40 * sec, Length: Uniform{300 * ms, 900 * ms}, Share: 0.3, Latency: Uniform{150 * ms, 250 * ms}}},
			{Name: "order-service", Latency: LogNormal{Median: 45 * ms, P99: 140 * ms}, ErrorRate: 0.002},
			{Name: "member-service", Latency: LogNormal{Median: 15 * ms, P99: 60 * ms}, ErrorRate: 0.001},
			{Name: "inventory-service", Latency: LogNormal{Median: 20 * ms, P99: 70 * ms}, ErrorRate: 0.003},
			{Name: "member-db", Latency: LogNormal{Median: 4 * ms, P99: 25 * ms}},
		},
		Instances: insts,
		Expect:    []Expect{},
	}
}
