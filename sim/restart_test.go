package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/sim"
)

// A restart is a bye, then a new process of the same name at the same
// instant: a hello with the restart's startedAt and a pid of its own, and
// the rule set in force then (a change at the restart's time is what the
// new process loads, not one more load by the old). The old process sends
// nothing after its bye, and the new one takes the traffic on.
func TestRestartIsANewProcess(t *testing.T) {
	limit := func(qps float64) []core.FlowRule { return []core.FlowRule{{Resource: "res", Threshold: qps}} }
	s := oneCall(&sim.Downstream{}, sim.Call{Traffic: sim.Constant(50)}, 10*time.Second,
		sim.RuleChange{Flows: limit(1000)}, sim.RuleChange{At: 2 * time.Second, Flows: limit(200)},
		sim.RuleChange{At: 5 * time.Second, Flows: limit(1000)})
	s.Instances[0].Restarts = []time.Duration{5 * time.Second}
	start := startOf(s)
	type event struct {
		kind string
		at   int64
	}
	var got []event
	var pids []int64
	var rules []float64
	var passAfter int64
	for _, m := range record(t, s) {
		switch m := m.(type) {
		case *wire.Hello:
			got = append(got, event{"hello", m.StartedAt - start})
			pids = append(pids, m.Pid)
		case *wire.Bye:
			got = append(got, event{"bye", m.Ts - start})
		case *wire.Rules:
			got = append(got, event{"rules", m.Ts - start})
			rules = append(rules, m.Flows[0].Threshold)
		case *wire.Buckets:
			for _, it := range m.Items {
				if it.Start-start >= 5000 {
					passAfter += it.Pass
				}
			}
		}
	}
	want := []event{{"hello", 0}, {"rules", 0}, {"rules", 2000}, {"bye", 5000}, {"hello", 5000}, {"rules", 5000}, {"bye", 10000}}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	if len(pids) != 2 || pids[0] == pids[1] || len(rules) != 3 || rules[0] != 1000 || rules[1] != 200 || rules[2] != 1000 {
		t.Fatalf("pids %v rules %v", pids, rules)
	}
	if passAfter < 200 || passAfter > 300 { // 50/s for 5 s
		t.Fatalf("%d passed after the restart", passAfter)
	}
}

func TestRestartValidated(t *testing.T) {
	for name, restarts := range map[string][]time.Duration{
		"at the start":  {0},
		"after a stop":  {3 * time.Second},
		"out of order":  {time.Second, time.Second},
		"not ascending": {2 * time.Second, time.Second},
	} {
		s := oneCall(&sim.Downstream{}, sim.Call{Traffic: sim.Constant(1)}, 4*time.Second)
		s.Instances[0].Stop = 3 * time.Second
		s.Instances[0].Restarts = restarts
		if err := s.Validate(); !errors.Is(err, sim.ErrScenario) {
			t.Errorf("%s: %v", name, err)
		}
	}
	s := oneCall(&sim.Downstream{}, sim.Call{Traffic: sim.Constant(1)}, 4*time.Second)
	s.Instances[0].Restarts = []time.Duration{time.Second}
	if _, err := sim.StartDemo(context.Background(), s, 1); !errors.Is(err, sim.ErrScenario) {
		t.Errorf("demo with a restart: %v", err)
	}
}
