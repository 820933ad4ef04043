package triage

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// The kinds that compare the instances of an app.

func TestSyncHalfOpen(t *testing.T) {
	const res = "pay"
	// occasion makes the given instances enter HALF_OPEN at start+i*step,
	// then all re-open.
	occasion := func(e *Feeder, insts []string, start, step int64) {
		for i, in := range insts {
			e.Transition(in, trans(res, core.Open, core.HalfOpen, start+int64(i)*step))
		}
		for i, in := range insts {
			e.Transition(in, trans(res, core.HalfOpen, core.Open, start+int64(i)*step+2000))
		}
	}
	trip := func(e *Feeder, insts []string, at int64) {
		for _, in := range insts {
			e.Transition(in, trans(res, core.Closed, core.Open, at))
		}
	}
	// closedFlood feeds three occasions of a recovery flood, then every
	// breaker closing; it returns the end of the last occasion.
	closedFlood := func(e *Feeder, in []string) int64 {
		trip(e, in, t0+1000)
		occasion(e, in, t0+11000, 100)
		occasion(e, in, t0+23000, 100)
		occasion(e, in, t0+35000, 100)
		for i, n := range in {
			closeBreaker(e, n, res, t0+50000+int64(i)*3000)
		}
		return t0 + 35200
	}
	cases := []struct {
		name      string
		instances int
		feed      func(e *Feeder, insts []string) int64
		want      bool
		severity  Severity
		count     int64
		spread    int64
	}{
		{"3 of 4 within 1000 ms on 2 occasions", 4, func(e *Feeder, in []string) int64 {
			trip(e, in[:3], t0+1000)
			occasion(e, in[:3], t0+11000, 300)
			occasion(e, in[:3], t0+23000, 450)
			return t0 + 30000
		}, true, Critical, 2, 900},
		{"one occasion is not enough", 4, func(e *Feeder, in []string) int64 {
			trip(e, in[:3], t0+1000)
			occasion(e, in[:3], t0+11000, 300)
			return t0 + 30000
		}, false, 0, 0, 0},
		{"2 instances are not a herd", 2, func(e *Feeder, in []string) int64 {
			trip(e, in, t0+1000)
			occasion(e, in, t0+11000, 300)
			occasion(e, in, t0+23000, 300)
			return t0 + 30000
		}, false, 0, 0, 0},
		{"3 of 8 reporters are less than half", 8, func(e *Feeder, in []string) int64 {
			traffic(e, in, res, t0, t0+1000, 5)
			trip(e, in[:3], t0+1000)
			occasion(e, in[:3], t0+11000, 300)
			occasion(e, in[:3], t0+23000, 300)
			return t0 + 30000
		}, false, 0, 0, 0},
		{"4 of 8 reporters are half", 8, func(e *Feeder, in []string) int64 {
			traffic(e, in, res, t0, t0+1000, 5)
			trip(e, in[:4], t0+1000)
			occasion(e, in[:4], t0+11000, 300)
			occasion(e, in[:4], t0+23000, 300)
			return t0 + 30000
		}, true, Critical, 2, 900},
		{"a spread of 1001 ms is not together", 3, func(e *Feeder, in []string) int64 {
			trip(e, in, t0+1000)
			occasion(e, in, t0+11000, 501)
			occasion(e, in, t0+23000, 501)
			return t0 + 30000
		}, false, 0, 0, 0},
		{"a spread of exactly 1000 ms is", 3, func(e *Feeder, in []string) int64 {
			trip(e, in, t0+1000)
			occasion(e, in, t0+11000, 500)
			occasion(e, in, t0+23000, 500)
			return t0 + 30000
		}, true, Critical, 2, 1000},
		{"no occasion for HoldMs: warning", 3, func(e *Feeder, in []string) int64 {
			return closedFlood(e, in) + DefaultHoldMs
		}, true, Warning, 3, 200},
		{"all closed, the last occasion less than HoldMs ago: still critical", 3, func(e *Feeder, in []string) int64 {
			return closedFlood(e, in) + DefaultHoldMs - 1
		}, true, Critical, 3, 200},
		{"a retry timeout of 60 s holds for two of them", 3, func(e *Feeder, in []string) int64 {
			trip(e, in, t0+1000)
			for k := range 3 {
				for _, n := range in {
					e.Transition(n, core.Transition{Resource: res, From: core.Open, To: core.HalfOpen,
						AtMs: t0 + 61000 + int64(k)*62000, RetryTimeoutMs: 60000})
					e.Transition(n, core.Transition{Resource: res, From: core.HalfOpen, To: core.Open,
						AtMs: t0 + 61500 + int64(k)*62000, Probe: &core.Probe{RtMs: 2000}})
				}
			}
			return t0 + 61000 + 2*62000 + 119000
		}, true, Critical, 3, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			insts := appFleet(e, "gateway", c.instances, t0, "v1", slowRule(res))
			now := c.feed(e, insts)
			got := only(t, e.Findings(now), KindSyncHalfOpen)
			if (len(got) == 1) != c.want {
				t.Fatalf("got %d findings, want fires=%v: %+v", len(got), c.want, got)
			}
			if !c.want {
				return
			}
			f := got[0]
			if f.Severity != c.severity || f.count() != c.count || f.spreadMs() != c.spread {
				t.Fatalf("severity %v count %d spread %d, want %v %d %d", f.Severity, f.count(), f.spreadMs(), c.severity, c.count, c.spread)
			}
		})
	}
}

