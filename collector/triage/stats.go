package triage

import (
	"math"
	"math/bits"
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

// passHist counts buckets by the entries they passed, exactly below 32 and
// in 8 sub-bins per power of two above (values within 12.5 %): enough to
// take the median QPS of a whole input in fixed memory.
type passHist struct {
	n      uint64
	counts [passBins]uint32
}

const (
	passExact   = 32
	passSub     = 8
	passOctaves = 31 // 2^5 .. 2^36
	passBins    = passExact + passOctaves*passSub
)

func passBin(v int64) int {
	if v < passExact {
		return int(max(v, 0))
	}
	k := bits.Len64(uint64(v)) // v in [2^(k-1), 2^k), k >= 6
	i := passExact + (k-6)*passSub + int((v>>(k-4))&(passSub-1))
	return min(i, passBins-1)
}

// passBinValue is a representative value of bin i: the value itself below
// passExact, else the middle of the bin.
func passBinValue(i int) float64 {
	if i < passExact {
		return float64(i)
	}
	o, j := (i-passExact)/passSub, (i-passExact)%passSub
	shift := o + 2 // octave k = o+6, bin width 2^(k-4)
	lo := float64(int64(passSub+j) << shift)
	return lo + float64(int64(1)<<shift)/2
}

func (h *passHist) add(v int64, times uint64) {
	i := passBin(v)
	c := uint64(h.counts[i]) + times
	if c > math.MaxUint32 {
		return // saturated: the median no longer moves
	}
	h.counts[i] = uint32(c)
	h.n += times
}

// median is the lower median of the counted values (0 when empty).
func (h *passHist) median() float64 {
	if h.n == 0 {
		return 0
	}
	rank := (h.n + 1) / 2
	var seen uint64
	for i, c := range h.counts {
		seen += uint64(c)
		if seen >= rank {
			return passBinValue(i)
		}
	}
	return 0
}

// medianOf returns the median of xs (the mean of the two middle values for
// an even count); it sorts xs.
func medianOf(xs []float64) float64 {
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
