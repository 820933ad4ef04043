package whatif

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// The replay offers calls in the order they arrived, by time and then by
// index, on each side: the packed keys and the comparison kept for times
// too far apart for them give that order, the one a sort of the records
// gives.
func TestArrivalsInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 400 {
		n := 1 + r.IntN(300)
		p := &prepared{calls: make([]call, n)}
		base := int64(1_700_000_000_000)
		wide := round%4 == 3 // some times more than 2^43 ms apart
		for i := range p.calls {
			c := &p.calls[i]
			c.at = base + r.Int64N(5_000) // ties and near ties
			if wide && r.IntN(8) == 0 {
				c.at = []int64{-1 << 62, 1 << 62, 0}[r.IntN(3)]
			}
			c.known = r.IntN(4) != 0
			c.rtLo = r.Int64N(2_000)
			c.rtHi = c.rtLo + r.Int64N(2_000)
		}
		var known []int32
		for i := range p.calls {
			if p.calls[i].known {
				known = append(known, int32(i))
			}
		}
		for s := range p.pick {
			p.pick[s] = make([]int32, n)
			for i := range p.pick[s] {
				p.pick[s][i] = -1
				if !p.calls[i].known && len(known) > 0 && r.IntN(5) != 0 {
					p.pick[s][i] = known[r.IntN(len(known))]
				}
			}
		}
		for _, s := range sides {
			type rec struct {
				at int64
				i  int32
			}
			want := make([]rec, n)
			for i := range p.calls {
				at := p.calls[i].at
				if p.calls[i].known {
					rt, _ := p.outcome(i, s)
					at -= rt
				}
				want[i] = rec{at, int32(i)}
			}
			slices.SortFunc(want, func(a, b rec) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.i, b.i)) })
			got := p.arrivals(s)
			if len(got) != n {
				t.Fatalf("round %d side %d: %d arrivals of %d calls", round, s, len(got), n)
			}
			for j := range want {
				if got[j] != want[j].i {
					t.Fatalf("round %d side %d (wide %v): arrival %d is call %d, want %d", round, s, wide, j, got[j], want[j].i)
				}
			}
			if again := p.arrivals(s); &again[0] != &got[0] {
				t.Fatalf("round %d side %d: the order worked out again", round, s)
			}
		}
	}
}
