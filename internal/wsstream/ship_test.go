package wsstream

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// series is a resource's statistic under a name, as a Shipper reads it.
type series struct {
	name string
	w    *core.MetricWindow
}

func (s series) Name() string             { return s.name }
func (s series) Stat() *core.MetricWindow { return s.w }
func (s series) Concurrency() int64       { return 0 }

// t0 is when the shippers of these tests begin.
const t0 = int64(1764460800000)

// newShipper is a Shipper of one series ("db") at t0 on a virtual clock,
// with its server (closed at the test's end) and a backlog of a minute.
func newShipper(t *testing.T) (*core.VirtualClock, *Server, series, *Shipper) {
	vc := core.NewVirtualClock(time.UnixMilli(t0))
	srv := New(Options{})
	t.Cleanup(func() { srv.Close(nil) })
	r := series{"db", core.NewResourceWindow()}
	s := &Shipper{Clock: vc, BucketMs: 500, Instance: "i", Server: srv, Backlog: NewBacklog(120),
		Series: func() []Series { return []Series{r} }}
	return vc, srv, r, s
}

// TestLateAdditionsAreShippedOnce: an Entry that read the clock in one
// bucket and added its pass after the bucket was shipped (its goroutine
// paused between the two) is counted with the next bucket, exactly once,
// however long ago the bucket was shipped while the statistic holds it:
// this is how 6 of 18 million calls went missing at 2,000 agents, and one
// of 4.4 million at 10,000 (added more than 2 s late).
func TestLateAdditionsAreShippedOnce(t *testing.T) {
	vc, _, r, s := newShipper(t)
	s.Begin(t0)
	added, completions := int64(0), int64(0)
	const buckets = 40
	for k := int64(0); k < buckets; k++ {
		start := t0 + k*500
		r.w.Current(start + 100).AddPass(3)
		added += 3
		vc.Set(time.UnixMilli(start + 500))
		s.Ship()
		// Late: a pass and a completion land in the bucket just shipped,
		// and in ones shipped 3 s and 7.5 s ago (the ring holds 10 s), each
		// told to the statistic as a Guard's writes are.
		for _, ago := range []int64{0, 3000, 7500} {
			if b, ok := r.w.Lookup(start - ago); ok && k%2 == 0 {
				b.AddPass(1)
				b.AddComplete(20, false, false)
				r.w.Wrote(start - ago + 100)
				added++
				completions++
			}
		}
	}
	vc.Set(time.UnixMilli(t0 + buckets*500 + 500))
	s.Ship()
	var sent, complete int64
	seen := map[int64]bool{}
	for _, it := range backlogItems(t, s.Backlog) {
		if seen[it.Start] {
			t.Fatalf("bucket %d sent twice", it.Start)
		}
		seen[it.Start] = true
		sent += it.Pass
		complete += it.Complete
	}
	if sent != added || complete != completions {
		t.Fatalf("shipped %d passes and %d completions, %d and %d happened", sent, complete, added, completions)
	}
}

// pausingClock is a virtual clock whose every reading is followed by a
// chance for other goroutines to run: an Entry may pause between reading
// the clock and adding its count, as a preempted one does.
type pausingClock struct{ *core.VirtualClock }

func (c pausingClock) UnixMilli() int64 {
	ms := c.VirtualClock.UnixMilli()
	runtime.Gosched()
	return ms
}

func (c pausingClock) Now() time.Time {
	now := c.VirtualClock.Now()
	runtime.Gosched()
	return now
}

