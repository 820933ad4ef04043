package collector

import (
	"math/rand/v2"
	"testing"
)

// endCounts counts as a map does, whether an end is held in place or in
// its map, and its latest is the latest end with a count.
func TestEndCountsAgreeWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var e endCounts
		model := map[int64]int{}
		spread := int64(1 + round%12) // few ends (in place) to many (the map)
		for step := range 400 {
			end := 1_700_000_000 + rng.Int64N(spread)
			d := 1
			if model[end] > 0 && rng.IntN(2) == 0 {
				d = -1
			}
			got := e.add(end, d)
			model[end] += d
			want := model[end]
			if want <= 0 {
				delete(model, end)
			}
			if got != want {
				t.Fatalf("round %d step %d: add(%d, %d) = %d, want %d", round, step, end, d, got, want)
			}
			var latest int64
			for k := range model {
				latest = max(latest, k)
			}
			if l := e.latest(); l != latest {
				t.Fatalf("round %d step %d: latest %d, want %d", round, step, l, latest)
			}
			held := len(e.more)
			for _, c := range e.few {
				if c.n > 0 {
					held++
					if _, twice := e.more[c.end]; twice {
						t.Fatalf("round %d step %d: end %d counted in place and in the map", round, step, c.end)
					}
				}
			}
			if held != len(model) {
				t.Fatalf("round %d step %d: %d ends held, want %d", round, step, held, len(model))
			}
		}
	}
}
