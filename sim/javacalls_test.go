package sim_test

import (
	"errors"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/sim"
)

// javaPlayed sums a played Java service's recording: its transitions by
// kind, the entries passed and blocked, and whether its messages come in
// time order.
type javaPlayed struct {
	states               map[[2]core.State]int
	probeRts             []int64
	pass, block, done    int64
	ordered, allInferred bool
}

func playJava(t *testing.T, s *sim.Scenario) javaPlayed {
	t.Helper()
	p := javaPlayed{states: map[[2]core.State]int{}, ordered: true, allInferred: true}
	var last int64
	for _, m := range record(t, s) {
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
	}
	return p
}

// A Java count of 0.5 is a 1 ms bound: each of the two breakers opens in
// its first second and every probe, a 15-45 ms call, opens it again. The
// poller's inference sees it so: one trip and 23 failed probes on each,
// never a close; the probes' times are the calls' (each alone in its
// second), and the messages come in time order.
func TestJavaCountHalfPlaysJavasBreaker(t *testing.T) {
	p := playJava(t, sim.JavaCountHalf())
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
	p := playJava(t, sim.JavaNoSlowRatio())
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
	for _, rules := range []sim.RuleChange{
		{Breakers: []core.BreakerRule{{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000}}},
		{Flows: []core.FlowRule{{Resource: "r", Threshold: 10}}},
	} {
		j := &sim.JavaService{App: "a", Instances: []string{"a-1"}, Version: "1.8.6", Rules: rules, Resource: "r", QPS: 10, Latency: sim.Fixed(20 * 1e6)}
		s := &sim.Scenario{Name: "x", Duration: 1e9, Script: j.Script}
		if err := sim.Run(t.Context(), s, func(wire.Message) error { return nil }); !errors.Is(err, sim.ErrScenario) {
			t.Errorf("rules %+v: %v", rules, err)
		}
	}
}