// TestPausedEntriesAreShippedOnce: callers of a real Guard, each pausing
// between reading the clock and counting, while a shipper ships 100 ms of
// the clock at a time (so they often count in a bucket already shipped):
// every pass and completion is shipped, once. The shipper reads a shipped
// bucket again only when a late write was told (core.Window.Wrote).
func TestPausedEntriesAreShippedOnce(t *testing.T) {
	for round := range racetest.Cases(20) {
		vc := core.NewVirtualClock(time.UnixMilli(t0))
		g := core.NewGuard(core.GuardOptions{Clock: pausingClock{vc}})
		e, err := g.Entry("db") // makes the resource
		if err != nil {
			t.Fatal(err)
		}
		e.Exit(nil)
		r, _ := g.Resource("db")
		srv := New(Options{})
		s := &Shipper{Clock: vc, BucketMs: 500, Instance: "i", Server: srv, Backlog: NewBacklog(120),
			Series: func() []Series { return []Series{r} }}
		s.Begin(t0)
		var stop atomic.Bool
		var calls atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					e, err := g.Entry("db")
					if err != nil {
						t.Error(err)
						return
					}
					e.Exit(nil)
					calls.Add(1)
				}
			}()
		}
		// 4 s in all: the statistic's ring (10 s) reuses no slot.
		for range 40 {
			vc.Advance(100 * time.Millisecond)
			s.Ship()
			runtime.Gosched()
		}
		stop.Store(true)
		wg.Wait()
		vc.Advance(time.Second)
		s.Ship()
		var pass, complete int64
		for _, it := range backlogItems(t, s.Backlog) {
			pass += it.Pass
			complete += it.Complete
		}
		made := calls.Load() + 1
		if pass != made || complete != made || s.Skipped() != 0 {
			t.Fatalf("round %d: %d calls, shipped %d passes and %d completions, %d buckets skipped; late writes told: %d",
				round, made, pass, complete, s.Skipped(), r.Stat().LateWrites())
		}
		srv.Close(nil)
	}
}

// TestShipperKeepsEachSeriesRing: resources come one by one, as a
// service's do, listed in any order, while all of them count: every
// bucket is shipped once with its counts and none is taken for lost, so
// each series kept its ring whether the list changed or not.
func TestShipperKeepsEachSeriesRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	vc := core.NewVirtualClock(time.UnixMilli(t0))
	srv := New(Options{})
	defer srv.Close(nil)
	var rs []Series
	s := &Shipper{Clock: vc, BucketMs: 500, Instance: "i", Server: srv, Backlog: NewBacklog(1 << 12),
		Series: func() []Series {
			out := slices.Clone(rs)
			rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			return out
		}}
	s.Begin(t0)
	written := map[string]int64{}
	for k := int64(0); k < 200; k++ {
		if k%20 == 0 { // a new resource, its name anywhere in the order
			rs = append(rs, series{fmt.Sprintf("r%03d", rng.IntN(1000)), core.NewResourceWindow()})
		}
		now := t0 + k*500 + 100
		for _, r := range rs {
			n := 1 + rng.Int64N(3)
			r.Stat().Current(now).AddPass(n)
			r.Stat().Wrote(now)
			written[fmt.Sprint(r.Name(), now-100)] += n
		}
		vc.Set(time.UnixMilli(now + 400))
		s.Ship()
	}
	shipped := map[string]int64{}
	for _, it := range backlogItems(t, s.Backlog) {
		k := fmt.Sprint(it.Resource, it.Start)
		if _, dup := shipped[k]; dup {
			t.Fatalf("%s shipped twice", k)
		}
		shipped[k] = it.Pass
	}
	if !maps.Equal(shipped, written) || s.Skipped() != 0 {
		t.Fatalf("shipped %d buckets, %d written, %d taken for lost", len(shipped), len(written), s.Skipped())
	}
}

// A series list of the same length as the last but with another series
// in it gets that series' ring, not the ring at its place before.
func TestShipperRingsFollowTheSeries(t *testing.T) {
	_, _, a, s := newShipper(t)
	b := series{"b", core.NewResourceWindow()}
	c := series{"c", core.NewResourceWindow()}
	first := slices.Clone(s.rings([]Series{a, b}))
	again := s.rings([]Series{a, b})
	if again[0].ring != first[0].ring || again[1].ring != first[1].ring {
		t.Fatal("the same series got other rings")
	}
	other := s.rings([]Series{a, c})
	if other[0].ring != first[0].ring || other[1].ring == first[1].ring || other[1].w != c.w {
		t.Fatalf("c got b's ring, or a lost its own: %+v, before %+v", other, first)
	}
	if _, kept := s.sent["b"]; kept {
		t.Error("b's ring kept after b went away")
	}
}

