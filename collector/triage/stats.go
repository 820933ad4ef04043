package triage

import (
	"cmp"
	"math"
	"slices"
)

// WilsonZ is the z of a one-sided 90 % confidence bound.
const WilsonZ = 1.2816

// WilsonLower is the one-sided 90 % Wilson score lower bound of k/n. It
// returns 0 for n <= 0.
func WilsonLower(k, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return wilsonLowerP(float64(k)/float64(n), float64(n))
}

func wilsonLowerP(p, n float64) float64 {
	const z2 = WilsonZ * WilsonZ
	lower := (p + z2/(2*n) - WilsonZ*math.Sqrt(p*(1-p)/n+z2/(4*n*n))) / (1 + z2/n)
	return max(lower, 0)
}

// medianOf returns the median of xs (the mean of the two middle values for
// an even count); it sorts xs.
func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	return medianSorted(xs)
}

// medianSorted is the median of sorted xs, 0 when empty.
func medianSorted(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}

func medianInt(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}

func round(x float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	r := math.Round(x*p) / p
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return 0
	}
	return r
}

// insertSorted inserts x into sorted xs, keeping them sorted.
func insertSorted[T cmp.Ordered](xs []T, x T) []T {
	i, _ := slices.BinarySearch(xs, x)
	return slices.Insert(xs, i, x)
}

// removeSorted removes one x from sorted xs (none if they do not hold it).
func removeSorted[T cmp.Ordered](xs []T, x T) []T {
	if i, ok := slices.BinarySearch(xs, x); ok {
		return slices.Delete(xs, i, i+1)
	}
	return xs
}

// searchNear is the index slices.BinarySearch(xs, x) returns, found by
// galloping out from index i: a value near xs[i] is found in a few probes
// beside it, where a search of the whole slice would take log2(len) probes
// across it (cache misses, for a fleet's app x resource).
func searchNear[T cmp.Ordered](xs []T, i int, x T) int {
	n := len(xs)
	lo, hi := i-1, i // the index is in (lo, hi]: xs[lo] < x, xs[hi] >= x
	if i < n && cmp.Less(xs[i], x) {
		lo, hi = i, i+1
		for step := 1; hi < n && cmp.Less(xs[hi], x); step *= 2 {
			lo, hi = hi, min(hi+step, n)
		}
	} else {
		for step := 1; lo >= 0 && !cmp.Less(xs[lo], x); step *= 2 {
			lo, hi = max(lo-step, -1), lo
		}
	}
	j, _ := slices.BinarySearch(xs[lo+1:hi], x)
	return lo + 1 + j
}

// replaceSorted replaces one old in sorted xs by x, keeping them sorted,
// moving only the values between the two (insertSorted when xs do not hold
// old).
func replaceSorted[T cmp.Ordered](xs []T, old, x T) []T {
	i, ok := slices.BinarySearch(xs, old)
	if !ok {
		return insertSorted(xs, x)
	}
	j := searchNear(xs, i, x)
	switch {
	case j > i+1: // x goes after the values above old
		copy(xs[i:j-1], xs[i+1:j])
		xs[j-1] = x
	case j < i: // x goes before the values below old
		copy(xs[j+1:i+1], xs[j:i])
		xs[j] = x
	default: // x takes old's place
		xs[i] = x
	}
	return xs
}
