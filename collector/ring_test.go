package collector

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/sentinel-top/sentinel-top/core"
)

// Both kinds of ring hold, for each of their last n steps, exactly the
// sum of the writes that fell in it, and refuse writes older than what a
// slot holds: checked against a map of every write, with times jumping
// back and forth, across the ring and past it, and buckets spread over
// several steps.
func TestRingsAgreeWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for round := range 300 {
		const stepMs = 1000
		n := 1 + rng.IntN(12)
		plain := newRing(stepMs, n, nil)
		hist := newHistRing(stepMs, n)
		type sum struct {
			pass  int64
			hist0 int64
		}
		model := map[int64]*sum{} // step start -> what fell in it
		newest := int64(-1 << 62)
		now := int64(1_700_000_000_000)
		for step := range 200 {
			now += rng.Int64N(3*stepMs) - stepMs // mostly forward, some back
			bucketMs := []int64{500, 1000, 3000}[rng.IntN(3)]
			start := now - now%bucketMs
			m := core.Metrics{Pass: rng.Int64N(100)}
			m.Hist[0] = rng.Int64N(100)
			plain.addSpread(start, bucketMs, &m)
			hist.addSpread(start, bucketMs, &m, core.HistogramCounted(&m.Hist))
			k := plain.parts(bucketMs)
			for j := max(0, k-int64(n)); j < k; j++ {
				a := start + j*stepMs
				a -= a % stepMs
				// The slot of a holds a newer step: the write is refused.
				if a <= newest-int64(n)*stepMs {
					continue
				}
				if a > newest {
					newest = a
				}
				if model[a] == nil {
					model[a] = &sum{}
				}
				model[a].pass += share(m.Pass, j, k)
				model[a].hist0 += share(m.Hist[0], j, k)
			}
			for a := newest - int64(n-1)*stepMs; a <= newest; a += stepMs {
				want := model[a]
				if want == nil {
					want = &sum{}
				}
				var plainPass, histPass, histHist int64
				if sl := plain.at(a); sl != nil {
					plainPass = int64(sl.pass)
				}
				if c := hist.at(a); c != nil {
					histPass, histHist = int64(c.c.pass), int64(c.hist[0])
				}
				if plainPass != want.pass || histPass != want.pass || histHist != want.hist0 {
					t.Fatalf("round %d step %d (n %d): step %d holds pass %d (%d in the histRing), hist %d; want %d, %d",
						round, step, n, a, plainPass, histPass, histHist, want.pass, want.hist0)
				}
			}
		}
	}
}

// An app ring's slot is one cell of 96 bytes, its start, counts and
// histogram together (what the memory budget charges: histCellBytes).
func TestHistCellSize(t *testing.T) {
	if s := unsafe.Sizeof(histCell{}); s != histCellBytes {
		t.Fatalf("histCell is %d bytes, the budget charges %d", s, histCellBytes)
	}
}

// An app's fine ring fills the allocator's size class it takes: the
// cells it would leave unused are a second each of history for free.
func TestAppFineCellsFillTheirClass(t *testing.T) {
	const class = 32 << 10 // the largest small size class
	size := appFineSlots * unsafe.Sizeof(histCell{})
	if size > class || class-size >= unsafe.Sizeof(histCell{}) {
		t.Fatalf("%d cells take %d bytes of a %d-byte class: %d cells fill it", appFineSlots, size, class, class/unsafe.Sizeof(histCell{}))
	}
}