// A shipper that runs 12 s late while the service goes on counting (its
// process starved of CPU) ships the buckets the statistic still holds and
// counts the ones overwritten before it came as skipped, their counts
// lost, and a reader is told in its next buckets message: nothing is lost
// without a count.
func TestShippingLateCountsSkippedBuckets(t *testing.T) {
	vc, srv, r, s := newShipper(t)
	sub := subscribe(t, srv, 0)
	s.Begin(t0)
	for k := int64(0); k < 24; k++ { // a pass in each bucket of 12 s
		r.w.Current(t0 + k*500 + 100).AddPass(1)
	}
	vc.Set(time.UnixMilli(t0 + 12_000))
	s.Ship()
	sent := backlogPasses(t, s.Backlog)
	// The ring holds the 20 buckets written last, 4 to 23 (11,500): they
	// are shipped; the 4 before them were overwritten, skipped.
	if sent != 20 || s.Skipped() != 4 {
		t.Fatalf("shipped %d passes, %d buckets skipped; want 20 and 4", sent, s.Skipped())
	}
	told, read := drain(t, sub)
	if told != 4 || read != 20 {
		t.Errorf("the reader was told of %d dropped messages and read %d passes; want 4 and 20", told, read)
	}
	vc.Set(time.UnixMilli(t0 + 12_500))
	s.Ship()
	if s.Skipped() != 4 {
		t.Fatalf("%d buckets skipped after shipping on time", s.Skipped())
	}
}

// backlogItems decodes the items of the buckets frames a backlog holds, in
// order.
func backlogItems(t *testing.T, b *Backlog) []wire.BucketItem {
	t.Helper()
	var items []wire.BucketItem
	for _, f := range b.Frames() {
		m, err := wire.Decode(f.Data)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, m.(*wire.Buckets).Items...)
	}
	return items
}

// backlogPasses sums the passes of the buckets frames a backlog holds.
func backlogPasses(t *testing.T, b *Backlog) int64 {
	t.Helper()
	var passes int64
	for _, it := range backlogItems(t, b) {
		passes += it.Pass
	}
	return passes
}

