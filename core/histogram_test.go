package core

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// HistogramCounted names exactly the slots holding more than 0, whatever
// the others hold (0, negative, the extremes).
func TestHistogramCounted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	values := []int64{0, 1, -1, 2, 1000, math.MaxInt64, math.MinInt64 + 1, -1000}
	for range 20000 {
		var h [HistogramSlots]int64
		for i := range h {
			h[i] = values[r.IntN(len(values))]
		}
		var want uint16
		for i, c := range h {
			if c > 0 {
				want |= 1 << i
			}
		}
		if got := HistogramCounted(&h); got != want {
			t.Fatalf("HistogramCounted(%v) = %014b, want %014b", h, got, want)
		}
	}
	var h [HistogramSlots]int64
	h[3] = math.MinInt64
	if got := HistogramCounted(&h); got != 1<<3 {
		t.Fatalf("math.MinInt64 in slot 3: %014b, want only its bit (documented)", got)
	}
}

func ExampleHistogramCounted() {
	var h [HistogramSlots]int64
	h[2], h[5], h[9] = 4, 1, 0
	var sum int64
	for m := HistogramCounted(&h); m != 0; m &= m - 1 {
		sum += h[bits.TrailingZeros16(m)]
	}
	fmt.Printf("%014b %d\n", HistogramCounted(&h), sum)
	// Output: 00000000100100 5
}
