package triage

import (
	"math/rand/v2"
	"slices"
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