// subscribe is a reader of srv's broadcasts, closed at the test's end.
func subscribe(t *testing.T, srv *Server, queue int) *Subscription {
	t.Helper()
	sub, err := srv.Subscribe(queue)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// drain reads what a subscriber has queued: the dropped messages it was
// told of, and the passes it read.
func drain(t *testing.T, sub *Subscription) (told, passes int64) {
	t.Helper()
	for {
		msg, ok := sub.Next()
		if !ok {
			return told, passes
		}
		m, err := wire.Decode(msg)
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := m.(*wire.Buckets); ok {
			told += b.Dropped
			for _, it := range b.Items {
				passes += it.Pass
			}
		}
	}
}

// A process suspended for an hour (a stopped container, a laptop's lid)
// counted nothing meanwhile and lost nothing: when it resumes, the bucket
// it was filling is shipped, an hour late, and no reader is told of a
// loss.
func TestSuspendedProcessLosesNothing(t *testing.T) {
	vc, srv, r, s := newShipper(t)
	sub := subscribe(t, srv, 0)
	s.Begin(t0)
	for k := int64(0); k < 10; k++ {
		r.w.Current(t0 + k*500 + 100).AddPass(2)
		vc.Set(time.UnixMilli(t0 + k*500 + 500))
		s.Ship()
	}
	r.w.Current(t0 + 5_100).AddPass(7) // then suspended, mid-bucket
	// An hour and 2.3 s later: the slot of its first bucket is not that of
	// the one it was filling (that would overwrite it; a loss, counted).
	resumed := t0 + 7_400 + time.Hour.Milliseconds()
	vc.Set(time.UnixMilli(resumed))
	r.w.Current(resumed).AddPass(1)
	vc.Set(time.UnixMilli(resumed + 500))
	s.Ship()
	if s.Skipped() != 0 {
		t.Errorf("%d buckets skipped; the process wrote none while suspended", s.Skipped())
	}
	told, read := drain(t, sub)
	if told != 0 || read != 10*2+7+1 {
		t.Errorf("the reader was told of %d dropped messages and read %d passes; want 0 and 28", told, read)
	}
}

// A pass that takes the slot of a bucket after that bucket was shipped
// empty (its goroutine read the clock, then paused past the boundary) is
// read late and shipped with the next bucket; when the slot is taken again
// 10 s later, nothing was lost and none is counted.
func TestLateBucketTakenAfterShippingIsNotSkipped(t *testing.T) {
	vc, _, r, s := newShipper(t)
	s.Begin(t0)
	var written int64
	for k := int64(0); k < 60; k++ {
		if k != 2 {
			r.w.Current(t0 + k*500 + 100).AddPass(1)
			written++
		}
		vc.Set(time.UnixMilli(t0 + k*500 + 500))
		s.Ship()
		if k == 3 {
			r.w.Current(t0 + 2*500 + 100).AddPass(1) // bucket 2, shipped empty
			r.w.Wrote(t0 + 2*500 + 100)
			written++
		}
	}
	sent := backlogPasses(t, s.Backlog)
	if sent != written || s.Skipped() != 0 {
		t.Errorf("shipped %d of %d passes, %d buckets skipped; want all and none", sent, written, s.Skipped())
	}
}

// writeOnRead is a series whose service counts a pass in the current
// bucket the first time the shipper reads it: the first entry of a
// bucket, made as the shipper wakes at its boundary.
type writeOnRead struct {
	series
	now  func() int64
	once bool
}

func (r *writeOnRead) Concurrency() int64 {
	if !r.once {
		r.once = true
		r.w.Current(r.now()).AddPass(1)
	}
	return 0
}

// A late shipper is reading the oldest bucket the ring holds when the
// service's first entry of the current bucket takes its slot: that bucket
// is lost, and counted, though the next Ship is on time.
func TestBucketTakenWhileShippingLateIsCounted(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0))
	srv := New(Options{})
	t.Cleanup(func() { srv.Close(nil) })
	r := &writeOnRead{series: series{"db", core.NewResourceWindow()}, once: true,
		now: func() int64 { return vc.Now().UnixMilli() }}
	s := &Shipper{Clock: vc, BucketMs: 500, Instance: "i", Server: srv, Backlog: NewBacklog(120),
		Series: func() []Series { return []Series{r} }}
	sub := subscribe(t, srv, 0)
	s.Begin(t0)
	for k := int64(0); k < 20; k++ { // the 20 buckets of 10 s, all held
		r.w.Current(t0 + k*500 + 100).AddPass(1)
	}
	vc.Set(time.UnixMilli(t0 + 10_000)) // the boundary of bucket 20, whose slot is bucket 0's
	r.once = false
	s.Ship()
	vc.Set(time.UnixMilli(t0 + 10_500))
	s.Ship()
	told, read := drain(t, sub)
	// Bucket 0 is overwritten as it is read; 1 to 19 are shipped, then 20.
	if read != 20 || s.Skipped() != 1 || told != 1 {
		t.Errorf("read %d passes, %d buckets skipped, told of %d dropped; want 20, 1 and 1", read, s.Skipped(), told)
	}
}

// TestShipperAccountsForEveryBucket drives shippers at random: resources
// counted in random buckets, ships on time, a little late, or many
// seconds late, with the service counting meanwhile. Every bucket written
// is either shipped, once, with every count it had, or counted skipped:
// Skipped is exactly the number of written buckets never shipped, and a
// reader is told of a loss whenever there was one.
func TestShipperAccountsForEveryBucket(t *testing.T) {
	for seed := range int64(racetest.Cases(200)) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { shipAtRandom(t, seed) })
	}
}

