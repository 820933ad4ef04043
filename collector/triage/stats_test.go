package triage

import (
	"math"
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
