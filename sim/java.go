package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures/expect"
)

// JavaService is a fleet of Java Sentinel services as the collector's Java
// poller re-serves them, for scenarios no agent can play (an agent enforces
// every rule on every caller; Java Sentinel applies a rule only to the
// origin its limitApp names): per instance a hello (sdk java-sentinel,
// one-second buckets), its rules as /getRules gives them, and one bucket
// item a second of each resource, made from a /metric line (pass, block,
// success, the second's mean response time) as the poller makes it. Java
// exposes no state: the only state messages are those the poller infers
// when Calls plays the breakers. Traffic is Poisson, from the scenario's
// seed.
type JavaService struct {
	App       string
	Instances []string
	// Version is the Sentinel version /version answers.
	Version string
	Rules   RuleChange
	// Resource is offered QPS on each instance, answered in about RtMs;
	// Block is the share of the entries blocked (by the rules that do
	// apply to the callers).
	Resource string
	QPS      float64
	RtMs     int64
	Block    float64
	// Calls, when set, plays the calls one by one through the rules'
	// breakers instead, with the breaker states inferred from the lines
	// (RtMs and Block are then unused, and the rules may hold Java degrade
	// rules only): see JavaCalls.
	Calls *JavaCalls
}

// Script is the scenario's Script: the fleet's messages from start over
// s.Duration.
func (j *JavaService) Script(start time.Time, s *Scenario, emit func(wire.Message) error) error {
	if j.Calls != nil {
		if err := j.validateCalls(); err != nil {
			return err
		}
	}
	t0 := start.UnixMilli()
	if err := j.hellos(t0, emit); err != nil {
		return err
	}
	if j.Calls != nil {
		return j.playCalls(start, s, emit)
	}
	rngs := make([]*randSource, len(j.Instances))
	for i, name := range j.Instances {
		rngs[i] = &randSource{stream(s.Seed, "java", name)}
	}
	end := t0 + s.Duration.Milliseconds()
	for sec := t0; sec+metriclog.BucketMs <= end; sec += metriclog.BucketMs {
		for i, name := range j.Instances {
			r := rngs[i]
			n := r.poisson(j.QPS)
			block := int64(math.Round(float64(n) * j.Block))
			rt := max(int64(math.Round(float64(j.RtMs)*(0.8+0.4*r.Float64()))), 1)
			l := metriclog.Line{Timestamp: sec, Resource: j.Resource, Pass: n - block, Block: block, Success: n - block, Rt: rt,
				Concurrency: int64(math.Ceil(float64(n-block) * float64(rt) / 1000))}
			m := &wire.Buckets{Header: wire.Header{Ts: sec + metriclog.BucketMs, Instance: name}, BucketMs: metriclog.BucketMs,
				Items: []wire.BucketItem{l.Item()}}
			if err := emit(m); err != nil {
				return err
			}
		}
	}
	for _, name := range j.Instances {
		if err := emit(&wire.Bye{Header: wire.Header{Ts: end, Instance: name}, Reason: "shutdown"}); err != nil {
			return err
		}
	}
	return nil
}

// hellos emits each instance's hello and rules at t0.
func (j *JavaService) hellos(t0 int64, emit func(wire.Message) error) error {
	version := wire.RulesVersion(j.Rules.Breakers, j.Rules.Flows, j.Rules.Params...)
	for i, name := range j.Instances {
		h := &wire.Hello{Header: wire.Header{Ts: t0, Instance: name}, App: j.App, Host: fmt.Sprintf("10.0.9.%d", i+1),
			SDK: "java-sentinel/" + j.Version, BucketMs: metriclog.BucketMs}
		if err := emit(h); err != nil {
			return err
		}
		r := &wire.Rules{Header: wire.Header{Ts: t0, Instance: name}, Version: version,
			Breakers: j.Rules.Breakers, Flows: j.Rules.Flows, Params: j.Rules.Params}
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

// LimitAppSelf: a Java flow rule whose limitApp is the service's own name
// (field report 003): it limits only the calls the service makes to
// itself, and the callers' traffic it was written for passes unlimited.
func LimitAppSelf() *Scenario {
	flow := core.FlowRule{Resource: orderRes, Threshold: 200, LimitApp: "order-service"}
	j := &JavaService{
		App: "order-service", Instances: []string{"order-service-1", "order-service-2"}, Version: "1.8.6",
		Rules:    RuleChange{Flows: []core.FlowRule{flow}},
		Resource: orderRes, QPS: 300, RtMs: 35,
	}
	return &Scenario{
		Name:  "limitapp-self",
		Title: "a Java flow rule limits only its own service's calls",
		Description: "Two Java Sentinel 1.8.6 instances of order-service, read by the collector's Java poller, take about " +
			"300 createOrder calls per second each from the gateway. Their flow rule of 200 QPS was meant for the gateway, " +
			"but its limitApp names order-service itself: Java Sentinel applies it only to calls whose origin is " +
			"order-service, so every gateway call passes and nothing is blocked.",
		Duration: 120 * sec,
		Seed:     71,
		Script:   j.Script,
		Expect: []Expect{
			{Kind: "inert-rule", Severity: "warning", App: "order-service", Resource: orderRes,
				Instances: j.Instances, Facts: map[string]any{
					"reason": "origin-mismatch", "rule": ruleSet(nil, []core.FlowRule{flow}),
					"suggest": map[string]any{"limitApp": "default"},
				}},
		},
		// limitApp default, replayed on the instances' own traffic: 200
		// a second pass on each of the two for the 120 s, the rest of
		// about 300 a second are blocked.
		ExpectPlans: []expect.Plan{{
			App: "order-service", Resource: orderRes, Rule: "flow", Instances: j.Instances,
			Proposed: expect.Values{LimitApp: "default"}, Because: []string{"inert-rule"}, Safe: true,
			FlowWhatIf: &whatif.FlowResult{StepMs: 1000, Offered: 72337,
				Current:  whatif.FlowMetrics{Passed: 72337},
				Proposed: whatif.FlowMetrics{Passed: 2 * 120 * 200, Blocked: 72337 - 2*120*200}},
		}},
	}
}

// randSource draws the Java fleet's random numbers.
type randSource struct{ *rand.Rand }

// poisson draws the arrivals of one second at rate qps.
func (r *randSource) poisson(qps float64) int64 {
	var n int64
	for t := r.ExpFloat64() / qps; t < 1; t += r.ExpFloat64() / qps {
		n++
	}
	return n
}
