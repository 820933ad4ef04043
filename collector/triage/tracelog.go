package triage

import (
	"encoding/binary"
	"math"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The traffic of every series, kept for the what-if replay of plans
// (plan.go): each bucket the series took, the spells during which a
// breaker of it was not CLOSED, and the process's restarts, varint-encoded
// in chunks. Every chunk of the engine is charged to one budget
// (Config.TraceBytes); when it is spent, the oldest chunk of the engine is
// dropped, so the longest-quiet history goes first and a replay covers
// less of the input (Trace says from when). About 20 bytes a bucket.

const (
	// DefaultTraceBytes is the budget of the traffic kept for replays.
	DefaultTraceBytes = 64 << 20
	// A series' first chunk holds about a dozen buckets; each next one is
	// twice the last, up to traceChunkBytes: a fleet of quiet series
	// keeps little.
	traceFirstChunk = 256
	traceChunkBytes = 4096

	recBucket     = 1
	recSpellFrom  = 2
	recSpellTo    = 3
	recRestart    = 4
	recHot        = 5
	histMaskShift = core.HistogramSlots // bit: the bucket has a histogram
)

// traceChunk is a part of one series' log; base is the time its deltas
// start from. The series' last chunk is written through the series'
// traceLog.tail, and its b is brought up to date (sync) before it is read.
type traceChunk struct {
	s    *series
	base int64
	b    []byte
}

// traceLog is a series' kept traffic.
type traceLog struct {
	chunks []*traceChunk
	// tail is the last chunk's bytes, appended to here: a bucket's record
	// is written without reading the list or the chunk, which a fleet's
	// series keep out of the caches between two of its buckets.
	tail []byte
	last int64 // the time the next record's delta starts from
}

// sync brings the last chunk's bytes up to date with tail.
func (l *traceLog) sync() {
	if n := len(l.chunks); n > 0 {
		l.chunks[n-1].b = l.tail
	}
}

// traces is the engine's budget and its chunks, oldest first.
type traces struct {
	max, used int64
	queue     []*traceChunk
	head      int
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

// newChunk is a chunk of size for s from the free ones, or a new one.
func (t *traces) newChunk(s *series, base, size int64) *traceChunk {
	k := sizeClass(size)
	if n := len(t.free[k]); n > 0 {
		c := t.free[k][n-1]
		t.free[k] = t.free[k][:n-1]
		c.s, c.base, c.b = s, base, c.b[:0]
		return c
	}
	return &traceChunk{s: s, base: base, b: make([]byte, 0, size)}
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
	if !e.traceRoom(s, at, binary.MaxVarintLen64*(len(vals)+2)) {
		return
	}
	b := append(s.log.tail, tag)
	b = binary.AppendVarint(b, at-s.log.last)
	s.log.last = at
	for _, v := range vals {
		b = binary.AppendUvarint(b, uint64(max(v, 0)))
	}
	s.log.tail = b
}

// traceRoom makes room in s's log for a record of at most need bytes at
// at (need is at most traceChunkBytes): in its last chunk, or a new one
// (s.log.tail is then the new chunk's); false when the budget has no room
// or the log is off.
func (e *Engine) traceRoom(s *series, at int64, need int) bool {
	t := &e.traces
	if t.max < 0 {
		return false
	}
	l := &s.log
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
	c := t.newChunk(s, at, size)
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
	need := 4 * binary.MaxVarintLen64
	for i := range hot {
		need += 4*binary.MaxVarintLen64 + min(len(hot[i].Value), wire.MaxHotValueBytes)
	}
	if !e.traceRoom(s, b.Start, need) {
		return
	}
	out := append(s.log.tail, recHot)
	out = binary.AppendVarint(out, b.Start-s.log.last)
	s.log.last = b.Start
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
	s.log.tail = out
}

// evict drops the engine's oldest chunk, the oldest of its series.
func (t *traces) evict() {
	c := t.queue[t.head]
	t.queue[t.head] = nil
	t.head++
	if t.head > len(t.queue)/2 && t.head > 64 {
		t.queue = append(t.queue[:0], t.queue[t.head:]...)
		t.head = 0
	}
	if c.s == nil {
		return // forgotten already (ForgetTraffic)
	}
	l := &c.s.log
	if len(l.chunks) > 0 && l.chunks[0] == c {
		// Moved down rather than resliced, so that the series' list does
		// not creep through new arrays as it turns over.
		n := copy(l.chunks, l.chunks[1:])
		l.chunks[n] = nil
		l.chunks = l.chunks[:n]
		if n == 0 {
			l.tail = nil // it was the last chunk too: written no more
		}
		c.s.logTrimmed = true
	}
	t.used -= int64(cap(c.b))
	t.dropped++
	if k := sizeClass(int64(cap(c.b))); len(t.free[k]) < freeChunks {
		c.s = nil
		t.free[k] = append(t.free[k], c)
	}
}

// TraceBytes is how many bytes the traffic kept for replays holds.
func (e *Engine) TraceBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.traces.used
}

// traceBucket logs the bucket e.taken of series s.
func (e *Engine) traceBucket(s *series, b *BucketStat, bm int64) {
	var mask int64
	if b.HasHist {
		mask = 1 << histMaskShift
		for i, c := range b.Hist {
			if c > 0 {
				mask |= 1 << i
			}
		}
	}
	var v [9 + core.HistogramSlots]int64
	v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7] = bm, b.Pass, b.Block, b.Complete, b.Error, b.Slow, b.RtMin, b.RtMax
	v[8] = int64(s.slowBound)
	n := 9
	v[n] = mask
	n++
	if b.HasHist {
		for _, c := range b.Hist {
			if c > 0 {
				v[n] = c
				n++
			}
		}
	}
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

// trace decodes s's log into a replay's trace; from is the earliest
// time it covers (the first record kept).
func (s *series) trace() (tr whatif.Trace, from int64) {
	tr, _, from = s.decodeLog(nil)
	return tr, from
}

// hotKey names one parameter value of a series.
type hotKey struct {
	param int64
	value string
}

// paramTrace decodes s's log into the replay trace of one parameter
// value: its entries of every bucket that listed hot values, the spells
// and the restarts; from as trace's.
func (s *series) paramTrace(param int64, value string) (tr whatif.ParamTrace, from int64) {
	bt, hot, from := s.decodeLog(&hotKey{param, value})
	return whatif.ParamTrace{Instance: bt.Instance, Value: value, Buckets: hot, Spells: bt.Spells, Restarts: bt.Restarts}, from
}

// decodeLog decodes s's log: its buckets, spells and restarts, and with
// want that value's entries of the buckets that listed hot values.
func (s *series) decodeLog(want *hotKey) (tr whatif.Trace, hot []whatif.ParamBucket, from int64) {
	tr.Instance = s.inst.id.Name
	var spellFrom int64 = -1
	first, spelled := true, false
	s.log.sync()
	for _, c := range s.log.chunks {
		at, b := c.base, c.b
		for len(b) > 0 {
			tag := b[0]
			d, n := binary.Varint(b[1:])
			if n <= 0 {
				return tr, hot, from
			}
			b = b[1+n:]
			at += d
			if first {
				from, first = at, false
			}
			read := func() int64 {
				v, n := binary.Uvarint(b)
				if n <= 0 {
					b = nil
					return 0
				}
				b = b[n:]
				return int64(v)
			}
			switch tag {
			case recBucket:
				x := whatif.Bucket{Start: at}
				x.Ms, x.Pass, x.Block, x.Complete, x.Error, x.Slow, x.RtMin, x.RtMax = read(), read(), read(), read(), read(), read(), read(), read()
				x.SlowBoundMs = read()
				mask := read()
				x.HasHist = mask&(1<<histMaskShift) != 0
				for i := range x.Hist {
					if mask&(1<<i) != 0 {
						x.Hist[i] = read()
					}
				}
				tr.Buckets = append(tr.Buckets, x)
			case recHot:
				x := whatif.ParamBucket{Start: at, Ms: read()}
				for k := read(); k > 0 && b != nil; k-- {
					param, pass, block, size := read(), read(), read(), read()
					if size > int64(len(b)) {
						return tr, hot, from
					}
					v := b[:size]
					b = b[size:]
					if want != nil && param == want.param && string(v) == want.value {
						x.Pass, x.Block, x.Listed = pass, block, true
					}
				}
				if want != nil {
					hot = append(hot, x)
				}
			case recSpellFrom:
				if spellFrom < 0 {
					spellFrom = at
				}
				spelled = true
			case recSpellTo:
				switch {
				case spellFrom >= 0:
					tr.Spells = append(tr.Spells, whatif.Span{From: spellFrom, To: at})
				case !spelled && s.logTrimmed:
					tr.Spells = append(tr.Spells, whatif.Span{From: from, To: at}) // began before what is kept
				}
				spellFrom, spelled = -1, true
			case recRestart:
				// A new process's breakers begin CLOSED.
				if spellFrom >= 0 {
					tr.Spells = append(tr.Spells, whatif.Span{From: spellFrom, To: at})
					spellFrom = -1
				}
				tr.Restarts = append(tr.Restarts, at)
			}
		}
	}
	if spellFrom >= 0 {
		tr.Spells = append(tr.Spells, whatif.Span{From: spellFrom, To: 1<<62 - 1})
	}
	return tr, hot, from
}

// ForgetTraffic drops the traffic kept of the processes gone before
// cutoff (the store forgot them: they left longer ago than its
// retention), the earlier processes of a name among them: their plans can
// no longer be replayed, and their bytes go back to the budget.
func (e *Engine) ForgetTraffic(cutoff int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := &e.traces
	for _, in := range e.instList {
		if !in.id.Gone || in.id.LeftAt >= cutoff {
			continue
		}
		for _, s := range in.seriesList {
			if len(s.log.chunks) == 0 {
				continue
			}
			for _, c := range s.log.chunks {
				t.used -= int64(cap(c.b))
				c.b, c.s = nil, nil // the queue skips it when its turn comes
			}
			s.log, s.logTrimmed = traceLog{}, true
		}
	}
}
