package triage

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The traffic of every series, kept for the what-if replay of plans
// (plan.go): each bucket the series took, the spells during which a
// breaker of it was not CLOSED, and the process's restarts, varint-encoded
// in chunks. An app's series of a resource, one per instance, write their
// records one after another into the app's log of the resource (resLog,
// in appRes), each record naming its series by an index: the records of
// one message's items go to a few logs whose ends are in the caches,
// where a log per series would write each to a line of its own, missed at
// every bucket. A replay reads the log once for all the series it wants,
// stepping over the others' records: a log per app, not one per resource
// name that the fleet's apps share, so that a plan of one app's rule
// reads its app's traffic and not every app's. Every chunk of the
// engine is charged to one budget (Config.TraceBytes); when it is spent,
// the oldest chunk of the engine is dropped, so the longest-quiet history
// goes first and a replay covers less of the input (Trace says from
// when). About 20 bytes a bucket (traceBucket).

const (
	// DefaultTraceBytes is the budget of the traffic kept for replays.
	DefaultTraceBytes = 64 << 20
	// A log's first chunk holds about a dozen buckets; each next one is
	// twice the last, up to traceChunkBytes: a fleet of quiet resources
	// keeps little.
	traceFirstChunk = 256
	traceChunkBytes = 4096

	recBucket    = 1
	recSpellFrom = 2
	recSpellTo   = 3
	recRestart   = 4
	recHot       = 5
	// recHead is the most a record's head takes: its tag, its series'
	// index, its time, and the length of its body (two bytes, little
	// endian: a record is at most traceChunkBytes), by which a replay
	// steps over the records of the series it does not want.
	recHead = 1 + binary.MaxVarintLen32 + binary.MaxVarintLen64 + 2
)

// traceChunk is a part of one log; base is the time its
// deltas start from, seq the engine's count of chunks begun before it. The
// log's last chunk is written through the log's tail, and its b is brought
// up to date (sync) before it is read.
type traceChunk struct {
	log  *resLog
	seq  int64
	base int64
	b    []byte
}

// resLog is the kept traffic of one app's series of one resource.
type resLog struct {
	chunks []*traceChunk
	// tail is the last chunk's bytes, appended to here.
	tail []byte
	last int64 // the time the next record's delta starts from
	// series is how many series were given an index (series.logIdx), live
	// how many of them are not forgotten (ForgetTraffic): at none, the
	// whole log goes.
	series, live uint32
}

// sync brings the last chunk's bytes up to date with tail.
func (l *resLog) sync() {
	if n := len(l.chunks); n > 0 {
		l.chunks[n-1].b = l.tail
	}
}

// logTrimmed says the budget dropped records of s: a chunk at or after
// the one its first record went to is gone, or its traffic was forgotten
// (ForgetTraffic).
func (s *series) logTrimmed() bool {
	if s.logForgot {
		return true
	}
	if s.logIdx == 0 {
		return false
	}
	l := s.log
	return len(l.chunks) == 0 || l.chunks[0].seq > s.logSeq
}

// traces is the engine's budget and its chunks, oldest first.
type traces struct {
	max, used int64
	queue     []*traceChunk
	head      int
	seq       int64 // chunks begun
	dropped   int64 // chunks dropped for the budget
	// free are chunks evicted, by size class (traceFirstChunk << i), kept
	// for the next chunks of their size: at most freeChunks each, so that
	// a full log turning over allocates nothing.
	free [traceClasses][]*traceChunk
}

const (
	traceClasses = 5 // 256 B to 4 KiB
	freeChunks   = 8
)

// sizeClass is the class of a chunk of size bytes (a power of two from
// traceFirstChunk to traceChunkBytes).
func sizeClass(size int64) int {
	c := 0
	for int64(traceFirstChunk)<<c < size {
		c++
	}
	return c
}

// newChunk is a chunk of size for l from the free ones, or a new one.
func (t *traces) newChunk(l *resLog, base, size int64) *traceChunk {
	t.seq++
	k := sizeClass(size)
	if n := len(t.free[k]); n > 0 {
		c := t.free[k][n-1]
		t.free[k] = t.free[k][:n-1]
		c.log, c.seq, c.base, c.b = l, t.seq, base, c.b[:0]
		return c
	}
	return &traceChunk{log: l, seq: t.seq, base: base, b: make([]byte, 0, size)}
}

