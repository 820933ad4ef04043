package triage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// benchFleet is 50 instances of 2 apps with 20 resources each, every
// resource under a slow-ratio breaker, after a minute of traffic.
func benchFleet(b *testing.B) (*Feeder, []string, []string, int64) {
	b.Helper()
	e := NewFeeder(Config{})
	insts, res := benchInstances(e, 50, 2, 20, func(r int) uint64 { return uint64(5 + r) }) // some get advice
	ts := t0
	for ; ts < t0+60000; ts += 500 {
		for _, in := range insts {
			for _, r := range res {
				e.Bucket(in, BucketStat{Resource: r, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 10, Complete: 10, Hist: [core.HistogramSlots]int64{5: 10}}, HasHist: true})
			}
		}
	}
	// A sawtooth and a recovery flood on one resource of app0.
	for i := 0; i < 6; i += 2 {
		sawtoothRun(e, insts[i], res[0], ts+int64(i), 10000, 0)
	}
	for p := int64(1); p <= 4; p++ {
		for i := 0; i < 6; i += 2 {
			e.Transition(insts[i], trans(res[0], core.Open, core.HalfOpen, ts+p*10000+int64(i)))
		}
		for i := 0; i < 6; i += 2 {
			e.Transition(insts[i], trans(res[0], core.HalfOpen, core.Open, ts+p*10000+int64(i)+30))
		}
	}
	return e, insts, res, ts + 50000
}

// benchInstances feeds the hellos and rules of n instances of apps apps
// ("app" and the app's number, each instance named after its app), each
// with res resources ("GET:/api/resource/" and the number) under a
// slow-ratio breaker of minRequestAmount minRequests(resource number).
func benchInstances(e *Feeder, n, apps, res int, minRequests func(int) uint64) (insts, resources []string) {
	var rules []core.BreakerRule
	for r := range res {
		resources = append(resources, fmt.Sprintf("GET:/api/resource/%d", r))
		rule := slowRule(resources[r])
		rule.MinRequestAmount = minRequests(r)
		rules = append(rules, rule)
	}
	for i := range n {
		name := fmt.Sprintf("app%d-%d", i%apps, i)
		insts = append(insts, name)
		e.Hello(name, fmt.Sprintf("app%d", i%apps), t0, t0)
		e.Rules(name, t0, "v1", rules, nil)
	}
	return insts, resources
}

// seriesOf is the handles of every instance x resource, instance by
// instance, as a fleet model keeps them.
func seriesOf(e *Feeder, insts, res []string, ts int64) []Series {
	var ss []Series
	for _, in := range insts {
		for _, r := range res {
			ss = append(ss, e.Series(e.insts[in].in, r, ts))
		}
	}
	return ss
}

// BenchmarkBucket feeds one bucket item of a known series.
func BenchmarkBucket(b *testing.B) {
	e, insts, res, ts := benchFleet(b)
	stat := BucketStat{BucketMs: 500, Metrics: core.Metrics{Pass: 10, Complete: 10, RtMax: 40, Hist: [core.HistogramSlots]int64{5: 10}}, HasHist: true}
	ss := seriesOf(e, insts, res, ts)
	n := len(ss)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := i % n
		if k == 0 {
			ts += 500
		}
		stat.Start = ts
		e.Engine.Bucket(ss[k], &stat)
	}
}

// BenchmarkTransition feeds a breaker cycling OPEN -> HALF_OPEN -> OPEN.
func BenchmarkTransition(b *testing.B) {
	e, insts, res, ts := benchFleet(b)
	ss := seriesOf(e, insts, res, ts)
	tracks := make([]fleet.Track, len(ss))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := (i%len(insts))*len(res) + (i/len(insts))%len(res)
		ts++
		t := core.Transition{From: core.HalfOpen, To: core.Open, AtMs: ts}
		if i%2 == 0 {
			t.From, t.To = core.Open, core.HalfOpen
		}
		e.Engine.Transition(ss[k], &tracks[k], t)
		tracks[k].State = t.To
	}
}

// BenchmarkFindings asks for the findings of the fleet, as the UI does
// four times a second.
func BenchmarkFindings(b *testing.B) {
	e, _, _, now := benchFleet(b)
	if len(e.Findings(now)) == 0 {
		b.Fatal("no findings")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e.Findings(now)
	}
}

// BenchmarkRulesFleetStartup is 100 instances of one app connecting, each
// sending 1000 breaker rules, the last one different.
func BenchmarkRulesFleetStartup(b *testing.B) {
	var rules []core.BreakerRule
	for r := range 1000 {
		rules = append(rules, slowRule(fmt.Sprintf("GET:/api/resource/%d", r)))
	}
	odd := slices.Clone(rules)
	odd[0].Threshold = 0.9
	b.ReportAllocs()
	for range b.N {
		e := NewFeeder(Config{})
		for i := range 100 {
			name := fmt.Sprintf("app-%d", i)
			e.Hello(name, "app", t0, t0)
			if i == 99 {
				e.Rules(name, t0, "v2", odd, nil)
			} else {
				e.Rules(name, t0, "v1", rules, nil)
			}
		}
		if len(e.Findings(t0+60000)) == 0 {
			b.Fatal("no drift")
		}
	}
}

// BenchmarkRuleRollout is a new version of 20 breaker rules, every one
// changed, pushed to an app's instances one after another: while it goes
// out, each of its rules messages regroups the 20 resources that drift.
// An op is one rules message.
func BenchmarkRuleRollout(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			var v1, v2 []core.BreakerRule
			for r := range 20 {
				rule := slowRule(fmt.Sprintf("GET:/api/resource/%d", r))
				v1 = append(v1, rule)
				rule.MaxAllowedRtMs++
				v2 = append(v2, rule)
			}
			e := NewFeeder(Config{})
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("app-%d", i)
				e.Hello(names[i], "app", t0, t0)
				e.Rules(names[i], t0, "v1", v1, nil)
			}
			versions := [][]core.BreakerRule{v1, v2}
			ts := t0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				// Every instance in turn; the next round pushes the other
				// version back.
				ts++
				round := i / n
				e.Rules(names[i%n], ts, fmt.Sprint("v", round%2+2), versions[(round+1)%2], nil)
			}
		})
	}
}
