package triage

import (
	"encoding/json"
	"fmt"
	"slices"
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
		firstSeen []int64  // by group
		behind    []string // the instances to push the newest to
	}{
		{"the push, in the smaller group", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-3", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, "v2", []int64{t0, t0 + 10000}, []string{"order-1", "order-2"}},
		{"the push, in the larger group, first seen on its earliest instance", func(e *Feeder) int64 {
			appFleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-2", t0+10100, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, "v2", []int64{t0 + 10000, t0}, []string{"order-3"}},
		{"an instance that starts without rules is not the newest", func(e *Feeder) int64 {
			appFleet(e, "order", 2, t0, "v1", old)
			e.Hello("order-3", "order", t0+20000, t0+20000)
			e.Rules("order-3", t0+20000, "v0", nil, nil)
			return t0 + 60000
		}, "v1", []int64{t0, t0 + 20000}, []string{"order-3"}},
		{"a version sent again keeps when it was first seen", func(e *Feeder) int64 {
			appFleet(e, "order", 2, t0, "v1", old)
			e.Rules("order-2", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-2", t0+30000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, "v2", []int64{t0, t0 + 10000}, []string{"order-1"}},
		{"a restart sending the version again keeps when the app first ran it", func(e *Feeder) int64 {
			appFleet(e, "order", 2, t0, "v1", old)
			e.Rules("order-2", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Bye("order-1", t0+20000)
			e.Hello("order-1", "order", t0+20000, t0+20000)
			e.Rules("order-1", t0+20000, "v1", []core.BreakerRule{old}, nil)
			return t0 + 60000
		}, "v2", []int64{t0, t0 + 10000}, []string{"order-1"}},
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
			ev := x.Evidence()
			if ev[0].Label != "Newest" || len(ev) != len(x.Groups)+2 || ev[1].Label != "Push again" ||
				ev[1].Parts[1].Input[0] != c.newest || !slices.Equal(ev[1].Parts[3].Input, c.behind) {
				t.Fatalf("evidence %+v", ev)
			}
			if want := fmt.Sprintf("push the newest version again to the %d %s not running it", len(c.behind), plural(int64(len(c.behind)), "instance", "instances")); !strings.HasPrefix(f.Advice, want) {
				t.Fatalf("advice %q, want it to begin %q", f.Advice, want)
			}
		})
	}
}