func (t *traces) init(max int64) {
	if max == 0 {
		max = DefaultTraceBytes
	}
	t.max = max
}

// record appends one record to s's log: tag, then the values, the first
// a time given as a delta.
func (e *Engine) traceRecord(s *series, tag byte, at int64, vals ...int64) {
	b, ok := e.traceHead(s, tag, at, binary.MaxVarintLen64*len(vals))
	if !ok {
		return
	}
	body := len(b)
	for _, v := range vals {
		b = binary.AppendUvarint(b, uint64(max(v, 0)))
	}
	s.log.done(b, body)
}

// done ends the record whose body began at body in b, the log's tail
// with the record appended: its length goes into the head's last two
// bytes.
func (l *resLog) done(b []byte, body int) {
	binary.LittleEndian.PutUint16(b[body-2:], uint16(len(b)-body))
	l.tail = b
}

// traceHead makes room in s's resource log for a record of at most body
// bytes after its head (at most traceChunkBytes in all), and writes the
// head: tag, s's index (given on its first record), at as a delta, and
// room for the body's length. It returns the log's tail to append the
// body to, then end (resLog.done); false when the budget has no room or
// the log is off.
func (e *Engine) traceHead(s *series, tag byte, at int64, body int) ([]byte, bool) {
	l := s.log
	if !e.traceRoom(l, at, recHead+body) {
		return nil, false
	}
	if s.logIdx == 0 {
		l.series++
		l.live++
		s.logIdx, s.logSeq = l.series, l.chunks[len(l.chunks)-1].seq
	}
	b := append(l.tail, tag)
	b = binary.AppendUvarint(b, uint64(s.logIdx))
	b = binary.AppendVarint(b, at-l.last)
	l.last = at
	return append(b, 0, 0), true
}

// traceRoom makes room in log l for a record of at most need bytes at at
// (need is at most traceChunkBytes): in its last chunk, or a new one
// (l.tail is then the new chunk's); false when the budget has no room or
// the log is off.
func (e *Engine) traceRoom(l *resLog, at int64, need int) bool {
	t := &e.traces
	if t.max < 0 {
		return false
	}
	if len(l.chunks) > 0 && len(l.tail)+need <= cap(l.tail) {
		return true
	}
	size := int64(traceFirstChunk)
	if len(l.chunks) > 0 {
		size = min(int64(cap(l.tail))*2, traceChunkBytes)
		l.sync()
	}
	for size < int64(need) && size < traceChunkBytes {
		size *= 2
	}
	for t.used+size > t.max && t.head < len(t.queue) {
		t.evict()
	}
	if t.used+size > t.max {
		return false
	}
	c := t.newChunk(l, at, size)
	l.chunks = append(l.chunks, c)
	l.tail = c.b
	l.last = at
	t.used += size
	t.queue = append(t.queue, c)
	return true
}

// traceHot logs the hot values of bucket b of series s (wire "hot": at
// most wire.MaxHotValues values of at most wire.MaxHotValueBytes, and the
// sum of the rest): the bucket's start and length, then each value's
// parameter, pass, block and text.
func (e *Engine) traceHot(s *series, b *BucketStat, bm int64) {
	hot := b.Hot[:min(len(b.Hot), wire.MaxHotValues+1)]
	body := 2 * binary.MaxVarintLen64
	for i := range hot {
		body += 4*binary.MaxVarintLen64 + min(len(hot[i].Value), wire.MaxHotValueBytes)
	}
	out, ok := e.traceHead(s, recHot, b.Start, body)
	if !ok {
		return
	}
	at := len(out)
	out = binary.AppendUvarint(out, uint64(max(bm, 0)))
	out = binary.AppendUvarint(out, uint64(len(hot)))
	for i := range hot {
		h := &hot[i]
		v := h.Value[:min(len(h.Value), wire.MaxHotValueBytes)]
		out = binary.AppendUvarint(out, uint64(max(h.Param, 0)))
		out = binary.AppendUvarint(out, uint64(max(h.Pass, 0)))
		out = binary.AppendUvarint(out, uint64(max(h.Block, 0)))
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	s.log.done(out, at)
}

// evict drops the engine's oldest chunk, the oldest of its log's.
func (t *traces) evict() {
	c := t.queue[t.head]
	t.queue[t.head] = nil
	t.head++
	if t.head > len(t.queue)/2 && t.head > 64 {
		t.queue = append(t.queue[:0], t.queue[t.head:]...)
		t.head = 0
	}
	if c.log == nil {
		return // its log went whole (ForgetTraffic)
	}
	if l := c.log; len(l.chunks) > 0 && l.chunks[0] == c {
		// Moved down rather than resliced, so that the list does not
		// creep through new arrays as it turns over.
		n := copy(l.chunks, l.chunks[1:])
		l.chunks[n] = nil
		l.chunks = l.chunks[:n]
		if n == 0 {
			l.tail = nil // it was the last chunk too: written no more
		}
	}
	t.used -= int64(cap(c.b))
	t.dropped++
	if k := sizeClass(int64(cap(c.b))); len(t.free[k]) < freeChunks {
		c.log = nil
		t.free[k] = append(t.free[k], c)
	}
}

// TraceBytes is how many bytes the traffic kept for replays holds.
func (e *Engine) TraceBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.traces.used
}

