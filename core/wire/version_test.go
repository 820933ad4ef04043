package wire

import (
	"encoding/json"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func TestRulesVersion(t *testing.T) {
	var a, b core.BreakerRule
	// The same rule written with its fields in two orders.
	if err := json.Unmarshal([]byte(`{"resource":"r","strategy":1,"threshold":0.5,"statIntervalMs":1000,"retryTimeoutMs":5000}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"retryTimeoutMs":5000,"statIntervalMs":1000,"threshold":0.5,"strategy":1,"resource":"r"}`), &b); err != nil {
		t.Fatal(err)
	}
	c := a
	c.Resource = "s"
	f := core.FlowRule{Resource: "f", Threshold: 10}

	v := RulesVersion([]core.BreakerRule{a, c}, []core.FlowRule{f})
	for name, other := range map[string]string{
		"same":         RulesVersion([]core.BreakerRule{a, c}, []core.FlowRule{f}),
		"field order":  RulesVersion([]core.BreakerRule{b, c}, []core.FlowRule{f}),
		"rule order":   RulesVersion([]core.BreakerRule{c, a}, []core.FlowRule{f}),
		"fresh slices": RulesVersion(append([]core.BreakerRule{}, a, c), append([]core.FlowRule(nil), f)),
	} {
		if other != v {
			t.Errorf("%s: %s != %s", name, other, v)
		}
	}
	for name, other := range map[string]string{
		"changed threshold": RulesVersion([]core.BreakerRule{a, func() core.BreakerRule { x := c; x.Threshold = 0.6; return x }()}, []core.FlowRule{f}),
		"rule dropped":      RulesVersion([]core.BreakerRule{a}, []core.FlowRule{f}),
		"rule repeated":     RulesVersion([]core.BreakerRule{a, c, c}, []core.FlowRule{f}),
		"flow as breaker":   RulesVersion([]core.BreakerRule{a, c}, nil),
		"empty":             RulesVersion(nil, nil),
	} {
		if other == v {
			t.Errorf("%s: same version %s", name, v)
		}
	}
	if len(v) != 12 {
		t.Errorf("version %q is not 12 hex digits", v)
	}
	// A golden value: a change here changes every recorded fixture's
	// versions, so it must be deliberate.
	if got, want := RulesVersion(nil, nil), "5a325c103e3c"; got != want {
		t.Errorf("empty rule set version %s, want %s", got, want)
	}
	// Hot-parameter rules are content; none at all is the version of old.
	p := core.HotParamRule{Resource: "q", MetricType: core.HotParamQPS, Threshold: 200, DurationInSec: 1,
		SpecificItems: map[string]int64{"vip": 1000, "b": 1}}
	q := p
	q.SpecificItems = map[string]int64{"b": 1, "vip": 1000}
	if RulesVersion(nil, nil, p) != RulesVersion(nil, nil, q) {
		t.Error("specific items in another order give another version")
	}
	q.SpecificItems = map[string]int64{"vip": 1000}
	if RulesVersion(nil, nil, p) == RulesVersion(nil, nil, q) || RulesVersion(nil, nil, p) == RulesVersion(nil, nil) {
		t.Error("hot-parameter rules do not change the version")
	}
	if RulesVersion(nil, nil, []core.HotParamRule{}...) != RulesVersion(nil, nil) {
		t.Error("an empty params list changes the version")
	}
	l := f
	l.LimitApp = "order-service"
	if RulesVersion(nil, []core.FlowRule{l}) == RulesVersion(nil, []core.FlowRule{f}) {
		t.Error("limitApp does not change the version")
	}
	if RulesVersion(nil, nil) != RulesVersion([]core.BreakerRule{}, []core.FlowRule{}) {
		t.Error("nil and empty rule sets differ")
	}
}
