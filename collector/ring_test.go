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
			addDirect(&hist, start, bucketMs, &m, core.HistogramCounted(&m.Hist))
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

// An app's two rings, written through the fine one and folded into the
// coarse one as the fine ring turns over, read as the coarse ring written
// with every bucket did: each coarse step holds the same counts, rtMax and
// histogram, for buckets of a second or less, late ones past the fine
// ring's reach, and buckets of whole coarse steps (a Prometheus step). A
// bucket longer than the fine ring keeps its totals. Checked against a
// coarse ring written directly with every bucket (addDirect), as before
// the fold.
func TestAppRingsReadAsBothWritten(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const coarseSlots = 400 // 6,000 s: no write is refused by it here
	for round := range 40 {
		fineSlots := []int{2, 15, 16, 60, appFineSlots}[round%5]
		got := newAppRings(fineSlots, coarseSlots)
		want := newHistRing(coarseStepMs, coarseSlots)
		now := int64(1_700_000_000_000)
		from := now
		var inPass, inHist int64
		for range 3000 {
			now += rng.Int64N(2000)
			at := now
			if rng.IntN(10) == 0 {
				at -= rng.Int64N(int64(fineSlots)*fineStepMs + 30_000) // late, some past the fine ring
			}
			bucketMs := []int64{500, 1000, 15_000, 30_000}[rng.IntN(4)]
			start := at - floorMod(at, bucketMs)
			if start < from {
				continue
			}
			var m core.Metrics
			m.Pass, m.Complete = rng.Int64N(1000), rng.Int64N(1000)
			m.Error, m.Slow = rng.Int64N(m.Complete+1), rng.Int64N(m.Complete+1)
			m.RtSum, m.RtMax = rng.Int64N(100_000), rng.Int64N(5000)
			for k := range m.Hist {
				if rng.IntN(3) == 0 {
					m.Hist[k] = rng.Int64N(50)
				}
			}
			counted := core.HistogramCounted(&m.Hist)
			got.add(start, bucketMs, &m, counted)
			addDirect(&want, start, bucketMs, &m, counted)
			inPass += m.Pass
			inHist += m.Hist[3]
		}
		var outPass, outHist int64
		for a := from - floorMod(from, coarseStepMs); a <= now+60_000; a += coarseStepMs { // buckets reach past now
			g, _ := got.coarseAt(a)
			w := want.at(a)
			if w == nil {
				w = &histCell{start: a}
			}
			if g.c != w.c || g.hist != w.hist {
				t.Fatalf("round %d (fine slots %d): step %d reads %+v %v, want %+v %v", round, fineSlots, a, g.c, g.hist, w.c, w.hist)
			}
			outPass += int64(g.c.pass)
			outHist += int64(g.hist[3])
		}
		if outPass != inPass || outHist != inHist {
			t.Fatalf("round %d: %d passes and %d in slot 3 read, %d and %d written", round, outPass, outHist, inPass, inHist)
		}
	}
	// A bucket longer than the fine ring: the part before its reach goes
	// to the coarse ring at once, each coarse step what a coarse ring
	// written directly holds, its totals kept.
	r, direct := newAppRings(16, coarseSlots), newHistRing(coarseStepMs, coarseSlots)
	m := core.Metrics{Pass: 1_000_003, Complete: 999, RtMax: 7}
	m.Hist[2] = 12_345
	start := int64(1_700_000_100_000) - floorMod(1_700_000_100_000, coarseStepMs)
	r.add(start, 600_000, &m, core.HistogramCounted(&m.Hist))
	addDirect(&direct, start, 600_000, &m, core.HistogramCounted(&m.Hist))
	var pass, complete, hist int64
	for a := start; a < start+600_000; a += coarseStepMs {
		c, _ := r.coarseAt(a)
		if w := direct.at(a); w == nil || c.c != w.c || c.hist != w.hist {
			t.Fatalf("step %d of a 600 s bucket reads %+v %v, want %+v", a, c.c, c.hist, w)
		}
		pass, complete, hist = pass+int64(c.c.pass), complete+int64(c.c.complete), hist+int64(c.hist[2])
		if c.c.rtMax != 7 {
			t.Fatalf("step %d: rtMax %d, want 7", a, c.c.rtMax)
		}
	}
	if pass != m.Pass || complete != m.Complete || hist != m.Hist[2] {
		t.Fatalf("a 600 s bucket reads %d passes, %d completions, %d in slot 2; want %d, %d, %d",
			pass, complete, hist, m.Pass, m.Complete, m.Hist[2])
	}
}

// share is part j of n split evenly in k parts (the parts sum to n, and
// a larger n gives no smaller part): the model the rings are checked
// against, apart from the rings' own shares.
func share(n, j, k int64) int64 {
	q, rem := n/k, n%k
	return q + rem*(j+1)/k - rem*j/k
}

// addDirect folds a bucket of bucketMs from start into the cells of r it
// covers, spread over its steps as a ring written with every bucket is:
// the model appRings' coarse reads are checked against.
func addDirect(r *histRing, start, bucketMs int64, m *core.Metrics, counted uint16) {
	if k := r.parts(bucketMs); k > 1 {
		r.spread(start, k, len(r.cells), m, func(t int64, part *core.Metrics) { r.add(t, part, counted) })
		return
	}
	r.add(start, m, counted)
}