// A bucket record's body is its flags, then its pass, complete and
// rtMin, then each value a flag says it has, in this order: its length,
// block, error, slow, rtMax, the slow bound, and its histogram (the mask
// of the slots with a count, then those counts). A value left out is the
// usual one: core.ResourceBucketMs for the length, rtMin for rtMax, 0 for
// the others, no histogram. A fleet's buckets then take a sixth less
// room than with every value written: BenchmarkIngestFleet allocates 411
// bytes per 20 buckets, the log's chunks, against 492 (docs/BENCHMARKS.md).
const (
	bucketMs    = 1 << iota // its length is not core.ResourceBucketMs
	bucketBlock             // block is not 0
	bucketError             // error is not 0
	bucketSlow              // slow is not 0
	bucketRtMax             // rtMax is not rtMin
	bucketBound             // the slow bound is not 0
	bucketHist              // it has a histogram
)

// traceBucket logs the bucket e.taken of series s. Negative values are
// logged as 0.
func (e *Engine) traceBucket(s *series, b *BucketStat, bm int64) {
	var v [10 + core.HistogramSlots]int64
	v[1], v[2], v[3] = max(b.Pass, 0), max(b.Complete, 0), max(b.RtMin, 0)
	n, flags := 4, int64(0)
	if bm = max(bm, 0); bm != core.ResourceBucketMs {
		v[n], n, flags = bm, n+1, flags|bucketMs
	}
	if b.Block > 0 {
		v[n], n, flags = b.Block, n+1, flags|bucketBlock
	}
	if b.Error > 0 {
		v[n], n, flags = b.Error, n+1, flags|bucketError
	}
	if b.Slow > 0 {
		v[n], n, flags = b.Slow, n+1, flags|bucketSlow
	}
	if rtMax := max(b.RtMax, 0); rtMax != v[3] {
		v[n], n, flags = rtMax, n+1, flags|bucketRtMax
	}
	if s.slowBound > 0 {
		v[n], n, flags = int64(s.slowBound), n+1, flags|bucketBound
	}
	if b.HasHist {
		flags |= bucketHist
		v[n] = int64(b.counted)
		n++
		for m := b.counted; m != 0; m &= m - 1 {
			v[n] = max(b.Hist[bits.TrailingZeros16(m)], 0)
			n++
		}
	}
	v[0] = flags
	e.traceRecord(s, recBucket, b.Start, v[:n]...)
}

// slowBoundOf is the smallest maxAllowedRtMs of the slow-ratio breakers
// among rules (what a bucket's slow counts against), 0 with none.
func slowBoundOf(rr *resRules) int32 {
	var bound int32
	if rr == nil {
		return 0
	}
	for _, b := range rr.Breakers {
		ms := int32(min(b.MaxAllowedRtMs, math.MaxInt32))
		if b.Strategy == core.SlowRequestRatio && (bound == 0 || ms < bound) {
			bound = ms
		}
	}
	return bound
}

// trace decodes s's records into a replay's trace; from is the earliest
// time it covers (its first record kept).
func (s *series) trace() (tr whatif.Trace, from int64) {
	d := decodeLogs([]*series{s}, nil)
	return d[0].tr, d[0].from
}

// hotKey names one parameter value of a series.
type hotKey struct {
	param int64
	value string
}

