package collector

import (
	"math/rand/v2"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// A ring's passes over a run of steps are what at tells of each step:
// the run starting anywhere in the ring (wrapping past its end, before
// what it holds, beyond it), aligned or not, over slots written, stale or
// never written.
func TestRingPassesAreWhatAtTells(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counted := 0 // steps whose slot held passes: the case is not all zeros
	for range 200 {
		r := newRing(fineStepMs, 1+rng.IntN(40), rng.IntN(2) == 0)
		base := int64(1_780_000_000_000)
		for range rng.IntN(200) {
			at := base + rng.Int64N(int64(80*fineStepMs))
			r.addSpread(at, 500, &core.Metrics{Pass: 1 + rng.Int64N(9)}, false)
		}
		from := base - 10*fineStepMs + rng.Int64N(int64(100*fineStepMs))
		if rng.IntN(3) > 0 {
			from = r.align(from)
		}
		out := make([]float64, 1+rng.IntN(70))
		r.passes(from, out)
		for k, got := range out {
			want := 0.0
			if sl, _ := r.at(from + int64(k)*fineStepMs); sl != nil {
				want = float64(sl.pass)
			}
			if want > 0 {
				counted++
			}
			if got != want {
				t.Fatalf("ring of %d slots, from %d: step %d passes %v, at tells %v", len(r.starts), from, k, got, want)
			}
		}
	}
	if counted < 500 { // 839 with this seed
		t.Fatalf("only %d steps held passes: the rings are too empty to tell", counted)
	}
}
