package wsstream

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Series is one resource's statistics as a Shipper reads them;
// *core.Resource is one.
type Series interface {
	Name() string
	Stat() *core.MetricWindow
	Concurrency() int64
}

// HotSeries is a Series that also counts its entries by parameter value.
type HotSeries interface {
	Series
	// Hot returns the hot values of the closed bucket at start (at most
	// wire.MaxHotValues and one wire.HotOther), nil when it has none.
	Hot(start int64) []wire.HotItem
}

// Backlog keeps what a new reader receives after hello and rules: the
// buckets frames of the last periods, and the breaker transitions (state
// frames) of the same time, with each breaker's last transition however
// old, so that a reader that was away, or comes late, learns every
// breaker's current state and what it did while the backlog reaches back.
type Backlog struct {
	mu      sync.Mutex
	periods []backlogPeriod // ring, oldest first from head
	head, n int
	// states are the transitions since the oldest period's start, oldest
	// first, at most maxBacklogStates; last is each breaker's latest
	// transition that left them.
	states []backlogState
	last   map[string]backlogState
}

// backlogPeriod is one bucket period's frames.
type backlogPeriod struct {
	start, end int64
	frames     []*Frame
}

// backlogState is one breaker transition: its breaker (resource and rule
// id), its time and its frame.
type backlogState struct {
	breaker string
	ts      int64
	f       *Frame
}

// maxBacklogStates bounds the transitions a backlog holds besides each
// breaker's last: breakers flapping every millisecond cannot grow it.
const maxBacklogStates = 4096

// NewBacklog returns a backlog of the given number of bucket periods.
func NewBacklog(periods int) *Backlog {
	return &Backlog{periods: make([]backlogPeriod, max(periods, 1))}
}

// Add keeps the frames of the period [start, end), forgetting the oldest
// period when full.
func (b *Backlog) Add(start, end int64, frames []*Frame) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := (b.head + b.n) % len(b.periods)
	if b.n == len(b.periods) {
		b.head = (b.head + 1) % len(b.periods)
	} else {
		b.n++
	}
	b.periods[i] = backlogPeriod{start, end, frames}
	b.age(b.periods[b.head].start)
}

// AddState keeps a breaker's transition at ts (its state frame); breaker
// names the breaker (its resource and rule id), ts is the time it happened.
// Call it under the server's lock with the broadcast (Server.Locked).
func (b *Backlog) AddState(breaker string, ts int64, f *Frame) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.states = append(b.states, backlogState{breaker, ts, f})
	if len(b.states) > maxBacklogStates {
		b.keepLast(b.states[0])
		b.states = slices.Delete(b.states, 0, 1)
	}
	if b.n > 0 {
		b.age(b.periods[b.head].start)
	}
}

// ForgetBreakers forgets the transitions before the time given of the
// breakers keep does not keep: new rules replaced them with breakers that
// start CLOSED without a transition (as sentinel-golang and Java Sentinel
// do), so a reader must not take their old states for the new breakers'.
func (b *Backlog) ForgetBreakers(keep func(breaker string) bool, before int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, st := range b.last {
		if !keep(name) && st.ts < before {
			delete(b.last, name)
		}
	}
	b.states = slices.DeleteFunc(b.states, func(st backlogState) bool { return !keep(st.breaker) && st.ts < before })
}

// age moves the transitions older than from out of states, keeping each
// breaker's last. b.mu is held.
func (b *Backlog) age(from int64) {
	k := 0
	for k < len(b.states) && b.states[k].ts < from {
		b.keepLast(b.states[k])
		k++
	}
	if k > 0 {
		b.states = slices.Delete(b.states, 0, k)
	}
}

// keepLast records st as its breaker's last transition left out of
// states. b.mu is held.
func (b *Backlog) keepLast(st backlogState) {
	if b.last == nil {
		b.last = map[string]backlogState{}
	}
	if old, ok := b.last[st.breaker]; !ok || st.ts >= old.ts {
		b.last[st.breaker] = st
	}
}

