package triage

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// replaceSorted is removeSorted then insertSorted, whatever the values and
// their repeats.
func TestReplaceSortedAgreesWithRemoveInsert(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := rng.IntN(12)
		xs := make([]int64, n)
		for i := range xs {
			xs[i] = int64(rng.IntN(8))
		}
		slices.Sort(xs)
		old := int64(rng.IntN(9))
		if n > 0 && rng.IntN(2) == 0 {
			old = xs[rng.IntN(n)] // mostly a value held
		}
		x := int64(rng.IntN(9))
		want := insertSorted(removeSorted(slices.Clone(xs), old), x)
		if got := replaceSorted(slices.Clone(xs), old, x); !slices.Equal(got, want) {
			t.Fatalf("replace %d by %d in %v: %v, want %v", old, x, xs, got, want)
		}
	}
}

// searchNear finds what a search of the whole slice finds, from any index
// it starts at: duplicates, NaNs (first, as slices.Sort puts them),
// infinities and values beyond either end included.
func TestSearchNearAgreesWithBinarySearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float64{math.NaN(), math.Inf(-1), math.Inf(1), 0}
	value := func() float64 {
		if rng.IntN(10) == 0 {
			return special[rng.IntN(len(special))]
		}
		return float64(rng.IntN(40)) / 4
	}
	for range 20000 {
		n := rng.IntN(300)
		if rng.IntN(2) == 0 {
			n = rng.IntN(6)
		}
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = value()
		}
		slices.Sort(xs)
		x := value()
		want, _ := slices.BinarySearch(xs, x)
		for _, i := range []int{rng.IntN(n + 1), 0, n} {
			if got := searchNear(xs, i, x); got != want {
				t.Fatalf("searchNear(%v, %d, %v) = %d, want %d", xs, i, x, got, want)
			}
		}
	}
}

// sortFindings leaves findings in the report order, each of them once,
// whatever their number and however many keys they share.
func TestSortFindingsIsTheReportOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var refs []findingRef
	for round := range 2000 {
		fs := make([]Finding, rng.IntN(40))
		for i := range fs {
			fs[i] = Finding{Kind: Kinds[rng.IntN(len(Kinds))], Severity: Severity(rng.IntN(3)), From: int64(rng.IntN(3)),
				App: string(rune('a' + rng.IntN(3))), Resource: string(rune('x' + rng.IntN(3))), Summary: strconv.Itoa(i)}
		}
		want := slices.Clone(fs)
		refs = sortFindings(fs, refs)
		slices.SortStableFunc(want, func(a, b Finding) int { return compareFindings(&a, &b) })
		seen := map[string]bool{}
		for i := range fs {
			if i > 0 && compareFindings(&fs[i-1], &fs[i]) > 0 {
				t.Fatalf("round %d: findings %d and %d out of order", round, i-1, i)
			}
			if compareFindings(&fs[i], &want[i]) != 0 || seen[fs[i].Summary] {
				t.Fatalf("round %d: finding %d is %+v, want one like %+v, each once", round, i, fs[i], want[i])
			}
			seen[fs[i].Summary] = true
		}
	}
}