func shipAtRandom(t *testing.T, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	vc := core.NewVirtualClock(time.UnixMilli(t0))
	srv := New(Options{})
	defer srv.Close(nil)
	rs := make([]Series, 1+rng.IntN(4))
	for i := range rs {
		rs[i] = series{fmt.Sprintf("r%d", i), core.NewResourceWindow()}
	}
	s := &Shipper{Clock: vc, BucketMs: 500, Instance: "i", Server: srv, Backlog: NewBacklog(1 << 16),
		Series: func() []Series { return slices.Clone(rs) }}
	sub := subscribe(t, srv, 1<<16)
	s.Begin(t0)
	type key struct {
		name  string
		start int64
	}
	written := map[key]int64{}
	now := t0
	for range 400 {
		switch p := rng.IntN(100); {
		case p < 70: // counting
			r := rs[rng.IntN(len(rs))]
			n := 1 + rng.Int64N(5)
			r.Stat().Current(now).AddPass(n)
			written[key{r.Name(), now - now%500}] += n
		case p < 90:
			s.Ship()
		}
		step := 1 + rng.Int64N(600)
		if rng.IntN(30) == 0 {
			step = 5_000 + rng.Int64N(40_000) // the shipper starved, or the process stopped
		}
		now += step
		vc.Set(time.UnixMilli(now))
	}
	now += 500
	vc.Set(time.UnixMilli(now))
	s.Ship()

	shipped := map[key]int64{}
	for _, it := range backlogItems(t, s.Backlog) {
		k := key{it.Resource, it.Start}
		if _, dup := shipped[k]; dup {
			t.Fatalf("%v shipped twice", k)
		}
		shipped[k] = it.Pass
	}
	var lost, most int64
	lostOf := map[string]int64{}
	for k, n := range written {
		got, ok := shipped[k]
		switch {
		case !ok:
			lost++
			lostOf[k.name]++
			most = max(most, lostOf[k.name])
		case got != n:
			t.Errorf("%v shipped with %d passes, %d counted", k, got, n)
		}
	}
	for k := range shipped {
		if _, ok := written[k]; !ok {
			t.Errorf("%v shipped, never written", k)
		}
	}
	if s.Skipped() != lost {
		t.Errorf("Skipped() = %d, %d written buckets never shipped", s.Skipped(), lost)
	}
	told, _ := drain(t, sub)
	// A lost bucket is a lost message for a reader: at least as many as
	// one resource lost, at most one per bucket lost.
	if told < most || told > lost {
		t.Errorf("a reader was told of %d dropped messages; %d buckets were lost, %d of one resource", told, lost, most)
	}
}

// resetOnLookup is a statistic whose bucket at start is reset for the
// bucket a window later, and counted in, right after its after-th lookup
// found it: the first entry of the newer bucket, made while the shipper
// reads the older one (a shipper wakes at a bucket boundary, when that
// entry comes).
type resetOnLookup struct {
	w       *core.MetricWindow
	start   int64
	pass    int64
	after   int
	lookups int
}

func (r *resetOnLookup) Lookup(start int64) (*core.MetricBucket, bool) {
	b, ok := r.w.Lookup(start)
	if ok && start == r.start {
		if r.lookups++; r.lookups == r.after {
			r.w.Current(start + core.ResourceIntervalMs).AddPass(r.pass)
		}
	}
	return b, ok
}

// A bucket whose slot is reset for a newer bucket while it is read again
// has nothing late: the counts read are the newer bucket's, which is
// shipped in its turn. Taking them as late counted them twice (found as one
// call too many of 11.8 million in a bench run at load 20).
func TestLateIgnoresASlotResetWhileRead(t *testing.T) {
	const s0 = int64(1764460800000)
	held := func() (*core.MetricWindow, *sentRing) {
		w := core.NewResourceWindow()
		w.Current(s0 + 100).AddPass(1)
		ring := newSentRing(w.SampleCount())
		m, ok := snapshot(w, s0)
		if !ok || m.Pass != 1 {
			t.Fatalf("snapshot of a held bucket: %+v, %v", m, ok)
		}
		ring.add(s0, m)
		return w, ring
	}
	// A truly late pass is read again.
	w, ring := held()
	b, _ := w.Lookup(s0)
	b.AddPass(1)
	if got := ring.late(w, nil); got.Pass != 1 {
		t.Fatalf("a late pass read as %d", got.Pass)
	}
	// Reset once the bucket is found (its counts then differ from what was
	// shipped), or once it is found again to be read (after a late pass
	// made it differ: that pass goes with its slot, as a count later than
	// the window does).
	for after := 1; after <= 2; after++ {
		w, ring := held()
		if after == 2 {
			b, _ := w.Lookup(s0)
			b.AddPass(1)
		}
		got := ring.late(&resetOnLookup{w: w, start: s0, pass: 3, after: after}, nil)
		if got != (core.Metrics{}) {
			t.Fatalf("reset after lookup %d: %d late passes from a slot reset for a newer bucket: %+v", after, got.Pass, got)
		}
		if b, ok := w.Lookup(s0 + core.ResourceIntervalMs); !ok || b.Snapshot().Pass != 3 {
			t.Fatalf("reset after lookup %d: the newer bucket was not made", after)
		}
	}
	// The first read of a bucket to ship, reset as it is read, is not
	// taken for it either.
	w, _ = held()
	if m, ok := snapshot(&resetOnLookup{w: w, start: s0, pass: 3, after: 1}, s0); ok || m != (core.Metrics{}) {
		t.Fatalf("read %+v, %v across a reset", m, ok)
	}
}