// Frames returns the held frames, oldest first: each breaker's last
// transition older than the periods held (unless a later one is among
// them), then the periods' buckets frames and the transitions in the
// order they happened (a transition before the buckets of the period that
// ends after it, as they were sent). Heartbeats are left out but the
// oldest period's: a reader learns from its first buckets message how far
// back the backlog reaches (the items' start, or the heartbeat's period,
// stamped with the time it closed), so that one away for longer can tell
// the periods it never received from periods without traffic.
func (b *Backlog) Frames() []*Frame {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*Frame
	recent := map[string]bool{}
	for _, st := range b.states {
		recent[st.breaker] = true
	}
	old := make([]backlogState, 0, len(b.last))
	for name, st := range b.last {
		if !recent[name] {
			old = append(old, st)
		}
	}
	slices.SortFunc(old, func(x, y backlogState) int { return cmp.Or(cmp.Compare(x.ts, y.ts), cmp.Compare(x.breaker, y.breaker)) })
	for _, st := range old {
		out = append(out, st.f)
	}
	states := b.states
	for k := 0; k < b.n; k++ {
		p := &b.periods[(b.head+k)%len(b.periods)]
		for len(states) > 0 && states[0].ts < p.end {
			out, states = append(out, states[0].f), states[1:]
		}
		for _, f := range p.frames {
			if hb := heartbeat(f); hb != nil {
				if k == 0 && len(p.frames) == 1 {
					out = append(out, stamped(hb, p.end, f))
				}
				continue
			}
			out = append(out, f)
		}
	}
	for _, st := range states {
		out = append(out, st.f)
	}
	return out
}

// heartbeat is f's message when f is a heartbeat (a buckets message
// without items), nil otherwise.
func heartbeat(f *Frame) *wire.Buckets {
	if bm, ok := f.Msg.(*wire.Buckets); ok && len(bm.Items) == 0 {
		return bm
	}
	return nil
}

// stamped is the heartbeat hb sent at ts: the end of its period, not the
// time it was shipped, which may be later (a late ship sends a run of
// periods at once). It is f itself when it cannot be encoded.
func stamped(hb *wire.Buckets, ts int64, f *Frame) *Frame {
	m := *hb
	m.Ts = ts
	if out, err := Encode(&m); err == nil {
		return out
	}
	return f
}

// Shipper sends every closed bucket of a set of series once, right after
// it closes, to a Server, and keeps it in a Backlog.
type Shipper struct {
	Clock    core.Clock
	BucketMs int64
	Instance string
	// ItemsPerFrame splits a period with more resources over several frames.
	ItemsPerFrame int
	Server        *Server
	Backlog       *Backlog
	// Series lists what to ship, in any order.
	Series func() []Series
	// OnPanic is told of a panic recovered while shipping.
	OnPanic func(any)

	mu   sync.Mutex
	next int64 // the first bucket not shipped yet
	init bool
	sent map[string]*sentRing // what was sent of each series' latest buckets
	gen  uint64               // listings of a changed series: a ring not seen in the latest is gone
	// listed is the series of the last collect, in its order, with their
	// rings: a collect given the same series in the same order (a service
	// whose resources did not change) takes the rings from here.
	listed []listedRing

	skipped atomic.Int64 // see Skipped
	starts  []int64      // Ship's buffer
	// ships counts Ship's calls; lost is the buckets the current one found
	// lost, most the most of them of one series.
	ships      uint64
	lost, most int64
	// items is collect's buffer, emptied after each bucket's frames are
	// encoded.
	items []wire.BucketItem
}

// A bucket already shipped is read again at a later Ship when a late write
// reached it (core.Window.Wrote): an Entry that read the clock in one bucket
// and added its pass after the bucket was shipped (a goroutine paused
// between the two) counts in a bucket already sent. The difference is sent
// with the next bucket, so that every call is counted exactly once
// (re-sending the old bucket would be dropped as a duplicate). Once the
// slot is reused, a late writer's count lands in the newer bucket
// (core.Window), which is still to be shipped. Only a count added between
// the shipper's last read of the bucket and its slot's reuse, 10 s later,
// can be lost with it, as in Sentinel.
//
// The shipper seals each bucket (core.Window.Seal) before it reads it, and
// reads the buckets it sent again only when the window's late writes moved
// since it last looked: with no late writer, a Ship reads each bucket once.

// maxLateBuckets bounds the buckets per series read again, whatever the
// statistic's sample count.
const maxLateBuckets = 64

