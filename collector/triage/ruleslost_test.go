package triage

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func TestRulesLost(t *testing.T) {
	const res = "createOrder"
	rule := slowRule(res)
	other := slowRule("queryPrice")
	cases := []struct {
		name      string
		feed      func(e *Feeder) int64
		want      bool
		severity  Severity
		instances []string
		passed    int64
		lostAt    int64
	}{
		{"a bad push wipes every instance, to the end", func(e *Feeder) int64 {
			in := appFleet(e, "order", 3, t0, "v1", rule)
			traffic(e, in, res, t0, t0+30000, 5)
			for i, n := range in {
				e.Rules(n, t0+30000+int64(i)*10, "v2", nil, nil)
			}
			traffic(e, in, res, t0+30000, t0+60000, 5)
			return t0 + 60000
		}, true, Critical, []string{"order-1", "order-2", "order-3"}, (60 + 59 + 59) * 5, t0 + 30000},
		{"one resource's rules dropped, the others kept", func(e *Feeder) int64 {
			in := appFleet(e, "order", 2, t0, "v1", rule, other)
			traffic(e, in, res, t0, t0+20000, 5)
			e.Rules("order-2", t0+20000, "v2", []core.BreakerRule{other}, nil)
			traffic(e, in, res, t0+20000, t0+60000, 5)
			return t0 + 60000
		}, true, Critical, []string{"order-2"}, 80 * 5, t0 + 20000},
		{"the rules came back: warning", func(e *Feeder) int64 {
			in := appFleet(e, "order", 2, t0, "v1", rule)
			traffic(e, in, res, t0, t0+20000, 5)
			e.Rules("order-1", t0+20000, "v2", nil, nil)
			traffic(e, in, res, t0+20000, t0+40000, 5)
			e.Rules("order-1", t0+40000, "v3", []core.BreakerRule{rule}, nil)
			traffic(e, in, res, t0+40000, t0+60000, 5)
			return t0 + 60000
		}, true, Warning, []string{"order-1"}, 40 * 5, t0 + 20000},
		{"traffic stopped long before the end: warning", func(e *Feeder) int64 {
			in := appFleet(e, "order", 1, t0, "v1", rule)
			traffic(e, in, res, t0, t0+10000, 5)
			e.Rules("order-1", t0+10000, "v2", nil, nil)
			traffic(e, in, res, t0+10000, t0+30000, 5)
			return t0 + 90000
		}, true, Warning, []string{"order-1"}, 40 * 5, t0 + 10000},
		{"back within the grace period: nothing", func(e *Feeder) int64 {
			in := appFleet(e, "order", 1, t0, "v1", rule)
			traffic(e, in, res, t0, t0+20000, 5)
			e.Rules("order-1", t0+20000, "v2", nil, nil)
			traffic(e, in, res, t0+20000, t0+22000, 5)
			e.Rules("order-1", t0+22000, "v1", []core.BreakerRule{rule}, nil)
			traffic(e, in, res, t0+22000, t0+60000, 5)
			return t0 + 60000
		}, false, 0, nil, 0, 0},
		{"no traffic after the loss: nothing", func(e *Feeder) int64 {
			in := appFleet(e, "order", 1, t0, "v1", rule)
			traffic(e, in, res, t0, t0+20000, 5)
			e.Rules("order-1", t0+20000, "v2", nil, nil)
			return t0 + 60000
		}, false, 0, nil, 0, 0},
		{"a restarted process starts without rules: not a loss", func(e *Feeder) int64 {
			in := appFleet(e, "order", 1, t0, "v1", rule)
			traffic(e, in, res, t0, t0+20000, 5)
			e.Hello("order-1", "order", t0+20000, t0+19000)
			e.Rules("order-1", t0+20000, "v0", nil, nil)
			traffic(e, in, res, t0+20000, t0+60000, 5)
			return t0 + 60000
		}, false, 0, nil, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, all := fires(t, c.feed, KindRulesLost, c.want)
			if len(only(t, all, KindUnprotected)) > 0 {
				t.Fatalf("rules lost are not unprotected traffic: %+v", all)
			}
			if !c.want {
				return
			}
			x := f.Facts.(*RulesLostFacts)
			if f.Severity != c.severity || !slices.Equal(f.Instances, c.instances) || x.Passed != c.passed || x.LostAt != c.lostAt || f.From != c.lostAt {
				t.Fatalf("%v %v passed %d lostAt %d, want %v %v %d %d", f.Severity, f.Instances, x.Passed, x.LostAt-t0, c.severity, c.instances, c.passed, c.lostAt-t0)
			}
			if f.Summary == "" || f.Advice == "" {
				t.Fatalf("no words: %+v", f)
			}
		})
	}
}

// fires feeds a new engine and judges at the time feed returns: the
// finding of the kind, which must be there exactly when want, and all the
// findings.
func fires(t *testing.T, feed func(*Feeder) int64, kind Kind, want bool) (Finding, []Finding) {
	t.Helper()
	e := NewFeeder(Config{})
	all := e.Findings(feed(e))
	got := only(t, all, kind)
	if (len(got) == 1) != want {
		t.Fatalf("got %d %s findings, want fires=%v: %+v", len(got), kind, want, all)
	}
	if !want {
		return Finding{}, all
	}
	return got[0], all
}

// A fleet wiped at once does not drift: its instances agree on no rules.
func TestRulesLostEverywhereIsNotDrift(t *testing.T) {
	e := NewFeeder(Config{})
	in := appFleet(e, "order", 4, t0, "v1", slowRule("r"))
	traffic(e, in, "r", t0, t0+20000, 5)
	for i, n := range in {
		e.Rules(n, t0+20000+int64(i)*100, "v2", nil, nil)
	}
	traffic(e, in, "r", t0+20000, t0+60000, 5)
	fs := e.Findings(t0 + 60000)
	if len(fs) != 1 || fs[0].Kind != KindRulesLost {
		t.Fatalf("want rules-lost alone, got %+v", fs)
	}
	b, err := json.Marshal(fs[0].Facts)
	if err != nil || string(b) != `{"passed":1585,"lostAt":1764460820000}` {
		t.Fatalf("facts %s %v", b, err)
	}
	if len(fs[0].Facts.Evidence()) != 2 {
		t.Fatalf("evidence %+v", fs[0].Facts.Evidence())
	}
}
