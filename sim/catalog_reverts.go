package sim

import (
	"time"

	"github.com/sentinel-top/sentinel-top/core"
)

// Rules that go back: an instance that ran the pushed rules returns to the
// ones the fleet ran before, by a restart that reads a stale local
// snapshot or by a second loadRules that overwrites the push.

// revert is one rule-drift "reverted" entry as its JSON decodes: instance
// went from version from to the older version to at offset at.
func revert(instance string, from, to RuleChange, at time.Duration, restarted bool) map[string]any {
	return map[string]any{
		"instance": instance, "from": version(from), "to": version(to),
		"at": DefaultStart.Add(at).UnixMilli(), "restarted": restarted,
	}
}

// RuleRevertRestart: a sales-event limit reaches every gateway; one
// restarts and loads the old limit from a stale local snapshot.
func RuleRevertRestart() *Scenario {
	const pushAt, restartAt = 40 * sec, 70 * sec
	old := RuleChange{Flows: []core.FlowRule{qpsRule(orderRes, 1000)}}
	sale := RuleChange{Flows: []core.FlowRule{qpsRule(orderRes, 200)}}
	insts := names("gateway", 8)
	s := &Scenario{
		Name:  "rule-revert-restart",
		Title: "a restart brings the old limit back on one of 8 gateways",
		Description: "Eight gateways limit createOrder to 1000 QPS each. At 0:40 the limit is lowered to 200 for a sales " +
			"event, and the push reaches all eight, 37 ms apart. At 1:10 gateway-6 restarts: its rule data source reads " +
			"a local snapshot file written before the push, and the new process runs the old 1000 QPS limit to the end. " +
			"From 1:30 to 2:00 each gateway is offered about 600 req/s: seven admit 200/s and reject the rest, while " +
			"gateway-6 admits them all.",
		Duration: 150 * sec,
		Seed:     26,
		Downstreams: []*Downstream{{
			Name: "order-service", Latency: LogNormal{Median: 20 * ms, P99: 60 * ms},
		}},
		Instances: fleetOf("gateway", 8, func(i int, in *Instance) {
			in.Calls = []Call{{
				Resource: orderRes, Downstream: "order-service", Timeout: 3 * sec,
				Traffic: Steps{{At: 0, QPS: 150}, {At: 90 * sec, QPS: 600}, {At: 120 * sec, QPS: 150}},
			}}
			push := sale
			push.At = pushAt + time.Duration(i)*37*ms
			in.Rules = []RuleChange{old, push}
		}),
		Expect: []Expect{
			// The 1000 limit is first seen at 0:00, when every gateway
			// ran it, and is never the newest: gateway-6 went back to it.
			{Kind: "rule-drift", Severity: "critical", App: "gateway", Resource: orderRes,
				Instances: insts, Facts: map[string]any{
					"newest": version(sale),
					"groups": []any{
						ruleGroup(sale, orderRes, append(insts[:5:5], insts[6:]...), pushAt),
						ruleGroup(old, orderRes, insts[5:6], 0),
					},
					"reverted": []any{revert("gateway-6", sale, old, restartAt, true)},
				}},
		},
	}
	g6 := s.Instances[5]
	stale := old
	stale.At = restartAt
	g6.Rules = append(g6.Rules, stale)
	g6.Restarts = []time.Duration{restartAt}
	return s
}

// RuleOverwriteLoadRules: a push of retuned breaker rules is overwritten on
// two instances by an init class's second loadRules, without a restart.
func RuleOverwriteLoadRules() *Scenario {
	const pushAt = 30 * sec
	initial := RuleChange{Breakers: []core.BreakerRule{slowRule(riskRes, 1000, 0.5, 20, 10000, 10, 10000)}}
	retuned := RuleChange{At: pushAt, Breakers: []core.BreakerRule{slowRule(riskRes, 1000, 0.8, 20, 30000, 10, 30000)}}
	// When each instance's init class first runs its loadRules again.
	overwrites := map[int]time.Duration{1: 47300 * ms, 4: 65800 * ms}
	insts := names("order", 6)
	return &Scenario{
		Name:  "rule-overwrite-loadrules",
		Title: "an init class's loadRules overwrites a rule push on 2 of 6 instances",
		Description: "Six order instances guard their calls to a third-party risk service (risk-check, about 40 req/s " +
			"each) with a slow-ratio breaker: 1000 ms, ratio 0.5, a 10 s window, 10 s open. At 0:30 the configuration " +
			"centre pushes a retuned rule (ratio 0.8, a 30 s window, 30 s open) and every instance loads it. But the " +
			"service also calls loadRules from an init class with its built-in rules, lazily, the first time a rarely " +
			"used path runs: at 0:47.3 on order-2 and 1:05.8 on order-5 that call replaces the pushed rules with the " +
			"old ones, without a restart, and the two keep them to the end.",
		Duration: 150 * sec,
		Seed:     27,
		Downstreams: []*Downstream{{
			Name: "risk-vendor", Latency: LogNormal{Median: 20 * ms, P99: 80 * ms}, ErrorRate: 0.001,
		}},
		Instances: fleetOf("order", 6, func(i int, in *Instance) {
			in.Calls = []Call{diurnalCall(riskRes, "risk-vendor", 2*sec, 40, 150*sec, i)}
			push := retuned
			push.At += time.Duration(i) * 23 * ms
			in.Rules = []RuleChange{initial, push}
			if at, ok := overwrites[i]; ok {
				again := initial
				again.At = at
				in.Rules = append(in.Rules, again)
			}
		}),
		Expect: []Expect{
			{Kind: "rule-drift", Severity: "critical", App: "order", Resource: riskRes,
				Instances: insts, Facts: map[string]any{
					"newest": version(retuned),
					"groups": []any{
						ruleGroup(retuned, riskRes, []string{"order-1", "order-3", "order-4", "order-6"}, pushAt),
						ruleGroup(initial, riskRes, []string{"order-2", "order-5"}, 0),
					},
					"reverted": []any{
						revert("order-2", retuned, initial, overwrites[1], false),
						revert("order-5", retuned, initial, overwrites[4], false),
					},
				}},
		},
	}
}
