package triage

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// TestDriftMovesEqualGroupingAfresh feeds random fleets (rules of a few
// versions and contents, some instances with none, restarts, byes and
// returns, instances moving app) and, after every step, requires each
// drifting resource's groups, moved one instance at a time, to equal those
// grouped afresh from every instance's rules, and every resource not
// drifting to have its instances agree. 40 seeds (8 under -race).
func TestDriftMovesEqualGroupingAfresh(t *testing.T) {
	resources := []string{"db", "GET:/x", "cache"}
	variant := func(res string, v, jitter int) core.BreakerRule {
		r := slowRule(res)
		r.MaxAllowedRtMs = uint64(100 * (v + 1))
		r.RetryTimeoutMs = uint32(5000 + jitter) // not a difference: a group shows its first instance's
		return r
	}
	for seed := uint64(1); seed <= uint64(racetest.Cases(40)); seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		f := NewFeeder(Config{})
		names := make([]string, 10)
		started := map[string]int64{}
		for i := range names {
			names[i] = fmt.Sprintf("gw-%02d", i)
		}
		ts := t0
		moved := 0
		for step := range 400 {
			ts += int64(1 + rng.IntN(2000))
			name := names[rng.IntN(len(names))]
			var what string
			switch op := rng.IntN(20); {
			case op < 11:
				var bs []core.BreakerRule
				for _, r := range resources {
					if v := rng.IntN(4); v < 3 {
						bs = append(bs, variant(r, v%2+rng.IntN(2)*v/2, rng.IntN(3)))
					}
				}
				version := fmt.Sprint("v", rng.IntN(3))
				what = fmt.Sprintf("rules %s %s %d", name, version, len(bs))
				f.Rules(name, ts, version, bs, nil)
			case op < 14:
				if rng.IntN(3) == 0 {
					started[name] = ts // a new process
				}
				app := []string{"gateway", "gateway", "order"}[rng.IntN(3)]
				what = fmt.Sprintf("hello %s %s", name, app)
				f.Hello(name, app, ts, max(started[name], t0))
			case op < 16:
				what = "bye " + name
				f.Bye(name, ts)
			default:
				what = "bucket " + name
				f.Bucket(name, BucketStat{Resource: resources[rng.IntN(len(resources))], Start: ts - ts%500, BucketMs: 500, Metrics: core.Metrics{Pass: 1, Complete: 1}})
			}
			for _, a := range f.Engine.apps {
				var insts []*instState
				for _, in := range a.insts {
					if in.hasRules() {
						insts = append(insts, in)
					}
				}
				slices.SortFunc(insts, func(x, y *instState) int { return strings.Compare(x.id.Name, y.id.Name) })
				for _, ar := range a.ars {
					groups, keys, contents := groupRules(insts, ar.resource)
					d := &ar.drift
					if !d.active {
						if contents >= 2 {
							t.Fatalf("seed %d step %d (%s): %s/%s not drifting, its instances in %d contents: %+v", seed, step, what, a.name, ar.resource, contents, groups)
						}
						continue
					}
					moved++
					if contents < 2 || !reflect.DeepEqual(d.groups, groups) || !reflect.DeepEqual(d.keys, keys) {
						for i := range min(len(groups), len(d.groups)) {
							if !reflect.DeepEqual(d.groups[i], groups[i]) {
								t.Errorf("group %d:\n got %+v\nwant %+v", i, d.groups[i], groups[i])
							}
						}
						t.Fatalf("seed %d step %d (%s): %s/%s: %d groups, want %d (%d contents); keys %v, want %v", seed, step, what, a.name, ar.resource, len(d.groups), len(groups), contents, d.keys, keys)
					}
				}
			}
		}
		if moved == 0 {
			t.Fatalf("seed %d: no resource ever drifted", seed)
		}
	}
}
