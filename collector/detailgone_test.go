package collector

import (
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestDetailRulesOfDepartedInstances: while an instance is live, the
// detail's breaker is the live instances' rule; once every instance is
// gone, their last known rules still say what guarded the resource, as
// the table's row does (HasBreaker), marked as the departed ones'.
func TestDetailRulesOfDepartedInstances(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock})
	rule := func(th float64) core.BreakerRule {
		return core.BreakerRule{Resource: "db", Strategy: core.ErrorRatio, Threshold: th, RetryTimeoutMs: 5000,
			MinRequestAmount: 20, StatIntervalMs: 1000}
	}
	for i, name := range []string{"a-1", "a-2", "a-3"} {
		c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: name}, App: "a", BucketMs: 500})
		th := 0.5
		if i == 0 {
			th = 0.9 // the one that differs, and goes last
		}
		c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: name}, Version: "1", Breakers: []core.BreakerRule{rule(th)}})
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: name}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "db", Start: t0ms, Metrics: core.Metrics{Pass: 10, Complete: 10}}}})
	}
	clock.Set(time.UnixMilli(t0ms + 1000))
	bye := func(name string) {
		if !c.Ingest("t", &wire.Bye{Header: wire.Header{Ts: clock.UnixMilli(), Instance: name}}) {
			t.Fatalf("bye of %s refused", name)
		}
	}
	bye("a-2")
	bye("a-3")
	d := c.Detail("a", "db", t0ms, t0ms+1000)
	if !d.HasBreaker || d.Threshold != 0.9 || d.RulesOfGone {
		t.Errorf("one live: breaker %v threshold %v of gone %v, want the live one's 0.9", d.HasBreaker, d.Threshold, d.RulesOfGone)
	}
	bye("a-1")
	d = c.Detail("a", "db", t0ms, t0ms+1000)
	if !d.HasBreaker || d.Threshold != 0.5 || d.Strategy != core.ErrorRatio || !d.RulesOfGone {
		t.Errorf("all gone: breaker %v threshold %v of gone %v, want the departed majority's 0.5", d.HasBreaker, d.Threshold, d.RulesOfGone)
	}
	for _, r := range c.Publish().Rows {
		if r.Resource == "db" && (!r.HasBreaker || r.Instances != 0) {
			t.Errorf("row: breaker %v, %d instances; want a breaker and 0 live", r.HasBreaker, r.Instances)
		}
	}
}
