package sim

import (
	"encoding/json"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures/expect"
)

// Rules that do not protect what they should: wiped by a bad push, unable
// to act on the traffic, missing on an instance that started without them
// or missed a push.

const (
	cartRes      = "POST:/api/cart/add"
	recommendRes = "GET:http://recommend-service/api/items"
	// nameCaseRule is the resource name a flow rule was written with; the
	// gateway's code names it orderRes.
	nameCaseRule = "CreateOrder"
)

// jsonValue is v as its JSON decodes: what an expectation's facts compare.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// ruleSet is a finding's rule (a RuleSet) as its JSON decodes.
func ruleSet(breakers []core.BreakerRule, flows []core.FlowRule) any {
	return jsonValue(struct {
		Breakers []core.BreakerRule `json:"breakers"`
		Flows    []core.FlowRule    `json:"flows"`
	}{append([]core.BreakerRule{}, breakers...), append([]core.FlowRule{}, flows...)})
}

// ruleGroup is one of rule-drift's groups: the instances that loaded one
// rule set, with its rules for one resource, first seen at offset at.
func ruleGroup(set RuleChange, resource string, insts []string, at time.Duration) map[string]any {
	var bs []core.BreakerRule
	var fs []core.FlowRule
	for _, b := range set.Breakers {
		if b.Resource == resource {
			bs = append(bs, b)
		}
	}
	for _, f := range set.Flows {
		if f.Resource == resource {
			fs = append(fs, f)
		}
	}
	return map[string]any{
		"version": version(set), "rule": ruleSet(bs, fs),
		"instances": jsonValue(insts), "firstSeen": DefaultStart.Add(at).UnixMilli(),
	}
}

// diurnalCall is instance i's call of res on down at about mean req/s,
// swinging 10 % over period, a fifth of a period after instance i-1.
func diurnalCall(res, down string, timeout time.Duration, mean float64, period time.Duration, i int) Call {
	return Call{
		Resource: res, Downstream: down, Timeout: timeout,
		Traffic: Diurnal{Mean: mean, Swing: 0.1, Period: period, Phase: time.Duration(i) * period / 5},
	}
}

// createOrderCalls are a gateway's createOrder calls: 120 req/s, with
// bursts of 320 for 4 s every 20 s.
func createOrderCalls() []Call {
	return []Call{{
		Resource: orderRes, Downstream: "order-service",
		Traffic: Bursts{Base: 120, Peak: 320, Every: 20 * sec, Length: 4 * sec, Offset: 5 * sec},
	}}
}

// version is a rule set's version, as its instances report it.
func version(set RuleChange) string { return wire.RulesVersion(set.Breakers, set.Flows, set.Params...) }

// RulesWiped: a malformed push leaves every order instance without rules
// while their traffic goes on.
func RulesWiped() *Scenario {
	rules := RuleChange{
		Breakers: []core.BreakerRule{soundErr(deductRes)},
		Flows:    []core.FlowRule{qpsRule(deductRes, 300)},
	}
	const wipeAt = 60 * sec
	return &Scenario{
		Name:  "rules-wiped",
		Title: "a bad push wipes every instance's rules",
		Description: "Four order instances deduct stock through the inventory service at about 60 req/s each, under an " +
			"error-ratio breaker and a 300 QPS limit. At 1:00 the configuration centre pushes a rule set with a " +
			"malformed entry: the data source parses it as empty, and loadRules replaces every instance's rules with " +
			"nothing within a few milliseconds. The traffic goes on unguarded to the end of the recording.",
		Duration: 150 * sec,
		Seed:     21,
		Downstreams: []*Downstream{{
			Name: "inventory-service", Latency: LogNormal{Median: 20 * ms, P99: 70 * ms}, ErrorRate: 0.003,
		}},
		Instances: fleetOf("order", 4, func(i int, in *Instance) {
			in.Calls = []Call{diurnalCall(deductRes, "inventory-service", 2*sec, 60, 150*sec, i)}
			in.Rules = []RuleChange{
				{At: 0, Breakers: rules.Breakers, Flows: rules.Flows},
				{At: wipeAt + time.Duration(i)*13*ms},
			}
		}),
		Expect: []Expect{
			{Kind: "rules-lost", Severity: "critical", App: "order", Resource: deductRes,
				Instances: names("order", 4), Facts: map[string]any{
					"lostAt": DefaultStart.Add(wipeAt).UnixMilli(), "passed": 21563,
				}},
		},
	}
}

