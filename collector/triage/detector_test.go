package triage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
)

// TestEveryKindHasOneDetector: the detectors cover Kinds exactly, in order,
// and every finding's facts are of its own kind.
func TestEveryKindHasOneDetector(t *testing.T) {
	e := NewFeeder(Config{})
	all := e.det.all
	if len(all) != len(Kinds) {
		t.Fatalf("%d detectors for %d kinds", len(all), len(Kinds))
	}
	for i, d := range all {
		if d.kind() != Kinds[i] {
			t.Errorf("detector %d is %s, want %s", i, d.kind(), Kinds[i])
		}
	}
	end := sawtoothRun(e, "order-1", "db", t0, 10040, 6)
	appFleet(e, "order", 2, t0, "v1", slowRule("db"))
	fs := e.Findings(end)
	if len(fs) == 0 {
		t.Fatal("no finding to check")
	}
	for _, f := range fs {
		if f.Facts == nil || f.Facts.Kind() != f.Kind || f.Summary == "" || f.Advice == "" {
			t.Errorf("%s: facts %T, summary %q, advice %q", f.Kind, f.Facts, f.Summary, f.Advice)
		}
	}
}

// TestMergeAgreesWithSort checks mergeInsts and mergeNames against sorting
// both lists together, with instances in both lists and names taken by more
// than one instance (an instance that came back anew).
func TestMergeAgreesWithSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pool := make([]*instState, 40)
	for i := range pool {
		pool[i] = &instState{id: &fleet.Instance{Name: fmt.Sprintf("i-%02d", rng.IntN(25))}, seq: i}
	}
	pick := func(n int) []*instState {
		out := make([]*instState, n)
		for i := range out {
			out[i] = pool[rng.IntN(len(pool))]
		}
		return sortInsts(out)
	}
	for range 20000 {
		a, b := pick(rng.IntN(30)), pick(rng.IntN(6))
		want := sortInsts(append(slices.Clone(a), b...))
		got := mergeInsts(a, b)
		if !slices.Equal(got, want) {
			t.Fatalf("mergeInsts(%v, %v) = %v, want %v", names(a), names(b), names(got), names(want))
		}
		if got, want := mergeNames(names(a), names(b)), names(want); !slices.Equal(got, want) {
			t.Fatalf("mergeNames(%v, %v) = %v, want %v", names(a), names(b), got, want)
		}
	}
}
