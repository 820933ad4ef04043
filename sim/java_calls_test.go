package sim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

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
	// The recording and the breakers' transitions are in time order; both
	// by instance, then time.
	byInstance := func(a, b step) int { return strings.Compare(a.instance, b.instance) }
	slices.SortStableFunc(inferred, byInstance)
	slices.SortStableFunc(real, byInstance)
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

// javaPlayed sums a played Java service's recording: its transitions by
// kind, the entries passed and blocked, and whether its messages come in
// time order.
type javaPlayed struct {
	states               map[[2]core.State]int
	probeRts             []int64
	pass, block, done    int64
	ordered, allInferred bool
}

func playJava(t *testing.T, s *Scenario) javaPlayed {
	t.Helper()
	p := javaPlayed{states: map[[2]core.State]int{}, ordered: true, allInferred: true}
	var last int64
	err := Run(t.Context(), s, func(m wire.Message) error {
		if m.Head().Ts < last {
			p.ordered = false
		}
		last = m.Head().Ts
		switch m := m.(type) {
		case *wire.State:
			p.states[[2]core.State{m.From, m.To}]++
			p.allInferred = p.allInferred && m.Inferred
			if m.Probe != nil {
				p.probeRts = append(p.probeRts, m.Probe.RtMs)
			}
		case *wire.Buckets:
			for _, it := range m.Items {
				p.pass, p.block, p.done = p.pass+it.Pass, p.block+it.Block, p.done+it.Complete
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A Java count of 0.5 is a 1 ms bound: each of the two breakers opens in
// its first second and every probe, a 15-45 ms call, opens it again. The
// poller's inference sees it so: one trip and 23 failed probes on each,
// never a close; the probes' times are the calls' (each alone in its
// second), and the messages come in time order.
func TestJavaCountHalfPlaysJavasBreaker(t *testing.T) {
	p := playJava(t, JavaCountHalf())
	want := map[[2]core.State]int{{core.Closed, core.Open}: 2, {core.Open, core.HalfOpen}: 46, {core.HalfOpen, core.Open}: 46}
	if len(p.states) != len(want) || !p.ordered || !p.allInferred {
		t.Fatalf("states %v ordered %v inferred %v", p.states, p.ordered, p.allInferred)
	}
	for k, n := range want {
		if p.states[k] != n {
			t.Fatalf("states %v, want %v", p.states, want)
		}
	}
	if len(p.probeRts) != 46 {
		t.Fatalf("probe times %v", p.probeRts)
	}
	for _, rt := range p.probeRts {
		if rt < 15 || rt > 45 {
			t.Fatalf("probe of %d ms: the service answers in 15-45 ms", rt)
		}
	}
	// The first second passes the calls until the fifth completes, then
	// only a probe each 10 s: 59 calls of about 2 x 30 x 240.
	if p.pass != 59 || p.done != 59 || p.pass+p.block < 13800 || p.pass+p.block > 15000 {
		t.Fatalf("pass %d block %d done %d", p.pass, p.block, p.done)
	}
}

// Without slowRatioThreshold (1.0) and 40 calls asked for, a window in
// which three calls in four are slow never trips Java's breaker: no
// transition, nothing blocked.
func TestJavaNoSlowRatioNeverTrips(t *testing.T) {
	p := playJava(t, JavaNoSlowRatio())
	if len(p.states) != 0 || p.block != 0 || !p.ordered {
		t.Fatalf("states %v block %d ordered %v", p.states, p.block, p.ordered)
	}
	if p.pass < 36000 || p.pass > 39600 {
		t.Fatalf("pass %d: about 3 x 60 x 210", p.pass)
	}
}

// A played Java service enforces Java's degrade rules alone: a rule of
// sentinel-golang semantics, or a flow rule, is refused.
func TestJavaPlayedRulesAreJavas(t *testing.T) {
	for _, rules := range []RuleChange{
		{Breakers: []core.BreakerRule{{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000}}},
		{Flows: []core.FlowRule{{Resource: "r", Threshold: 10}}},
	} {
		j := &JavaService{App: "a", Instances: []string{"a-1"}, Version: "1.8.6", Rules: rules, Resource: "r", QPS: 10, Calls: &JavaCalls{}}
		s := &Scenario{Name: "x", Duration: 1e9, Script: j.Script}
		if err := Run(t.Context(), s, func(wire.Message) error { return nil }); !errors.Is(err, ErrScenario) {
			t.Errorf("rules %+v: %v", rules, err)
		}
	}
}

// A played Java service answers in 20 ms when no Latency is given, and
// its lines' mean response time is of times capped at Java's
// statisticMaxRt, 5000 ms: a 7 s call counts as 5 s.
func TestJavaCallsResponseTimes(t *testing.T) {
	for _, c := range []struct {
		latency Dist
		rt      int64
	}{{nil, 20}, {Fixed(7 * time.Second), 5000}} {
		j := &JavaService{App: "a", Instances: []string{"a-1"}, Version: "1.8.6", Resource: "r", QPS: 20, Calls: &JavaCalls{Latency: c.latency}}
		var lines, done int64
		s := &Scenario{Name: "x", Duration: 10 * time.Second, Seed: 1, Script: j.Script}
		err := Run(t.Context(), s, func(m wire.Message) error {
			if b, ok := m.(*wire.Buckets); ok {
				for _, it := range b.Items {
					if it.Complete > 0 {
						lines, done = lines+1, done+it.Complete
						if it.RtMin != c.rt || it.RtSum != c.rt*it.Complete {
							t.Errorf("latency %v: a line of %d calls with mean %d ms, want %d", c.latency, it.Complete, it.RtMin, c.rt)
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if lines == 0 || done < 20 {
			t.Errorf("latency %v: %d calls completed in %d lines", c.latency, done, lines)
		}
	}
}
