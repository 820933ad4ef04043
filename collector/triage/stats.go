package triage

import (
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