func TestRuleDrift(t *testing.T) {
	const res = "createOrder"
	old, pushed := slowRule(res), slowRule(res)
	pushed.Threshold = 0.8
	cases := []struct {
		name     string
		feed     func(e *Feeder) int64
		want     bool
		severity Severity
		groups   []RuleGroup
	}{
		{"a push that reached 2 of 3 instances", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-2", t0+10100, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, true, Critical, []RuleGroup{
			{Version: "v2", Rule: RuleSet{Breakers: []core.BreakerRule{pushed}}, Instances: []string{"order-1", "order-2"}, FirstSeen: t0 + 10000},
			{Version: "v1", Rule: RuleSet{Breakers: []core.BreakerRule{old}}, Instances: []string{"order-3"}, FirstSeen: t0},
		}},
		{"a push that converged within the grace period", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1", old)
			for i, in := range []string{"order-1", "order-2", "order-3"} {
				e.Rules(in, t0+10000+int64(i)*1000, "v2", []core.BreakerRule{pushed}, nil)
			}
			return t0 + 60000
		}, false, 0, nil},
		{"a push that converged late: warning", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-2", t0+20000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-3", t0+30000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, true, Warning, []RuleGroup{ // as the episode ended
			{Version: "v2", Rule: RuleSet{Breakers: []core.BreakerRule{pushed}}, Instances: []string{"order-1", "order-2"}, FirstSeen: t0 + 10000},
			{Version: "v1", Rule: RuleSet{Breakers: []core.BreakerRule{old}}, Instances: []string{"order-3"}, FirstSeen: t0},
		}},
		{"a new rule missing on one instance", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1")
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-2", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, true, Critical, []RuleGroup{
			{Version: "v2", Rule: RuleSet{Breakers: []core.BreakerRule{pushed}}, Instances: []string{"order-1", "order-2"}, FirstSeen: t0 + 10000},
			{Version: "v1", Instances: []string{"order-3"}, FirstSeen: t0},
		}},
		{"same rules in another order, other versions: no drift", func(e *Feeder) int64 {
			other := slowRule("other")
			e.Hello("a", "order", t0, t0)
			e.Hello("b", "order", t0, t0)
			e.Rules("a", t0, "x", []core.BreakerRule{old, other}, nil)
			e.Rules("b", t0, "y", []core.BreakerRule{other, old}, nil)
			return t0 + 60000
		}, false, 0, nil},
		{"instances of different apps do not drift", func(e *Feeder) int64 {
			appFleet(e, "order", 2, t0, "v1", old)
			appFleet(e, "pay", 2, t0, "v2", pushed)
			return t0 + 60000
		}, false, 0, nil},
		{"the odd instance left: warning", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Bye("order-1", t0+30000)
			return t0 + 60000
		}, true, Warning, []RuleGroup{
			{Version: "v1", Rule: RuleSet{Breakers: []core.BreakerRule{old}}, Instances: []string{"order-2", "order-3"}, FirstSeen: t0},
			{Version: "v2", Rule: RuleSet{Breakers: []core.BreakerRule{pushed}}, Instances: []string{"order-1"}, FirstSeen: t0 + 10000},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			now := c.feed(e)
			got := only(t, e.Findings(now), KindRuleDrift)
			if (len(got) == 1) != c.want {
				t.Fatalf("got %d findings, want fires=%v: %+v", len(got), c.want, got)
			}
			if !c.want {
				return
			}
			f := got[0]
			if f.Severity != c.severity {
				t.Fatalf("severity %v, want %v", f.Severity, c.severity)
			}
			if !reflect.DeepEqual(f.groups(), c.groups) {
				t.Fatalf("groups\n got %+v\nwant %+v", f.groups(), c.groups)
			}
		})
	}
}

