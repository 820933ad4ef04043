package sim

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// java-low-traffic-trips' expectation, held to the transitions its Java
// breakers really made (which Java itself never exposes): the trips on
// fewer than 20 calls whose first probe closed the breaker, with no trip
// again within the rule's statIntervalMs after that close, are the
// fixture's low-confidence trips; and every transition the poller's
// inference sends is one of them, dated to the start of its second.
func TestJavaLowTrafficTripsAgainstItsBreakers(t *testing.T) {
	s := JavaLowTrafficTrips()
	j := javaLowTrafficService()
	type step struct {
		instance string
		t        core.Transition
	}
	var real []step
	j.Calls.Observe = func(in string, tr core.Transition) { real = append(real, step{in, tr}) }
	s.Script = j.Script
	var inferred []step
	err := Run(context.Background(), s, func(m wire.Message) error {
		if st, ok := m.(*wire.State); ok {
			if !st.Inferred {
				t.Errorf("a state not inferred: %+v", st)
			}
			inferred = append(inferred, step{st.Instance, core.Transition{From: st.From, To: st.To, AtMs: st.Ts}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	window := int64(javaPriceRule().StatIntervalMs)
	var trips, low, closed int64
	for _, in := range j.Instances {
		var ts []core.Transition
		for _, x := range real {
			if x.instance == in {
				ts = append(ts, x.t)
			}
		}
		for i, x := range ts {
			if x.From != core.Closed || x.To != core.Open {
				continue
			}
			trips++
			if n := x.Snapshot.Total; n < 5 || n >= 20 {
				t.Errorf("%s: a trip on %d calls", in, n)
			}
			k := i + 1
			for k < len(ts) && ts[k].From != core.HalfOpen {
				k++
			}
			if k == len(ts) || ts[k].To != core.Closed {
				continue
			}
			if k+1 < len(ts) && ts[k+1].To == core.Open && ts[k+1].AtMs-ts[k].AtMs <= window {
				continue
			}
			low++
			closed++
		}
	}
	if trips != 7 || low != 5 || closed != 5 {
		t.Errorf("%d trips, %d left low-confidence by their probes, %d of them closed by it; want 7, 5, 5", trips, low, closed)
	}
	var want struct{ count, closed int64 }
	for _, e := range s.Expect {
		if e.Kind == "low-confidence-trip" {
			want.count, want.closed = int64(e.Facts["count"].(int)), int64(e.Facts["closedAtFirstProbe"].(int))
		}
	}
	if want.count != low || want.closed != closed {
		t.Errorf("the fixture expects %+v, its breakers say %d %d", want, low, closed)
	}
	// The recording is in time order; the breakers' transitions by
	// instance, then time.
	slices.SortStableFunc(inferred, func(a, b step) int { return strings.Compare(a.instance, b.instance) })
	if len(inferred) != len(real) {
		t.Fatalf("%d transitions inferred, %d made", len(inferred), len(real))
	}
	for i, x := range inferred {
		r := real[i]
		if r.instance != x.instance || r.t.From != x.t.From || r.t.To != x.t.To || r.t.AtMs-r.t.AtMs%1000 != x.t.AtMs {
			t.Errorf("inferred %s %d %s->%s, made %s %d %s->%s", x.instance, x.t.AtMs, x.t.From, x.t.To, r.instance, r.t.AtMs, r.t.From, r.t.To)
		}
	}
}