// paramTrace decodes s's records into the replay trace of one parameter
// value: its entries of every bucket that listed hot values, the spells
// and the restarts; from as trace's.
func (s *series) paramTrace(param int64, value string) (tr whatif.ParamTrace, from int64) {
	d := decodeLogs([]*series{s}, &hotKey{param, value})
	return d[0].paramTrace(value), d[0].from
}

// paramTracesOf is paramTrace of each of ss, each log read once.
func paramTracesOf(ss []*series, param int64, value string) []whatif.ParamTrace {
	d := decodeLogs(ss, &hotKey{param, value})
	out := make([]whatif.ParamTrace, len(d))
	for i := range d {
		out[i] = d[i].paramTrace(value)
	}
	return out
}

// paramTrace is the decoded series' trace of one parameter value.
func (d *logDecode) paramTrace(value string) whatif.ParamTrace {
	return whatif.ParamTrace{Instance: d.tr.Instance, Value: value, Buckets: d.hot, Spells: d.tr.Spells, Restarts: d.tr.Restarts}
}

// tracesOf decodes the records of each of ss (a rule's instances' series of
// its resource), reading each log once: their traces, and
// from, the earliest time each covers.
func tracesOf(ss []*series) (trs []whatif.Trace, from []int64) {
	d := decodeLogs(ss, nil)
	trs, from = make([]whatif.Trace, len(d)), make([]int64, len(d))
	for i := range d {
		trs[i], from[i] = d[i].tr, d[i].from
	}
	return trs, from
}

// logDecode is one series' records, as its log is read.
type logDecode struct {
	tr        whatif.Trace
	hot       []whatif.ParamBucket // with a hotKey: its entries
	from      int64                // the time of its first record kept
	seen      bool                 // a record of it was read
	spellFrom int64                // a spell begun, -1 outside one
	spelled   bool                 // a spell began or ended
	trimmed   bool                 // records of it were dropped (logTrimmed)
}

// decodeLogs decodes the records of each of ss: its buckets, spells and
// restarts, and with want that value's entries of the buckets that
// listed hot values. Each log is read once.
func decodeLogs(ss []*series, want *hotKey) []logDecode {
	out := make([]logDecode, len(ss))
	byLog := map[*resLog][]int{}
	for i, s := range ss {
		out[i] = logDecode{tr: whatif.Trace{Instance: s.inst.id.Name}, spellFrom: -1, trimmed: s.logTrimmed()}
		if s.logIdx != 0 {
			byLog[s.log] = append(byLog[s.log], i)
		}
	}
	for l, idx := range byLog {
		// A series' position in out by its index in the log; a series
		// asked for twice is read once and copied.
		at := make([]int32, l.series+1)
		for k := range at {
			at[k] = -1
		}
		var twice [][2]int
		for _, i := range idx {
			if j := at[ss[i].logIdx]; j >= 0 {
				twice = append(twice, [2]int{i, int(j)})
				continue
			}
			at[ss[i].logIdx] = int32(i)
		}
		if len(idx) > 8 {
			// Counted first, so that each trace's buckets are made once:
			// many traces growing by doubling cost twice the time.
			counts := make([]int, len(at))
			l.each(func(idx uint64, tag byte, _ int64, _ []byte) {
				if tag == recBucket && idx < uint64(len(at)) {
					counts[idx]++
				}
			})
			for k, i := range at {
				if i >= 0 && counts[k] > 0 {
					out[i].tr.Buckets = make([]whatif.Bucket, 0, counts[k])
				}
			}
		}
		l.each(func(idx uint64, tag byte, t int64, body []byte) {
			if idx >= uint64(len(at)) || at[idx] < 0 {
				return // another series'
			}
			d := &out[at[idx]]
			if !d.seen {
				d.from, d.seen = t, true
			}
			d.take(tag, t, body, want)
		})
		for _, i := range at {
			if i >= 0 && out[i].spellFrom >= 0 { // still open
				out[i].tr.Spells = append(out[i].tr.Spells, whatif.Span{From: out[i].spellFrom, To: 1<<62 - 1})
			}
		}
		// Copied once whole: the two share their slices, as they would
		// their contents.
		for _, p := range twice {
			out[p[0]] = out[p[1]]
		}
	}
	return out
}