// sentRing is what was sent of one series' buckets the statistic still
// holds.
type sentRing struct {
	start []int64
	sent  []core.Metrics
	n     int    // entries added, the newest at (n-1)%len(start)
	gen   uint64 // the Shipper's gen when its series was last listed
	// held is, for each slot of the statistic, how many buckets it had
	// held (core.Window.Slot) when last read: when its bucket was
	// shipped, or found empty. A bucket taken in the slot after that is
	// to be shipped; one more taken before it was read means it is lost.
	held []uint64
	// lost is the buckets lost found by Ship number lostIn.
	lost   int64
	lostIn uint64
	// lateSeen is the statistic's late writes (core.Window.LateWrites)
	// when its sent buckets were last read again.
	lateSeen uint64
	// total is every count shipped of the series (Totals).
	total Totals
}

// Totals are a series' counts shipped so far, summed over its buckets:
// what a reader that received every bucket counts.
type Totals struct {
	Pass, Block, Complete, Error, Slow int64
}

// SeriesTotals are one series' Totals.
type SeriesTotals struct {
	Name string
	Totals
}

// Totals appends to dst every listed series' counts shipped so far, in
// name order, and returns it. The series are those of the last Ship.
func (s *Shipper) Totals(dst []SeriesTotals) []SeriesTotals {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.listed {
		dst = append(dst, SeriesTotals{l.name, l.ring.total})
	}
	return dst
}

// listedRing is a series as collect last read it, and its ring.
type listedRing struct {
	name string
	w    *core.MetricWindow
	ring *sentRing
}

// rings returns the series' rings, in their order: those of the last
// collect when the series are the same, or else looked up (or made), and
// the rings of the series no longer listed forgotten.
func (s *Shipper) rings(series []Series) []listedRing {
	if len(series) == len(s.listed) {
		same := true
		for i, r := range series {
			if l := &s.listed[i]; l.w != r.Stat() || l.name != r.Name() {
				same = false
				break
			}
		}
		if same {
			return s.listed
		}
	}
	s.gen++
	listed := s.listed[:0]
	for _, r := range series {
		w := r.Stat()
		ring := s.ring(r.Name(), w)
		ring.gen = s.gen
		listed = append(listed, listedRing{r.Name(), w, ring})
	}
	if len(s.sent) > len(series) {
		for name, ring := range s.sent {
			if ring.gen != s.gen {
				delete(s.sent, name) // a resource that went away
			}
		}
	}
	s.listed = listed
	return listed
}

// ring returns the series' ring, a new one for a series not seen before:
// it was made since the last Ship, every bucket it has held is to ship.
func (s *Shipper) ring(name string, w *core.MetricWindow) *sentRing {
	if s.sent == nil {
		s.sent = map[string]*sentRing{}
	}
	ring := s.sent[name]
	if ring == nil {
		ring = newSentRing(w.SampleCount())
		s.sent[name] = ring
	}
	return ring
}

// Skipped counts the buckets of a series that were written and then
// overwritten in the statistic's ring before they were shipped: a Ship
// that ran more than the statistic's interval (core.ResourceIntervalMs)
// late, its process starved of CPU while the service went on counting.
// Whatever they counted is lost, and every reader is told (Server.Missed).
// A process that was suspended wrote nothing meanwhile and loses nothing:
// the buckets its ring still holds are shipped, however old.
func (s *Shipper) Skipped() int64 { return s.skipped.Load() }

// Begin makes the bucket holding now the first one shipped (Start does it
// when not done before; the first Ship otherwise starts at its own time).
func (s *Shipper) Begin(now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begin(now)
}

// begin sets the first bucket to ship and notes how many buckets each
// slot of every series has held so far: none of them is to be shipped.
func (s *Shipper) begin(now int64) {
	s.next, s.init = now-now%s.BucketMs, true
	for _, r := range s.Series() {
		w := r.Stat()
		ring := s.ring(r.Name(), w)
		for i := range ring.held {
			_, ring.held[i], _ = w.Slot(i)
		}
	}
}

