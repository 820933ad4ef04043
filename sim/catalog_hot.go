package sim

import (
	"fmt"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/fixtures/expect"
)

// Hot-parameter limits: a limit written for every value that throttles one.

const (
	queryOrderRes = "queryOrder"
	// vipCustomer is the customer id the VIP incident's load test sends.
	vipCustomer  = "cust-100042"
	vipThreshold = 200
)

// customers are n customer ids, cust-000001 and on.
func customers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cust-%06d", i+1)
	}
	return out
}

// vipRule limits each customer id (the first parameter) to vipThreshold
// calls per second, as the field report's ParamFlowRule did.
func vipRule() core.HotParamRule {
	return core.HotParamRule{
		Resource: queryOrderRes, MetricType: core.HotParamQPS, ParamIndex: 0,
		Threshold: vipThreshold, DurationInSec: 1, ParamsMaxCapacity: 20000,
	}
}

// vipCalls are an order instance's queryOrder calls: its share of 1,000
// customers at 1 req/s each, and, from at on, the VIP customer at 250
// req/s (none when at is negative).
func vipCalls(ids []string, at time.Duration) []Call {
	calls := []Call{{Resource: queryOrderRes, Downstream: "order-db", Traffic: Constant(len(ids)), Params: ids}}
	if at >= 0 {
		calls = append(calls, Call{Resource: queryOrderRes, Downstream: "order-db",
			Traffic: Steps{{At: at, QPS: 250}}, Params: []string{vipCustomer}})
	}
	return calls
}

// VipThrottled: a per-customer limit of 200 req/s throttles the one
// customer whose traffic is meant to be high.
func VipThrottled() *Scenario {
	ids := customers(1000)
	const vipFrom = 30 * sec
	return &Scenario{
		Name:  "vip-throttled",
		Title: "a per-customer limit throttles the VIP customer",
		Description: "Two order instances serve queryOrder for 1,000 customers at about 1 req/s each, under a " +
			"hot-parameter rule that limits every customer id to 200 req/s. The gateway routes each customer to one " +
			"instance; from 0:30 the VIP customer cust-100042 (a load test run for it) sends 250 req/s to order-1, " +
			"which admits 200 of them each second and blocks the rest, while every other customer passes.",
		Duration: 150 * sec,
		Seed:     61,
		Downstreams: []*Downstream{{
			Name: "order-db", Latency: LogNormal{Median: 12 * ms, P99: 45 * ms},
		}},
		Instances: fleetOf("order", 2, func(i int, in *Instance) {
			at := time.Duration(-1)
			if i == 0 {
				at = vipFrom
			}
			in.Calls = vipCalls(ids[i*500:(i+1)*500], at)
			in.Rules = []RuleChange{{Params: []core.HotParamRule{vipRule()}}}
		}),
		Expect: []Expect{
			{Kind: "hot-value", Severity: "warning", App: "order", Resource: queryOrderRes,
				Instances: []string{"order-1"}, Facts: map[string]any{
					"param": 0, "value": vipCustomer,
					"suggest": map[string]any{"specificItems": map[string]any{vipCustomer: 300}},
				}},
		},
		// The exception, replayed on order-1's own traffic of the value:
		// from 0:30, 250 calls a second of which the limit passes 200. The
		// value's first 30 s (1 call a second among 500 customers) are not
		// among the buckets' busiest values: estimated.
		ExpectPlans: []expect.Plan{{
			App: "order", Resource: queryOrderRes, Rule: "param", Instances: []string{"order-1"},
			Proposed: expect.Values{SpecificItems: map[string]int64{vipCustomer: 300}},
			Because:  []string{"hot-value"}, Safe: true,
			ParamWhatIf: &whatif.ParamResult{StepMs: 500, Estimated: true, Offered: 29803,
				Current:  whatif.ParamMetrics{Passed: 23962, Blocked: 5841},
				Proposed: whatif.ParamMetrics{Passed: 29803, Blocked: 0}, AddedPeak: 89},
		}},
	}
}