// BreakerCannotTrip: an error-ratio breaker asks for 10000 completions in a
// window that holds about a thousand.
func BreakerCannotTrip() *Scenario {
	rule := errRule(payRes, 0.5, 10000, 10000, 10, 30000)
	return &Scenario{
		Name:  "breaker-cannot-trip",
		Title: "a breaker that cannot trip at its traffic",
		Description: "Three checkout instances call the payment service at about 100 req/s each under an error-ratio " +
			"breaker (0.5) whose minRequestAmount is 10000, in a 10 s window that holds about 1000 calls at that rate. " +
			"From 1:30 to 2:00 the payment service fails 80 % of its calls: the window's error ratio is far above the " +
			"threshold, but the breaker never has the 10000 calls it asks for, and never opens.",
		Duration: 3 * mn,
		Seed:     22,
		Downstreams: []*Downstream{{
			Name: "payment-service", Latency: LogNormal{Median: 35 * ms, P99: 110 * ms}, ErrorRate: 0.002,
			Faults: []Fault{{From: 90 * sec, To: 120 * sec, ErrorRate: 0.8}},
		}},
		Instances: fleetOf("checkout", 3, func(i int, in *Instance) {
			in.Calls = []Call{{
				Resource: payRes, Downstream: "payment-service", Timeout: 1500 * ms,
				Traffic: Diurnal{Mean: 100, Swing: 0.1, Period: 3 * mn, Phase: time.Duration(i) * mn},
			}}
			in.Rules = always([]core.BreakerRule{rule}, nil)
		}),
		Expect: []Expect{
			{Kind: "inert-rule", Severity: "warning", App: "checkout", Resource: payRes,
				Instances: names("checkout", 3), Facts: map[string]any{
					"reason": "cannot-trip", "rule": ruleSet([]core.BreakerRule{rule}, nil),
					"maxWindowRequests": 1180, "suggest": map[string]any{"minRequestAmount": 118},
					// The 9 tumbling 10 s windows from 1:30 to 2:00 held 9091
					// calls, 7336 of them failed; no other window reached 0.5.
					"badPassed": 7336, "inferred": nil,
				}},
		},
		ExpectPlans: []expect.Plan{{
			App: "checkout", Resource: payRes, Rule: "breaker", Instances: names("checkout", 3),
			Proposed: expect.Values{MinRequestAmount: 118},
			Because:  []string{"inert-rule"}, Safe: true,
			WhatIf: &whatif.Result{StepMs: 500,
				Current: whatif.Metrics{PassedDuringOutage: whatif.Range{9091, 9091}},
				Proposed: whatif.Metrics{Trips: 3, OutagesCaught: 3, DetectMs: []int64{6004, 6004, 6003}, Probes: 3,
					PassedDuringOutage: whatif.Range{1821, 1830}, BlockedHealthy: whatif.Range{1720, 1744}}},
		}},
	}
}

// RuleNameCase: a QPS limit written for CreateOrder, while the gateways'
// code names the resource createOrder.
func RuleNameCase() *Scenario {
	flow := qpsRule(nameCaseRule, 200)
	return &Scenario{
		Name:  "rule-name-case",
		Title: "a rule whose resource name differs from the traffic's by case",
		Description: "Three gateways are meant to limit createOrder to 200 QPS each, but the rule was written for " +
			"CreateOrder: Sentinel matches resource names exactly, so no entry ever meets the limit, and the bursts " +
			"of 320 req/s every 20 s all pass. The rule's own resource never sees a call.",
		Duration: 2 * mn,
		Seed:     23,
		Downstreams: []*Downstream{{
			Name: "order-service", Latency: LogNormal{Median: 30 * ms, P99: 90 * ms},
		}},
		Instances: fleetOf("gateway", 3, func(i int, in *Instance) {
			in.Calls = createOrderCalls()
			in.Rules = always(nil, []core.FlowRule{flow})
		}),
		Expect: []Expect{
			{Kind: "inert-rule", Severity: "warning", App: "gateway", Resource: nameCaseRule,
				Instances: names("gateway", 3), Facts: map[string]any{
					"reason": "name-mismatch", "near": orderRes, "rule": ruleSet(nil, []core.FlowRule{flow}),
				}},
		},
	}
}

