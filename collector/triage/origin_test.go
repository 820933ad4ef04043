package triage

import (
	"slices"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// limited feeds an instance of app a flow rule of createOrder with that
// limitApp, and 90 s of traffic at 200 QPS.
func limited(app, limitApp string) func(e *Feeder) int64 {
	return func(e *Feeder) int64 {
		e.Hello("o-1", app, t0, t0-1000)
		e.Rules("o-1", t0, "v1", nil, []core.FlowRule{{Resource: "createOrder", Threshold: 200, LimitApp: limitApp}})
		traffic(e, []string{"o-1"}, "createOrder", t0, t0+90000, 100)
		return t0 + 90000
	}
}

func TestInertOriginMismatch(t *testing.T) {
	const res, app = "createOrder", "order-service"
	own := core.FlowRule{Resource: res, Threshold: 200, LimitApp: app}
	hello := func(e *Feeder, insts ...string) {
		for _, in := range insts {
			e.Hello(in, app, t0, t0-1000)
		}
	}
	cases := []struct {
		name    string
		feed    func(e *Feeder) int64
		want    bool
		insts   []string
		offered int64
		qps     float64
		flows   int
		brk     int
	}{
		{"a flow rule limiting the app's own calls", func(e *Feeder) int64 {
			hello(e, "o-1")
			e.Rules("o-1", t0, "v1", nil, []core.FlowRule{own, {Resource: res, Threshold: 50, LimitApp: "gateway"}})
			traffic(e, []string{"o-1"}, res, t0, t0+90000, 100)
			return t0 + 90000
		}, true, []string{"o-1"}, 18000, 200, 1, 0},
		// Java never checks a degrade rule's limitApp: a breaker naming the
		// app acts on every caller, and is not listed.
		{"a Java breaker naming the app too, on two instances", func(e *Feeder) int64 {
			b := slowRule(res)
			b.Semantics, b.LimitApp = core.SemanticsJava, app
			hello(e, "o-1", "o-2")
			for _, in := range []string{"o-1", "o-2"} {
				e.Rules(in, t0, "v1", []core.BreakerRule{b}, []core.FlowRule{own})
			}
			traffic(e, []string{"o-1"}, res, t0, t0+90000, 100)
			traffic(e, []string{"o-2"}, res, t0, t0+90000, 50)
			return t0 + 90000
		}, true, []string{"o-1", "o-2"}, 27000, 200, 1, 0},
		{"only a Java breaker naming the app", func(e *Feeder) int64 {
			b := slowRule(res)
			b.Semantics, b.LimitApp = core.SemanticsJava, app
			hello(e, "o-1")
			e.Rules("o-1", t0, "v1", []core.BreakerRule{b}, []core.FlowRule{{Resource: res, Threshold: 200}})
			traffic(e, []string{"o-1"}, res, t0, t0+90000, 100)
			return t0 + 90000
		}, false, nil, 0, 0, 0, 0},
		{"the app told after its rules and traffic", func(e *Feeder) int64 {
			e.Rules("o-1", t0, "v1", nil, []core.FlowRule{own})
			traffic(e, []string{"o-1"}, res, t0, t0+90000, 25)
			hello(e, "o-1")
			return t0 + 90000
		}, true, []string{"o-1"}, 4500, 50, 1, 0},
		{"under a minute of traffic: not judged", func(e *Feeder) int64 {
			hello(e, "o-1")
			e.Rules("o-1", t0, "v1", nil, []core.FlowRule{own})
			traffic(e, []string{"o-1"}, res, t0, t0+59500, 100)
			return t0 + 59500
		}, false, nil, 0, 0, 0, 0},
		{"limitApp default", limited(app, limitAppDefault), false, nil, 0, 0, 0, 0},
		{"limitApp other", limited(app, limitAppOther), false, nil, 0, 0, 0, 0},
		{"limitApp a caller's name", limited(app, "gateway"), false, nil, 0, 0, 0, 0},
		{"an app named default", limited(limitAppDefault, limitAppDefault), false, nil, 0, 0, 0, 0},
		{"an app named other", limited(limitAppOther, limitAppOther), false, nil, 0, 0, 0, 0},
		{"the same rule in an app of that name", limited("gateway", "gateway"), true, []string{"o-1"}, 18000, 200, 1, 0},
		{"no traffic on the rule's resource", func(e *Feeder) int64 {
			hello(e, "o-1")
			e.Rules("o-1", t0, "v1", nil, []core.FlowRule{own})
			traffic(e, []string{"o-1"}, "other", t0, t0+90000, 100)
			return t0 + 90000
		}, false, nil, 0, 0, 0, 0},
		{"the rule fixed", func(e *Feeder) int64 {
			hello(e, "o-1")
			e.Rules("o-1", t0, "v1", nil, []core.FlowRule{own})
			traffic(e, []string{"o-1"}, res, t0, t0+90000, 100)
			r := own
			r.LimitApp = limitAppDefault
			e.Rules("o-1", t0+90000, "v2", nil, []core.FlowRule{r})
			return t0 + 90000
		}, false, nil, 0, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, x := firesInert(t, c.feed, c.want)
			if x == nil {
				return
			}
			if f.Severity != Warning || f.Resource != res || x.Reason != InertOriginMismatch || !slices.Equal(f.Instances, c.insts) ||
				x.Offered != c.offered || x.QPS != c.qps || len(x.Rule.Flows) != c.flows || len(x.Rule.Breakers) != c.brk {
				t.Fatalf("finding %+v facts %+v", f, x)
			}
			for _, r := range x.Rule.Flows {
				if r.LimitApp != f.App {
					t.Fatalf("rule %+v is not one naming the app", r)
				}
			}
			b, js := factsJSON(t, f)
			keys := make([]string, 0, len(js))
			for k := range js {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, []string{"reason", "rule", "suggest"}) || js["reason"] != "origin-mismatch" ||
				js["suggest"].(map[string]any)["limitApp"] != "default" || len(js["suggest"].(map[string]any)) != 1 {
				t.Fatalf("facts %s", b)
			}
			for _, s := range []string{f.Summary, f.Advice} {
				if s == "" || strings.Contains(s, f.App) || !strings.Contains(s, fmtFloat(c.qps, 1)+" QPS") {
					t.Fatalf("words %q / %q", f.Summary, f.Advice)
				}
			}
			if !strings.Contains(f.Summary, itoa(c.offered)+" entries") || !strings.Contains(f.Advice, "threshold of 200") {
				t.Fatalf("words %q / %q", f.Summary, f.Advice)
			}
		})
	}
}

// A resource whose breaker cannot trip and whose flow rule names the app
// itself gives one finding, the same one every time.
func TestInertOriginAndCannotTrip(t *testing.T) {
	const res, app = "createOrder", "order-service"
	b := slowRule(res)
	b.MinRequestAmount = 10000
	var first string
	for range 20 {
		e := NewFeeder(Config{})
		e.Hello("o-1", app, t0, t0-1000)
		e.Rules("o-1", t0, "v1", []core.BreakerRule{b}, []core.FlowRule{{Resource: res, Threshold: 200, LimitApp: app}})
		traffic(e, []string{"o-1"}, res, t0, t0+90000, 10)
		f := one(t, e.Findings(t0+90000), KindInertRule)
		got := string(f.Facts.(*InertRuleFacts).Reason)
		if first == "" {
			first = got
		}
		if got != first || got != string(InertCannotTrip) {
			t.Fatalf("reason %s, then %s", first, got)
		}
	}
}
