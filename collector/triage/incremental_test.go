package triage

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// forget drops what Findings keeps between calls, so that the next one
// derives every finding from the engine's state alone.
func (e *Feeder) forget() {
	e.advice.ars, e.advice.dirty = nil, nil
	for _, ar := range e.ars {
		ar.advice = arAdvice{}
		ar.low.made = lowMade{}
	}
	for _, r := range e.res {
		r.members = nil
	}
	for _, in := range e.instList {
		for _, s := range in.seriesList {
			// Every series judged, whatever adviceDetector.changed would skip.
			s.advice, s.listed = seriesAdvice{dirty: true}, false
			e.advice.dirty = append(e.advice.dirty, s)
		}
	}
}

// TestIncrementalFindingsMatchFromScratch feeds random streams (rules that
// fit their traffic or not, app moves, restarts, byes, transitions, a
// resource shared by two apps) and, after every batch, requires the
// findings kept up to date between calls to equal those derived afresh.
// 30 seeds (3 under -race, racetest.Share: each is one goroutine's work).
func TestIncrementalFindingsMatchFromScratch(t *testing.T) {
	for seed := uint64(1); seed <= uint64(racetest.Share(30, 10)); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			// kept answers Findings after every step, fresh only at the
			// checkpoints, each time from scratch.
			kept, fresh := NewFeeder(Config{}), NewFeeder(Config{})
			both := func(f func(*Feeder)) { f(kept); f(fresh) }
			resources := []string{"db", "GET:/x", "shared"}
			apps := []string{"gateway", "order", "pay"}
			app := map[string]string{}
			now := t0
			roster := []string{"gw-0", "gw-1", "gw-2", "gw-3", "gw-4", "gw-5"}
			for step := range 300 {
				now += 500
				if step%50 == 0 {
					// Data first, its hello later: the instance moves app.
					name := fmt.Sprintf("late-%d", step)
					roster, app[name] = append(roster, name), "?"
					var bs []core.BreakerRule
					for _, r := range resources {
						bs = append(bs, core.BreakerRule{Resource: r, Strategy: core.ErrorRatio, Threshold: 0.5,
							MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 5000})
					}
					both(func(e *Feeder) { e.Rules(name, now, "early", bs, nil) })
				}
				for _, name := range roster {
					switch x := rng.IntN(100); {
					case app[name] == "?" && rng.IntN(3) > 0:
					case app[name] == "" || app[name] == "?" || x < 2:
						moved := app[name] == "?"
						app[name] = apps[rng.IntN(len(apps))]
						started := now - int64(rng.IntN(3))*1000
						both(func(e *Feeder) { e.Hello(name, app[name], now, started) })
						if moved {
							continue // judged before its next bucket
						}
					case x < 4:
						both(func(e *Feeder) { e.Bye(name, now) })
						continue
					case x < 7:
						var bs []core.BreakerRule
						for _, r := range resources {
							if rng.IntN(3) > 0 {
								bs = append(bs, core.BreakerRule{Resource: r, Strategy: []core.Strategy{core.SlowRequestRatio, core.ErrorRatio}[rng.IntN(2)],
									Threshold: 0.5, MaxAllowedRtMs: uint64(1 + rng.IntN(300)), MinRequestAmount: uint64(5 + rng.IntN(30)),
									StatIntervalMs: uint32(1000 * (1 + rng.IntN(10))), RetryTimeoutMs: 5000})
							}
						}
						both(func(e *Feeder) { e.Rules(name, now, fmt.Sprint("v", step), bs, nil) })
					}
					for _, r := range resources {
						if rng.IntN(15) == 0 { // sometimes with no bucket after it
							from := []core.State{core.Closed, core.Open, core.HalfOpen}[rng.IntN(3)]
							to := []core.State{core.Closed, core.Open, core.HalfOpen}[rng.IntN(3)]
							tr := trans(r, from, to, now-250)
							if n := int64(rng.IntN(30)); from == core.Closed && to == core.Open {
								tr.Snapshot = core.WindowSnapshot{Total: n, Bad: n / 2} // a low-confidence trip below 20
							}
							both(func(e *Feeder) { e.Transition(name, tr) })
						}
						if rng.IntN(4) == 0 {
							continue
						}
						p := int64(rng.IntN(40))
						var h [core.HistogramSlots]int64
						h[rng.IntN(core.HistogramSlots)] = p
						b := BucketStat{Resource: r, Start: now - 500, BucketMs: 500,
							Metrics: core.Metrics{Pass: p, Complete: p, RtSum: p * 30, RtMax: 90, Hist: h}, HasHist: true}
						both(func(e *Feeder) { e.Bucket(name, b) })
					}
				}
				got := kept.Findings(now)
				if step%7 != 6 {
					continue
				}
				fresh.forget()
				want := fresh.Findings(now)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: findings kept up to date differ from those derived afresh:\nkept  %v\nfresh %v", step, kinds(got), kinds(want))
				}
			}
		})
	}
}