// BenchmarkShip is one agent's Ship of 20 busy resources, the late-count
// re-read of the buckets the statistics hold included: "one" with
// everything in cache, "fleet" as a process serving 2,000 agents' worth of
// them does (160 MB of statistics; ns/op is still one agent's Ship).
func BenchmarkShip(b *testing.B) {
	for _, agents := range []int{1, 2000} {
		name := "one"
		if agents > 1 {
			name = "fleet"
		}
		b.Run(name, func(b *testing.B) {
			const t0 = int64(1764460800000)
			vc := core.NewVirtualClock(time.UnixMilli(t0))
			srv := New(Options{})
			defer srv.Close(nil)
			shippers := make([]*Shipper, agents)
			all := make([][]Series, agents)
			for a := range shippers {
				for i := range 20 {
					all[a] = append(all[a], series{fmt.Sprintf("GET:/api/v1/resource/%d", i), core.NewResourceWindow()})
				}
				rs := all[a]
				shippers[a] = &Shipper{Clock: vc, BucketMs: 500, Instance: "i", Server: srv, Backlog: NewBacklog(2),
					Series: func() []Series { return slices.Clone(rs) }}
				shippers[a].Begin(t0)
			}
			b.ReportAllocs()
			for k := 0; b.Loop(); k++ {
				a := k % agents
				start := t0 + int64(k/agents)*500
				b.StopTimer()
				for _, r := range all[a] {
					r.Stat().Current(start + 100).AddPass(2)
					r.Stat().Current(start+100).AddComplete(5, false, false)
				}
				if a == 0 {
					vc.Set(time.UnixMilli(start + 500))
				}
				b.StartTimer()
				shippers[a].Ship()
			}
		})
	}
}

// TestBacklogBeginsWithItsOldestPeriod: a new reader's backlog leaves out
// heartbeats but the oldest period's, stamped when that period closed,
// even when the shipper sent it late: its first buckets message tells how
// far back the backlog reaches, idle or not.
func TestBacklogBeginsWithItsOldestPeriod(t *testing.T) {
	vc, _, r, s := newShipper(t)
	s.Backlog = NewBacklog(8)
	s.Begin(t0)
	ship := func(at int64) { vc.Set(time.UnixMilli(at)); s.Ship() }
	first := func() (start, ts int64, items int) {
		t.Helper()
		frames := s.Backlog.Frames()
		if len(frames) == 0 {
			t.Fatal("the backlog sends nothing")
		}
		m, err := wire.Decode(frames[0].Data)
		if err != nil {
			t.Fatal(err)
		}
		b := m.(*wire.Buckets)
		if len(b.Items) > 0 {
			return b.Items[0].Start, b.Ts, len(b.Items)
		}
		return b.Ts - b.BucketMs, b.Ts, 0
	}
	// 12 idle periods, the last 8 held; 3 s late, so shipped at once.
	ship(t0 + 6000 + 3000)
	if start, ts, items := first(); items != 0 || start != t0+9000-4000 || ts != start+500 {
		t.Errorf("first backlog message: %d items, period %d, ts %d; want a heartbeat of period %d stamped %d",
			items, start-t0, ts-t0, 5000, 5500)
	}
	if got := len(s.Backlog.Frames()); got != 1 {
		t.Errorf("an idle backlog sends %d messages; want its oldest period's heartbeat alone", got)
	}
	// Traffic in the period that becomes the oldest: its items lead, and
	// no heartbeat comes before them.
	r.w.Current(t0 + 9100).AddPass(2)
	for at := t0 + 9500; at <= t0+13_000; at += 500 {
		ship(at)
	}
	frames := s.Backlog.Frames()
	if start, _, items := first(); items != 1 || start != t0+9000 || len(frames) != 1 {
		t.Errorf("first backlog message: %d items of period %d, %d messages; want the one with traffic (period 9000) alone",
			items, start-t0, len(frames))
	}
}