// Ship sends the buckets closed since the last call.
func (s *Shipper) Ship() {
	defer func() {
		if v := recover(); v != nil && s.OnPanic != nil {
			s.OnPanic(v)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.UnixMilli()
	cur := now - now%s.BucketMs
	if !s.init {
		s.begin(now)
	}
	next := min(s.next, cur) // the clock went backwards: resume from here
	series := s.Series()
	slices.SortFunc(series, func(x, y Series) int { return cmp.Compare(x.Name(), y.Name()) })
	s.ships++
	s.lost, s.most = 0, 0
	starts := s.starts[:0]
	if oldest := cur - core.ResourceIntervalMs + s.BucketMs; next < oldest {
		// Shipping more than the statistic's interval late (a process
		// starved of CPU, or suspended): slots may have been taken for
		// newer buckets before the older ones were shipped. Those lost
		// are counted, and every reader is told in its next buckets
		// message ("dropped"); those the ring still holds are shipped.
		starts = s.lateStarts(starts, series, next, oldest)
		next = oldest
	}
	for start := next; start < cur; start += s.BucketMs {
		starts = append(starts, start)
	}
	for _, start := range starts {
		frames := s.collect(start, now, series)
		s.Server.Locked(func() {
			s.Backlog.Add(start, start+s.BucketMs, frames)
			for _, f := range frames {
				s.Server.Broadcast(f)
			}
		})
	}
	s.starts = starts[:0]
	s.next = cur
	if s.lost > 0 {
		s.skipped.Add(s.lost)
		// A bucket period lost for any series is a message lost for a
		// reader: at least as many as one series lost.
		s.Server.Missed(s.most)
	}
}

// lateStarts appends to starts, in order, the buckets in [from, to) that a
// slot of any series still holds, and counts the buckets taken in the
// slots since they were last read and gone before they could be shipped.
// Every bucket at or after from is still to ship.
func (s *Shipper) lateStarts(starts []int64, series []Series, from, to int64) []int64 {
	for _, r := range series {
		w := r.Stat()
		ring := s.ring(r.Name(), w)
		for i := range ring.held {
			start, held, ok := w.Slot(i)
			pending := ok && start >= from // shipped now or later, and read then
			s.account(ring, i, held, pending)
			if pending && start < to {
				starts = append(starts, start)
			}
		}
	}
	slices.Sort(starts)
	return slices.Compact(starts)
}

// account reads slot i of a series' statistic, which has held held
// buckets. Of those taken since it was last read, the one it holds is read
// now or pending, still to ship (and read then); the others are lost,
// counted in the Ship's losses.
func (s *Shipper) account(ring *sentRing, i int, held uint64, pending bool) {
	n := int64(held - ring.held[i])
	if n <= 0 {
		return
	}
	n--
	ring.held[i] = held
	if pending {
		ring.held[i]--
	}
	if n == 0 {
		return
	}
	if ring.lostIn != s.ships {
		ring.lostIn, ring.lost = s.ships, 0
	}
	ring.lost += n
	s.lost += n
	s.most = max(s.most, ring.lost)
}

// Start ships at every bucket boundary until done is closed, running
// before (when set) first at each boundary. The first timer is set before
// Start returns, so that a virtual clock moved right after sees it; the
// loop's goroutine is counted in wg.
func (s *Shipper) Start(done <-chan struct{}, before func(), wg *sync.WaitGroup) {
	s.mu.Lock()
	if !s.init {
		s.begin(s.Clock.UnixMilli())
	}
	s.mu.Unlock()
	wake := make(chan struct{}, 1)
	timer := s.arm(wake)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				timer.Stop()
				return
			case <-wake:
				// Armed before shipping, so no boundary is missed however
				// the clock moves meanwhile.
				timer = s.arm(wake)
				if before != nil {
					before()
				}
				s.Ship()
			}
		}
	}()
}

