package triage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func TestRuleDriftNewest(t *testing.T) {
	const res = "createOrder"
	old, pushed := slowRule(res), slowRule(res)
	pushed.Threshold = 0.8
	cases := []struct {
		name      string
		feed      func(e *Feeder) int64
		newest    string
		firstSeen []int64 // by group
	}{
		{"the push, in the smaller group", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-3", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, "v2", []int64{t0, t0 + 10000}},
		{"the push, in the larger group, first seen on its earliest instance", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-2", t0+10100, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, "v2", []int64{t0 + 10000, t0}},
		{"an instance that starts without rules is not the newest", func(e *Feeder) int64 {
			appFleet(e, "order", 2, t0, "v1", old)
			e.Hello("order-3", "order", t0+20000, t0+20000)
			e.Rules("order-3", t0+20000, "v0", nil, nil)
			return t0 + 60000
		}, "v1", []int64{t0, t0 + 20000}},
		{"a version sent again keeps when it was first seen", func(e *Feeder) int64 {
			appFleet(e, "order", 2, t0, "v1", old)
			e.Rules("order-2", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-2", t0+30000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, "v2", []int64{t0, t0 + 10000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := fires(t, c.feed, KindRuleDrift, true)
			x := f.Facts.(*RuleDriftFacts)
			var seen []int64
			for _, g := range x.Groups {
				seen = append(seen, g.FirstSeen)
			}
			if x.Newest != c.newest || len(seen) != len(c.firstSeen) || seen[0] != c.firstSeen[0] || seen[1] != c.firstSeen[1] {
				t.Fatalf("newest %q first seen %v, want %q %v", x.Newest, seen, c.newest, c.firstSeen)
			}
			b, err := json.Marshal(x)
			if err != nil || !strings.Contains(string(b), `"firstSeen":`) || !strings.Contains(string(b), `"newest":"`+c.newest+`"`) {
				t.Fatalf("facts %s %v", b, err)
			}
			if ev := x.Evidence(); ev[0].Label != "Newest" || len(ev) != len(x.Groups)+1 {
				t.Fatalf("evidence %+v", ev)
			}
		})
	}
}