// each calls f with each of l's records, in order: its series' index,
// its tag, its time and its body. A head that does not decode ends the
// read: what follows it cannot be told apart. A record is stepped over by
// its length, its body read only by f.
func (l *resLog) each(f func(idx uint64, tag byte, t int64, body []byte)) {
	l.sync()
	for _, c := range l.chunks {
		t, b := c.base, c.b
		for len(b) > 0 {
			tag := b[0]
			idx, n := binary.Uvarint(b[1:])
			if n <= 0 {
				return
			}
			b = b[1+n:]
			dt, n := binary.Varint(b)
			if n <= 0 || len(b) < n+2 {
				return
			}
			t += dt
			size := int(binary.LittleEndian.Uint16(b[n:]))
			b = b[n+2:]
			if size > len(b) {
				return
			}
			f(idx, tag, t, b[:size])
			b = b[size:]
		}
	}
}

// take decodes one record of the series, of tag at t, its body body.
func (d *logDecode) take(tag byte, t int64, body []byte, want *hotKey) {
	read := func() int64 {
		v, n := binary.Uvarint(body)
		if n <= 0 {
			body = nil
			return 0
		}
		body = body[n:]
		return int64(v)
	}
	switch tag {
	case recBucket:
		x := whatif.Bucket{Start: t, Ms: core.ResourceBucketMs}
		flags := read()
		x.Pass, x.Complete, x.RtMin = read(), read(), read()
		x.RtMax = x.RtMin
		// In traceBucket's order.
		if flags&bucketMs != 0 {
			x.Ms = read()
		}
		if flags&bucketBlock != 0 {
			x.Block = read()
		}
		if flags&bucketError != 0 {
			x.Error = read()
		}
		if flags&bucketSlow != 0 {
			x.Slow = read()
		}
		if flags&bucketRtMax != 0 {
			x.RtMax = read()
		}
		if flags&bucketBound != 0 {
			x.SlowBoundMs = read()
		}
		if flags&bucketHist != 0 {
			x.HasHist = true
			mask := read()
			for i := range x.Hist {
				if mask&(1<<i) != 0 {
					x.Hist[i] = read()
				}
			}
		}
		d.tr.Buckets = append(d.tr.Buckets, x)
	case recHot:
		if want == nil {
			return
		}
		x := whatif.ParamBucket{Start: t, Ms: read()}
		for k := read(); k > 0 && body != nil; k-- {
			param, pass, block, size := read(), read(), read(), read()
			if size > int64(len(body)) {
				break
			}
			v := body[:size]
			body = body[size:]
			if param == want.param && string(v) == want.value {
				x.Pass, x.Block, x.Listed = pass, block, true
			}
		}
		d.hot = append(d.hot, x)
	case recSpellFrom:
		if d.spellFrom < 0 {
			d.spellFrom = t
		}
		d.spelled = true
	case recSpellTo:
		switch {
		case d.spellFrom >= 0:
			d.tr.Spells = append(d.tr.Spells, whatif.Span{From: d.spellFrom, To: t})
		case !d.spelled && d.trimmed:
			d.tr.Spells = append(d.tr.Spells, whatif.Span{From: d.from, To: t}) // began before what is kept
		}
		d.spellFrom, d.spelled = -1, true
	case recRestart:
		// A new process's breakers begin CLOSED.
		if d.spellFrom >= 0 {
			d.tr.Spells = append(d.tr.Spells, whatif.Span{From: d.spellFrom, To: t})
			d.spellFrom = -1
		}
		d.tr.Restarts = append(d.tr.Restarts, t)
	}
}

// ForgetTraffic forgets the traffic kept of the processes gone before
// cutoff (the store forgot them: they left longer ago than its
// retention), the earlier processes of a name among them: their plans can
// no longer be replayed. Their records stay in their logs, read by no
// one, until the budget drops the chunks they are in (the oldest first,
// as they are); a log whose every series is forgotten goes at once, its
// bytes back to the budget.
func (e *Engine) ForgetTraffic(cutoff int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, in := range e.instList {
		if !in.id.Gone || in.id.LeftAt >= cutoff {
			continue
		}
		for _, s := range in.seriesList {
			if s.logIdx == 0 {
				continue
			}
			s.logIdx, s.logForgot = 0, true
			l := s.log
			if l.live--; l.live == 0 {
				e.traces.drop(l)
			}
		}
	}
}

// drop gives back the chunks of a log no series reads any more: the
// queue skips them when their turn comes.
func (t *traces) drop(l *resLog) {
	for _, c := range l.chunks {
		t.used -= int64(cap(c.b))
		c.b, c.log = nil, nil
	}
	*l = resLog{}
}
