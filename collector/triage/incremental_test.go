package triage

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// forget drops what Findings keeps between calls, so that the next one
// derives every finding from the engine's state alone.
func (e *Feeder) forget() {
	e.adviceARs, e.adviceDirty, e.byName = nil, nil, nil
	for _, ar := range e.ars {
		ar.advice = arAdvice{}
	}
	for _, r := range e.res {
		r.members = nil
	}
	for _, in := range e.instList {
		for _, s := range in.seriesList {
			s.advice = seriesAdvice{}
			e.adviceChanged(s)
		}
	}
}

// TestIncrementalFindingsMatchFromScratch feeds random streams (rules that
// fit their traffic or not, app moves, restarts, byes, transitions, a
// resource shared by two apps) and, after every batch, requires the
// findings kept up to date between calls to equal those derived afresh.
func TestIncrementalFindingsMatchFromScratch(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
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