// PushMissed: a push adds a breaker for a new dependency; one of four
// instances never gets it.
func PushMissed() *Scenario {
	const pushAt = 40 * sec
	before := RuleChange{Breakers: []core.BreakerRule{soundSlow(productRes, 400)}}
	after := RuleChange{At: pushAt, Breakers: []core.BreakerRule{soundSlow(productRes, 400), soundSlow(recommendRes, 500)}}
	insts := names("product", 4)
	return &Scenario{
		Name:  "push-missed",
		Title: "a rule push that one instance missed",
		Description: "Four product instances serve the product page and call the recommendation service at about 50 " +
			"req/s each. At 0:40 a push adds a slow-ratio breaker for the recommendation calls; product-1 to product-3 " +
			"load it within a tenth of a second, but product-4's subscription to the rule source had silently lapsed: " +
			"it keeps its old rules and calls the recommendation service unguarded to the end of the recording.",
		Duration: 150 * sec,
		Seed:     24,
		Downstreams: []*Downstream{
			{Name: "product-service", Latency: LogNormal{Median: 30 * ms, P99: 110 * ms}},
			{Name: "recommend-service", Latency: LogNormal{Median: 40 * ms, P99: 150 * ms}, ErrorRate: 0.001},
		},
		Instances: fleetOf("product", 4, func(i int, in *Instance) {
			in.Calls = []Call{
				diurnalCall(productRes, "product-service", 2*sec, 80, 150*sec, i),
				diurnalCall(recommendRes, "recommend-service", 2*sec, 50, 150*sec, i),
			}
			in.Rules = []RuleChange{before}
			if i < 3 {
				push := after
				push.At += time.Duration(i) * 31 * ms
				in.Rules = append(in.Rules, push)
			}
		}),
		Expect: []Expect{
			{Kind: "unprotected", Severity: "critical", App: "product", Resource: recommendRes,
				Instances: []string{"product-4"}, Facts: map[string]any{"cause": "missed-push", "passed": 5679}},
			{Kind: "rule-drift", Severity: "critical", App: "product", Resource: recommendRes,
				Instances: insts, Facts: map[string]any{
					"newest": version(after),
					"groups": []any{
						ruleGroup(after, recommendRes, insts[:3], pushAt),
						ruleGroup(before, recommendRes, insts[3:], 0),
					},
				}},
		},
	}
}

// StartWithoutRules: a fourth cart instance scales out and serves traffic
// without ever loading its rules.
func StartWithoutRules() *Scenario {
	const startAt = 60 * sec
	rules := RuleChange{
		Breakers: []core.BreakerRule{soundErr(cartRes)},
		Flows:    []core.FlowRule{qpsRule(cartRes, 400)},
	}
	insts := names("cart", 4)
	s := &Scenario{
		Name:  "start-without-rules",
		Title: "an instance that starts without its rules",
		Description: "Three cart instances guard adding to the cart with an error-ratio breaker and a 400 QPS limit. " +
			"At 1:00 a fourth scales out and takes its share of the traffic at once, but the rule source is " +
			"unreachable from its node: it runs with no rule at all to the end of the recording, while the load " +
			"balancer, with no readiness gate to tell it otherwise, sends it a quarter of the calls.",
		Duration: 150 * sec,
		Seed:     25,
		Downstreams: []*Downstream{{
			Name: "cart-service", Latency: LogNormal{Median: 15 * ms, P99: 60 * ms}, ErrorRate: 0.001,
		}},
		Instances: fleetOf("cart", 4, func(i int, in *Instance) {
			in.Calls = []Call{diurnalCall(cartRes, "cart-service", time.Second, 70, 150*sec, i)}
			in.Rules = []RuleChange{rules}
		}),
		Expect: []Expect{
			{Kind: "unprotected", Severity: "critical", App: "cart", Resource: cartRes,
				Instances: insts[3:], Facts: map[string]any{"cause": "started-without-rules", "passed": 6520}},
			{Kind: "rule-drift", Severity: "critical", App: "cart", Resource: cartRes,
				Instances: insts, Facts: map[string]any{
					"newest": version(rules),
					"groups": []any{
						ruleGroup(rules, cartRes, insts[:3], 0),
						ruleGroup(RuleChange{}, cartRes, insts[3:], startAt),
					},
				}},
		},
	}
	late := s.Instances[3]
	late.Start, late.Rules = startAt, nil
	return s
}
