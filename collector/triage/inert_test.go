package triage

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func TestInertCannotTrip(t *testing.T) {
	const res = "POST:/api/pay"
	huge := slowRule(res)
	huge.MinRequestAmount = 10000
	cases := []struct {
		name    string
		feed    func(e *Feeder) int64
		want    bool
		most    int64
		suggest InertSuggest
	}{
		{"minRequestAmount 10000 at 100 QPS in a 10 s window", func(e *Feeder) int64 {
			in := appFleet(e, "pay", 2, t0, "v1", huge)
			traffic(e, in, res, t0, t0+120000, 50)
			return t0 + 120000
		}, true, 1000, InertSuggest{MinRequestAmount: 100}},
		{"a window holding fewer than 20 also needs a longer one", func(e *Feeder) int64 {
			r := huge
			r.MinRequestAmount, r.StatIntervalMs = 50, 1000
			in := appFleet(e, "pay", 1, t0, "v1", r)
			traffic(e, in, res, t0, t0+120000, 3)
			return t0 + 120000
		}, true, 6, InertSuggest{MinRequestAmount: 20, StatIntervalMs: 4000}},
		{"under a minute of traffic: not judged", func(e *Feeder) int64 {
			in := appFleet(e, "pay", 1, t0, "v1", huge)
			traffic(e, in, res, t0, t0+50000, 50)
			return t0 + 50000
		}, false, 0, InertSuggest{}},
		{"the windows reach minRequestAmount", func(e *Feeder) int64 {
			r := huge
			r.MinRequestAmount = 1000
			in := appFleet(e, "pay", 1, t0, "v1", r)
			traffic(e, in, res, t0, t0+120000, 50)
			return t0 + 120000
		}, false, 0, InertSuggest{}},
		{"a breaker seen to trip can trip", func(e *Feeder) int64 {
			in := appFleet(e, "pay", 1, t0, "v1", huge)
			traffic(e, in, res, t0, t0+60000, 50)
			tr := trans(res, core.Closed, core.Open, t0+60000)
			tr.Snapshot = core.WindowSnapshot{Total: 900, Bad: 800}
			e.Transition(in[0], tr)
			closeBreaker(e, in[0], res, t0+70000)
			traffic(e, in, res, t0+70000, t0+120000, 50)
			return t0 + 120000
		}, false, 0, InertSuggest{}},
		{"the rule lowered: no longer inert", func(e *Feeder) int64 {
			in := appFleet(e, "pay", 1, t0, "v1", huge)
			traffic(e, in, res, t0, t0+120000, 50)
			e.Rules(in[0], t0+120000, "v2", []core.BreakerRule{slowRule(res)}, nil)
			return t0 + 120000
		}, false, 0, InertSuggest{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, x := firesInert(t, c.feed, c.want)
			if x == nil {
				return
			}
			if f.Severity != Warning || x.Reason != InertCannotTrip || x.MaxWindowRequests != c.most || *x.Suggest != c.suggest || len(x.Rule.Breakers) != 1 {
				t.Fatalf("%v %+v suggest %+v", f.Severity, x, *x.Suggest)
			}
			if f.Summary == "" || f.Advice == "" {
				t.Fatalf("no words: %+v", f)
			}
		})
	}
}

func TestInertNameMismatch(t *testing.T) {
	flow := core.FlowRule{Resource: " CreateOrder", Threshold: 200}
	cases := []struct {
		name string
		feed func(e *Feeder) int64
		want bool
	}{
		{"rules before the traffic", func(e *Feeder) int64 {
			e.Hello("gw-1", "gateway", t0, t0)
			e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{flow})
			traffic(e, []string{"gw-1"}, "createOrder", t0, t0+90000, 10)
			return t0 + 90000
		}, true},
		{"traffic before the rules", func(e *Feeder) int64 {
			e.Hello("gw-1", "gateway", t0, t0)
			e.Rules("gw-1", t0, "v0", nil, nil)
			traffic(e, []string{"gw-1"}, "createOrder", t0, t0+30000, 10)
			e.Rules("gw-1", t0+30000, "v1", nil, []core.FlowRule{flow})
			traffic(e, []string{"gw-1"}, "createOrder", t0+30000, t0+90000, 10)
			return t0 + 90000
		}, true},
		{"under a minute of traffic: not judged", func(e *Feeder) int64 {
			e.Hello("gw-1", "gateway", t0, t0)
			e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{flow})
			traffic(e, []string{"gw-1"}, "createOrder", t0, t0+50000, 10)
			return t0 + 50000
		}, false},
		{"the rule's own resource has traffic too", func(e *Feeder) int64 {
			e.Hello("gw-1", "gateway", t0, t0)
			e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{flow})
			traffic(e, []string{"gw-1"}, "createOrder", t0, t0+90000, 10)
			traffic(e, []string{"gw-1"}, flow.Resource, t0+90000, t0+91000, 1)
			return t0 + 91000
		}, false},
		{"the names differ otherwise", func(e *Feeder) int64 {
			e.Hello("gw-1", "gateway", t0, t0)
			e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{{Resource: "createOrders", Threshold: 200}})
			traffic(e, []string{"gw-1"}, "createOrder", t0, t0+90000, 10)
			return t0 + 90000
		}, false},
		{"the rule removed", func(e *Feeder) int64 {
			e.Hello("gw-1", "gateway", t0, t0)
			e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{flow})
			traffic(e, []string{"gw-1"}, "createOrder", t0, t0+90000, 10)
			e.Rules("gw-1", t0+90000, "v2", nil, nil)
			return t0 + 90000
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := fires(t, c.feed, KindInertRule, c.want)
			if !c.want {
				return
			}
			b, js := factsJSON(t, f)
			if f.Resource != flow.Resource || js["reason"] != "name-mismatch" || js["near"] != "createOrder" || js["maxWindowRequests"] != nil {
				t.Fatalf("finding %+v, facts %s", f, b)
			}
			if f.Facts.(*InertRuleFacts).NearEntries != 1800 || !slices.Equal(f.Instances, []string{"gw-1"}) {
				t.Fatalf("finding %+v", f)
			}
		})
	}
}

// windowMax gives the exact busiest window up to windowSlots buckets, and
// an upper bound beyond, whatever the gaps between buckets.
func TestWindowMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, interval := range []int64{500, 1000, 1200, 10000, 16000, 60000, 120000} {
		var starts, counts []int64
		at := t0
		for range 2000 {
			at += 500 * (1 + int64(rng.IntN(3))*int64(rng.IntN(2)))
			if rng.IntN(50) == 0 {
				at += 500 * int64(rng.IntN(400))
			}
			starts = append(starts, at)
			counts = append(counts, int64(rng.IntN(100)))
		}
		w := &windowMax{interval: interval}
		for i := range starts {
			w.add(starts[i], 500, counts[i])
		}
		// The busiest run of ceil(interval / 500) buckets, by brute force.
		n := (interval + 499) / 500
		var want int64
		for i := range starts {
			var sum int64
			for j := i; j < len(starts) && starts[j] < starts[i]+n*500; j++ {
				sum += counts[j]
			}
			want = max(want, sum)
		}
		if n <= windowSlots && w.max != want || w.max < want {
			t.Errorf("interval %d: max %d, busiest window %d", interval, w.max, want)
		}
	}
}
