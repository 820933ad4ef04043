package triage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// scaleFleet is the bench command's fleet: 10 apps of 200 instances, each
// reporting the same 20 resources (so every resource is shared by the 10
// apps) under a slow-ratio breaker whose minRequestAmount draws rule advice,
// with 20 s of traffic and low-confidence trips on one resource of the
// first app's first 20 instances.
func scaleFleet(b *testing.B) (*Feeder, []Series, int64) {
	b.Helper()
	e := NewFeeder(Config{})
	insts, res := benchInstances(e, 2000, 10, 20, func(int) uint64 { return 5 })
	ss := seriesOf(e, insts, res, t0)
	stat := BucketStat{BucketMs: 500, Metrics: core.Metrics{Pass: 4, Complete: 4, Hist: [core.HistogramSlots]int64{5: 4}}, HasHist: true}
	ts := t0
	for ; ts < t0+20000; ts += 500 {
		stat.Start = ts
		for _, s := range ss {
			e.Engine.Bucket(s, &stat)
		}
	}
	for i := 0; i < 200; i += 10 {
		tr := trans(res[0], core.Closed, core.Open, ts+int64(i))
		tr.Snapshot = core.WindowSnapshot{Total: 4, Bad: 2}
		tr.Strategy, tr.Threshold = core.SlowRequestRatio, 0.5
		e.Transition(insts[i], tr)
	}
	return e, ss, ts
}

// BenchmarkFindingsScale asks for the findings of 40,000 series after 1 %
// of them received a bucket and one breaker changed state, as the collector
// does at every publish of a busy fleet (about 10 a second). Only Findings
// is timed.
func BenchmarkFindingsScale(b *testing.B) {
	e, ss, ts := scaleFleet(b)
	stat := BucketStat{BucketMs: 500, Metrics: core.Metrics{Pass: 4, Complete: 4, Hist: [core.HistogramSlots]int64{5: 4}}, HasHist: true}
	if len(e.Findings(ts)) == 0 {
		b.Fatal("no findings")
	}
	next := 0
	tracks := make([]fleet.Track, len(ss))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ts += 50
		stat.Start = ts - 500
		for range len(ss) / 100 {
			e.Engine.Bucket(ss[next], &stat)
			next = (next + 1) % len(ss)
		}
		k := (i * 37) % len(ss)
		t := core.Transition{From: core.Open, To: core.Closed, AtMs: ts}
		if i%2 == 0 {
			t.From, t.To = core.Closed, core.Open
		}
		e.Engine.Transition(ss[k], &tracks[k], t)
		tracks[k].State = t.To
		b.StartTimer()
		e.Findings(ts)
	}
}

// BenchmarkMergeInsts merges 10 instances that began reporting a shared
// resource into its 10,000 members, with their names, as a snapshot does
// while a fleet connects.
func BenchmarkMergeInsts(b *testing.B) {
	pool := make([]*instState, 10010)
	for i := range pool {
		pool[i] = &instState{id: &fleet.Instance{Name: fmt.Sprintf("bench-%d", i*7919%len(pool))}, seq: i}
	}
	members, arriving := sortInsts(slices.Clone(pool[:10000])), sortInsts(slices.Clone(pool[10000:]))
	memberNames, arrivingNames := names(members), names(arriving)
	b.ReportAllocs()
	for b.Loop() {
		if len(mergeInsts(members, arriving)) != len(pool) || len(mergeNames(memberNames, arrivingNames)) != len(pool) {
			b.Fatal("lost an instance")
		}
	}
}

// BenchmarkSortFindings sorts 1,000 findings into the report order, as
// Findings does at each snapshot of a fleet whose 50 apps x 20 resources
// each have rule advice: "refs" as Findings sorts (sortFindings), "values"
// with slices.SortFunc over the findings themselves, for reference.
func BenchmarkSortFindings(b *testing.B) {
	src := make([]Finding, 1000)
	for i := range src {
		src[i] = Finding{Kind: KindRuleAdvice, Severity: Info, From: t0,
			App: fmt.Sprintf("app-%d", i%50), Resource: fmt.Sprintf("GET:http://svc-%d/api", i/50)}
	}
	fs := make([]Finding, len(src))
	b.Run("refs", func(b *testing.B) {
		var refs []findingRef
		for b.Loop() {
			copy(fs, src)
			refs = sortFindings(fs, refs)
		}
	})
	b.Run("values", func(b *testing.B) {
		for b.Loop() {
			copy(fs, src)
			slices.SortFunc(fs, func(a, b Finding) int { return compareFindings(&a, &b) })
		}
	})
}
