package sim

import (
	"time"

	"github.com/sentinel-top/sentinel-top/core"
)

// Warm-up flow limits: a limit that admits threshold / warmUpColdFactor
// after a start, blocking calls in a deploy that are not an overload.

const quoteRes = "GET:/api/price"

// warmUpLimit is a warm-up flow rule of 500 QPS: 166.67 at a start, rising
// over 60 s at full load (the field report's WARM_UP, with sentinel-golang's
// field names).
func warmUpLimit() core.FlowRule {
	return core.FlowRule{Resource: quoteRes, Threshold: 500, TokenCalculateStrategy: core.WarmUp,
		WarmUpPeriodSec: 60, WarmUpColdFactor: 3}
}

// WarmUpDeploy: a rolling restart under a warm-up limit blocks calls right
// after each start, and none later.
func WarmUpDeploy() *Scenario {
	const (
		first = 120 * sec // gateway-1 stops
		every = 40 * sec  // the next one stops
		down  = 5 * sec   // a restart takes
	)
	calls := func() []Call {
		return []Call{{Resource: quoteRes, Downstream: "price-service", Traffic: Constant(300)}}
	}
	s := &Scenario{
		Name:  "warm-up-deploy",
		Title: "a warm-up flow limit blocks calls after each start of a rolling deploy",
		Description: "Four gateways each take about 300 req/s of GET:/api/price under a warm-up flow rule of 500 QPS " +
			"(warmUpColdFactor 3, warmUpPeriodSec 60). A new process's limit starts at 166.67 QPS and rises as calls " +
			"use up its stored tokens, so each gateway blocks part of its calls for about 48 s after it starts, at 0:00 " +
			"and again in a rolling deploy that restarts gateway-1 to gateway-4 from 2:00, one every 40 s with 5 s down; " +
			"between the starts nothing is blocked. No call is offered above the threshold: none of these blocks is an overload.",
		Duration: 340 * sec,
		Seed:     71,
		Downstreams: []*Downstream{{
			Name: "price-service", Latency: LogNormal{Median: 20 * ms, P99: 60 * ms},
		}},
		Instances: fleetOf("gateway", 4, func(i int, in *Instance) {
			in.Calls = calls()
			in.Rules = always(nil, []core.FlowRule{warmUpLimit()})
			in.Stop = first + time.Duration(i)*every
		}),
		Expect: []Expect{
			{Kind: "warm-up", Severity: "warning", App: "gateway", Resource: quoteRes,
				Instances: names("gateway", 4), Facts: map[string]any{
					"startLimit": 166.67, "blocked": 33228, "offered": 154188,
				}},
		},
	}
	for _, old := range s.Instances[:4] {
		in := &Instance{App: "gateway", Name: old.Name, Start: old.Stop + down, Calls: calls()}
		in.Rules = always(nil, []core.FlowRule{warmUpLimit()})
		s.Instances = append(s.Instances, in)
	}
	return s
}