// TestBacklogKeepsEachBreakersLastTransition: a new reader gets each
// breaker's last transition however old (unless a later one is held),
// then the transitions of the periods held, each before the buckets of
// the period it happened in, as they were sent; at most maxBacklogStates
// of them besides the last ones.
func TestBacklogKeepsEachBreakersLastTransition(t *testing.T) {
	b := NewBacklog(4)
	state := func(breaker string, ts int64) *Frame {
		f, err := Encode(&wire.State{Header: wire.Header{Ts: ts, Instance: "i"}, Resource: breaker,
			From: core.Closed, To: core.Open, Threshold: 0.5, RetryTimeoutMs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		b.AddState(breaker+"\x00", ts, f)
		return f
	}
	period := func(start int64) *Frame {
		f, err := Encode(&wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: "i"}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "db", Start: start, Metrics: core.Metrics{Pass: 1}}}})
		if err != nil {
			t.Fatal(err)
		}
		f.Msg = nil // as the shipper keeps them
		b.Add(start, start+500, []*Frame{f})
		return f
	}
	a1 := state("a", 100)
	b1 := state("b", 200)
	a2 := state("a", 300)
	p0 := period(0)
	b2 := state("b", 600)
	p1 := period(500)
	p2, p3 := period(1000), period(1500)
	c1 := state("c", 2100) // after the periods held
	if got, want := b.Frames(), []*Frame{a1, b1, a2, p0, b2, p1, p2, p3, c1}; !slices.Equal(got, want) {
		t.Fatalf("frames %v\nwant   %v", got, want)
	}
	// Period 0 goes, and the transitions in it: a's last stays, first;
	// b's later one is held with its period.
	p4 := period(2000)
	if got, want := b.Frames(), []*Frame{a2, b2, p1, p2, p3, c1, p4}; !slices.Equal(got, want) {
		t.Fatalf("after period 0 left: frames %v\nwant   %v", got, want)
	}
	for i := range maxBacklogStates + 10 {
		state("flap", 2200+int64(i))
	}
	if n := len(b.Frames()); n > maxBacklogStates+4+3 {
		t.Errorf("%d frames held: the transitions are not bounded", n)
	}
}

// TestBacklogForgetsReplacedBreakers: a breaker its rules replaced loses
// its transitions before the replacement, held or last; those of a kept
// breaker, and those after, stay.
func TestBacklogForgetsReplacedBreakers(t *testing.T) {
	b := NewBacklog(2)
	frame := func(breaker string, ts int64) *Frame {
		f := &Frame{Data: []byte(breaker)}
		b.AddState(breaker, ts, f)
		return f
	}
	frame("a", 100)
	b.Add(0, 500, nil)
	b.Add(500, 1000, nil)
	b.Add(1000, 1500, nil) // a's transition is now its last, out of the periods
	frame("b", 1100)
	kept := frame("c", 1200)
	after := frame("b", 1400)
	b.ForgetBreakers(func(breaker string) bool { return breaker == "c" }, 1300)
	if got := b.Frames(); !slices.Equal(got, []*Frame{kept, after}) {
		t.Errorf("frames %v; want c's and b's after the replacement", got)
	}
}