func TestUnprotected(t *testing.T) {
	const res = "queryPrice"
	cases := []struct {
		name     string
		feed     func(e *Feeder) int64
		want     bool
		severity Severity
		passed   int64
	}{
		{"one instance without the rule, to the end", func(e *Feeder) int64 {
			in := appFleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, append(in, "price-3"), res, t0, t0+10000, 7)
			return t0 + 10000
		}, true, Critical, 7 * 20},
		{"it got the rule later: warning", func(e *Feeder) int64 {
			in := appFleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, append(in, "price-3"), res, t0, t0+10000, 7)
			e.Rules("price-3", t0+10000, "v1", []core.BreakerRule{slowRule(res)}, nil)
			traffic(e, append(in, "price-3"), res, t0+10000, t0+20000, 7)
			return t0 + 20000
		}, true, Warning, 7 * 20},
		{"traffic stopped long before the end: warning", func(e *Feeder) int64 {
			appFleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, []string{"price-3"}, res, t0, t0+10000, 1)
			return t0 + 60000
		}, true, Warning, 20},
		{"shorter than the grace period: nothing", func(e *Feeder) int64 {
			appFleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, []string{"price-3"}, res, t0, t0+2000, 1)
			e.Rules("price-3", t0+2000, "v1", []core.BreakerRule{slowRule(res)}, nil)
			traffic(e, []string{"price-3"}, res, t0+2000, t0+20000, 1)
			return t0 + 20000
		}, false, 0, 0},
		{"no instance has a rule: nothing", func(e *Feeder) int64 {
			in := appFleet(e, "price", 3, t0, "v0")
			traffic(e, in, res, t0, t0+20000, 1)
			return t0 + 20000
		}, false, 0, 0},
		{"rules not known yet: nothing", func(e *Feeder) int64 {
			appFleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			traffic(e, []string{"price-3"}, res, t0, t0+20000, 1)
			return t0 + 20000
		}, false, 0, 0},
		{"a flow rule protects too", func(e *Feeder) int64 {
			appFleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v9", nil, []core.FlowRule{{Resource: res, Threshold: 100}})
			traffic(e, []string{"price-3"}, res, t0, t0+20000, 1)
			return t0 + 20000
		}, false, 0, 0},
		{"blocked only (pass 0) is not passing", func(e *Feeder) int64 {
			appFleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, []string{"price-3"}, res, t0, t0+20000, 0)
			return t0 + 20000
		}, false, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			now := c.feed(e)
			got := only(t, e.Findings(now), KindUnprotected)
			if (len(got) == 1) != c.want {
				t.Fatalf("got %d findings, want fires=%v: %+v", len(got), c.want, got)
			}
			if !c.want {
				return
			}
			f := got[0]
			if f.Severity != c.severity || f.passed() != c.passed || !slices.Equal(f.Instances, []string{"price-3"}) {
				t.Fatalf("severity %v passed %d instances %v, want %v %d", f.Severity, f.passed(), f.Instances, c.severity, c.passed)
			}
		})
	}
}

func TestSharedResource(t *testing.T) {
	e := NewFeeder(Config{})
	z := appFleet(e, "zeta", 1, t0, "v1")
	a := appFleet(e, "alpha", 2, t0, "v1")
	b := appFleet(e, "beta", 1, t0, "v1")
	traffic(e, z, "GET:/shared", t0, t0+5000, 1)
	traffic(e, a, "GET:/shared", t0+1000, t0+5000, 1)
	traffic(e, b, "GET:/shared", t0+2000, t0+6000, 1)
	traffic(e, a, "GET:/own", t0, t0+5000, 1)
	fs := e.Findings(t0 + 6000)
	f := one(t, fs, KindSharedResource)
	if f.App != "alpha" || !slices.Equal(f.apps(), []string{"alpha", "beta", "zeta"}) || f.Resource != "GET:/shared" {
		t.Fatalf("finding %+v", f)
	}
	if !slices.Equal(f.Instances, []string{"alpha-1", "alpha-2", "beta-1", "zeta-1"}) || f.Severity != Warning {
		t.Fatalf("finding %+v", f)
	}
	if f.From != t0+1500 || f.To != t0+6000 {
		t.Fatalf("from %d to %d", f.From-t0, f.To-t0)
	}
}