func (s *Shipper) arm(wake chan struct{}) core.Timer {
	now := s.Clock.UnixMilli()
	boundary := now - now%s.BucketMs + s.BucketMs
	return s.Clock.AfterFunc(time.Duration(boundary-now)*time.Millisecond, func() {
		select {
		case wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	})
}

// collect builds the frames of the bucket starting at start: one item per
// series with any activity in it, in name order, split into frames of at
// most ItemsPerFrame items; a frame with no items is a heartbeat.
func (s *Shipper) collect(start, now int64, series []Series) []*Frame {
	items := s.items[:0]
	for i, l := range s.rings(series) {
		r, w, ring := series[i], l.w, l.ring
		inflight := r.Concurrency()
		// Sealed before it is read: a writer adding to it after the read
		// counts a late write, and it is read again at the next Ship.
		w.Seal(start + s.BucketMs)
		lateWrites := w.LateWrites()
		if i := w.Index(start); i < len(ring.held) {
			// Read: the bucket the slot holds, start's or an older one, is
			// done with. A newer one is still to ship: in a late Ship, a
			// bucket another series still holds is shipped, or the service
			// took the slot for the current bucket as this one was read.
			at, held, _ := w.Slot(i)
			s.account(ring, i, held, at > start)
		}
		m, _ := snapshot(w, start)
		var late core.Metrics
		if lateWrites != ring.lateSeen {
			ring.lateSeen = lateWrites
			late = ring.late(w, func(at int64) {
				// A late pass took the slot for a bucket after it was read
				// empty: read now, it is done with.
				i := w.Index(at)
				if got, held, _ := w.Slot(i); got == at && i < len(ring.held) {
					s.account(ring, i, held, false)
				}
			})
		}
		ring.add(start, m)
		m.Add(late)
		ring.total.Pass += m.Pass
		ring.total.Block += m.Block
		ring.total.Complete += m.Complete
		ring.total.Error += m.Error
		ring.total.Slow += m.Slow
		if m.Pass == 0 && m.Block == 0 && m.Complete == 0 && inflight <= 0 {
			continue
		}
		m.Concurrency = inflight // wire v1: what was in flight when the bucket closed
		it := wire.NewBucketItem(l.name, start, m, true)
		if h, ok := r.(HotSeries); ok {
			it.Hot = h.Hot(start)
		}
		items = append(items, it)
	}
	per := max(s.ItemsPerFrame, 1)
	var frames []*Frame
	buf := items
	for {
		n := min(len(items), per)
		f, err := Encode(&wire.Buckets{Header: wire.Header{Ts: now, Instance: s.Instance}, BucketMs: s.BucketMs, Items: items[:n:n]})
		if err == nil {
			if n > 0 {
				// The backlog keeps the encoding alone (a frame is decoded
				// again only for a reader that lost messages), and the
				// items serve the next bucket.
				f.Msg = nil
			}
			frames = append(frames, f)
		}
		items = items[n:]
		if len(items) == 0 {
			clear(buf)
			s.items = buf[:0]
			return frames
		}
	}
}

func newSentRing(samples int) *sentRing {
	n := min(max(samples, 1), maxLateBuckets)
	return &sentRing{start: make([]int64, n), sent: make([]core.Metrics, n), held: make([]uint64, max(samples, 1))}
}

// add records what was sent of the bucket at start; buckets are added in
// the order they are shipped, so the oldest entry is the one replaced.
func (r *sentRing) add(start int64, m core.Metrics) {
	i := r.n % len(r.start)
	r.start[i], r.sent[i] = start, m
	r.n++
}

// statistic is how a Shipper reads a series' buckets: *core.MetricWindow.
type statistic interface {
	Lookup(start int64) (*core.MetricBucket, bool)
}

// snapshot returns the counts of w's bucket at start: false when w does not
// hold it, or when its slot was reset for a newer bucket while it was read.
// core.Window reuses a slot a whole window later: the first entry of the
// newer bucket resets it, and counts read across the reset may be the newer
// bucket's, still to be shipped; taking them for the older bucket's would
// count them twice. The slot's start is read again after the counts: the
// reset changes it before it clears a count.
func snapshot(w statistic, start int64) (core.Metrics, bool) {
	b, ok := w.Lookup(start)
	if !ok {
		return core.Metrics{}, false
	}
	m := b.Snapshot()
	if _, ok := w.Lookup(start); !ok {
		return core.Metrics{}, false
	}
	return m, true
}

// late reads the buckets sent before again and returns what was added to
// them since, remembering it as sent; read, when set, is told of each
// bucket it took counts from.
func (r *sentRing) late(w statistic, read func(start int64)) core.Metrics {
	var late core.Metrics
	for i := range min(r.n, len(r.start)) {
		k := (r.n - 1 - i) % len(r.start) // the newest first
		b, ok := w.Lookup(r.start[k])
		if !ok {
			continue // the slot was reused: a late count is in the newer bucket
		}
		was := &r.sent[k]
		if !b.Differs(was) {
			continue
		}
		now, ok := snapshot(w, r.start[k])
		if !ok {
			continue // reused as it was read: the same
		}
		d := now.Since(was)
		if d.Pass < 0 || d.Block < 0 || d.Complete < 0 {
			continue // reset under us for a newer bucket: nothing late
		}
		late.Add(d)
		*was = now
		if read != nil {
			read(r.start[k])
		}
	}
	return late
}