func kinds(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s/%s %v", f.Kind, f.App, f.Resource, f.Instances))
	}
	return out
}

// tsOf is a fed message's time (0 for the kinds not fed).
func tsOf(m wire.Message) int64 {
	switch m := m.(type) {
	case *wire.Hello:
		return m.Ts
	case *wire.Rules:
		return m.Ts
	case *wire.Buckets:
		return m.Ts
	case *wire.State:
		return m.Ts
	case *wire.Bye:
		return m.Ts
	}
	return 0
}

// feedWire feeds one fixture message to a Feeder as the collector would.
func feedWire(e *Feeder, m wire.Message, app map[string]string) {
	switch m := m.(type) {
	case *wire.Hello:
		e.Hello(m.Instance, app[m.Instance], m.Ts, m.StartedAt)
	case *wire.Rules:
		e.Rules(m.Instance, m.Ts, m.Version, m.Breakers, m.Flows, m.Params...)
	case *wire.Buckets:
		for _, it := range m.Items {
			e.Bucket(m.Instance, BucketStat{Resource: it.Resource, Start: it.Start, BucketMs: m.BucketMs,
				Metrics: it.Metrics, HasHist: it.HasHist, Hot: it.Hot})
		}
	case *wire.State:
		t := core.Transition{Resource: m.Resource, RuleID: m.RuleID, Strategy: m.Strategy, From: m.From, To: m.To,
			AtMs: m.Ts, Threshold: m.Threshold, RetryTimeoutMs: uint32(min(max(m.RetryTimeoutMs, 0), 1<<32-1))}
		if s := m.Snapshot; s != nil {
			bad := s.Error
			if m.Strategy == core.SlowRequestRatio {
				bad = s.Slow
			}
			t.Snapshot = core.WindowSnapshot{Total: s.Total, Bad: bad, Value: s.Value}
		}
		if m.Probe != nil {
			t.Probe = &core.Probe{RtMs: m.Probe.RtMs, Error: m.Probe.Error}
		}
		e.Transition(m.Instance, t)
	case *wire.Bye:
		e.Bye(m.Instance, m.Ts)
	}
}

// TestIncrementalFindingsMatchFromScratchOnFixtures replays every fixture,
// asking for the findings every 25 messages as a collector publishing
// snapshots does, and at every 10th of those and at the end requires them
// to equal those derived afresh from the same input.
func TestIncrementalFindingsMatchFromScratchOnFixtures(t *testing.T) {
	seen := map[Kind]bool{}
	for _, name := range fixtures.Names() {
		t.Run(name, func(t *testing.T) {
			kept, fresh := NewFeeder(Config{}), NewFeeder(Config{})
			var n int
			var now int64
			compare := func() {
				got := kept.Findings(now)
				fresh.forget()
				want := fresh.Findings(now)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("message %d: findings kept up to date differ from those derived afresh:\nkept  %v\nfresh %v", n, kinds(got), kinds(want))
				}
				for _, f := range got {
					seen[f.Kind] = true
				}
			}
			rc, err := fixtures.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			app := map[string]string{}
			for m, err := range wire.NewReader(rc, name).All() {
				if err != nil {
					t.Fatal(err)
				}
				if h, ok := m.(*wire.Hello); ok {
					app[h.Instance] = h.App
				}
				feedWire(kept, m, app)
				feedWire(fresh, m, app)
				n++
				now = max(now, tsOf(m))
				switch {
				case n%250 == 0:
					compare()
				case n%25 == 0:
					kept.Findings(now)
				}
			}
			compare()
		})
	}
	for _, k := range []Kind{KindLowConfidenceTrip, KindSharedResource, KindRuleAdvice} {
		if !seen[k] {
			t.Errorf("no fixture has a %s finding: the comparison does not cover it", k)
		}
	}
}
