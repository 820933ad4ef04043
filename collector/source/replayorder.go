package source

import (
	"cmp"
	"container/heap"
	"math"
	"unsafe"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// A replay feeds its messages in the order of their time, whatever the
// order of the lines. A recording is written as messages arrive (wire v1
// calls a fixture "ordered by ts", and a recording made by --record is
// not): a target that connects sends its hello and rules, then the last
// 60 s of buckets it still holds, older than the hello. Fed in the order of
// the lines, at speed 1, nothing would show until the hello's time.
//
// So each pass goes through a reorder stage: it reads ahead only as far as
// a line might still come earlier (the first pass noted, per block of
// lines, the earliest time of the lines from there to the end), and hands
// out the earliest message held. Two rules keep identity with the data:
//
//   - a message never passes the hello or rules of its own instance that
//     came before it in the input: they are fed first (at the message's
//     time, the clock unmoved), so backfill is the instance's, under its
//     rules, from the first second;
//   - an instance whose first line is not a hello (a file sorted by time
//     puts a backfill, even the rules, before it) is fed a copy of its
//     first hello, and of its rules, before anything else of it: the first
//     pass kept them (at most ReplayOptions.MaxEarlyHellos instances,
//     within ReplayOptions.MaxReorderBytes); the hello's and rules' own
//     lines are skipped when the pass meets them.
//
// What the stage holds is bounded (ReplayOptions.MaxReorderBytes): past
// it, the earliest message goes out even though a later line may be
// earlier; such a line is fed late, counted, and shown as a warning.

// replayBlockShift sets the block of lines (1,024) whose earliest time the
// first pass notes.
const replayBlockShift = 10

// DefaultMaxEarlyHellos is ReplayOptions.MaxEarlyHellos when it is zero.
const DefaultMaxEarlyHellos = 4096

// maxScanNames bounds the instance names the first pass follows to find
// lines before a hello; names past it are not followed: their lines before
// a hello, if any, are fed without it and not counted (ten times the
// store's default --max-instances, which turns most of them away).
const maxScanNames = 100_000

// DefaultMaxReorderBytes is ReplayOptions.MaxReorderBytes when it is zero.
const DefaultMaxReorderBytes = 64 << 20

// earlyHello is the first hello of an instance some of whose lines come
// before it in the input, and its rules: the first rules of the instance
// before the hello, or else the line after it when that is a rules (nil
// otherwise); seqs are their line numbers in a pass.
type earlyHello struct {
	hello    replayItem
	helloSeq int
	rules    *replayItem
	rulesSeq int
}

// scanOrder is what the first pass learns of the input's order.
type scanOrder struct {
	blockMin []int64          // per block, then (suffixMin) from it to the end
	state    map[string]uint8 // per instance: scanAwait, scanRules, scanDone
	early    map[string]*earlyHello
	before   map[string]int64 // lines of an instance awaiting its hello
	// unnamed counts lines fed before their instance's hello without it
	// (past MaxEarlyHellos), of unnamedInst instances; unnamedAt is the
	// time of the first.
	unnamed, unnamedInst int64
	unnamedAt            int64
	firstAt              map[string]int64
	// maxEarly and maxBytes bound the early hellos kept, in instances and
	// in bytes (with their rules); earlyBytes is what they take.
	maxEarly             int
	maxBytes, earlyBytes int64
}

const (
	scanAwait uint8 = iota + 1 // lines seen, no hello yet
	scanRules                  // its early hello kept, its rules awaited
	scanDone
)

func newScanOrder(opts ReplayOptions) *scanOrder {
	return &scanOrder{state: map[string]uint8{}, early: map[string]*earlyHello{}, before: map[string]int64{}, firstAt: map[string]int64{},
		maxEarly: cmp.Or(opts.MaxEarlyHellos, DefaultMaxEarlyHellos), maxBytes: cmp.Or(opts.MaxReorderBytes, DefaultMaxReorderBytes)}
}

// keep reports whether one more early hello, or rules of size bytes, fit
// the bounds, and charges them when they do.
func (s *scanOrder) keep(entry bool, size int64) bool {
	if (entry && len(s.early) >= s.maxEarly) || s.earlyBytes+size > s.maxBytes {
		return false
	}
	s.earlyBytes += size
	return true
}

// note takes line seq of the first pass.
func (s *scanOrder) note(seq int, it replayItem) {
	b := seq >> replayBlockShift
	for len(s.blockMin) <= b {
		s.blockMin = append(s.blockMin, math.MaxInt64)
	}
	if it.err != nil {
		return
	}
	if _, ok := it.m.(*wire.Meta); ok {
		return
	}
	h := it.m.Head()
	s.blockMin[b] = min(s.blockMin[b], h.Ts)
	name := h.Instance
	st, known := s.state[name]
	_, isHello := it.m.(*wire.Hello)
	switch {
	case !known:
		if len(s.state) >= maxScanNames {
			return
		}
		if isHello {
			s.state[name] = scanDone
			return
		}
		s.state[name], s.firstAt[name] = scanAwait, h.Ts
		s.awaiting(name, seq, it)
	case st == scanAwait && isHello:
		n, at := s.before[name], s.firstAt[name]
		delete(s.before, name)
		delete(s.firstAt, name)
		e := s.early[name] // its rules may be kept already
		if e == nil && !s.keep(true, messageBytes(it.m)) {
			if s.unnamed == 0 {
				s.unnamedAt = at
			}
			s.unnamed += n
			s.unnamedInst++
			s.state[name] = scanDone
			return
		}
		if e == nil {
			e = &earlyHello{}
			s.early[name] = e
		}
		e.hello, e.helloSeq = it, seq
		s.state[name] = scanRules
		if e.rules != nil {
			s.state[name] = scanDone
		}
	case st == scanAwait:
		s.awaiting(name, seq, it)
	case st == scanRules:
		if r, ok := it.m.(*wire.Rules); ok && s.keep(false, messageBytes(r)) {
			e := s.early[name]
			e.rules, e.rulesSeq = &replayItem{m: r, place: it.place}, seq
		}
		s.state[name] = scanDone
	}
}

// awaiting takes line seq of an instance whose hello has not come yet:
// counted, and its first rules kept (a file sorted by time may put the
// rules sent after a hello before it, when the hello came later).
func (s *scanOrder) awaiting(name string, seq int, it replayItem) {
	s.before[name]++
	if r, ok := it.m.(*wire.Rules); ok && s.early[name] == nil && s.keep(true, messageBytes(r)) {
		s.early[name] = &earlyHello{rules: &replayItem{m: r, place: it.place}, rulesSeq: seq}
	}
}

// finish turns the blocks' earliest times into the earliest from each
// block to the end, and forgets what only the first pass needed.
func (s *scanOrder) finish() {
	for b := len(s.blockMin) - 2; b >= 0; b-- {
		s.blockMin[b] = min(s.blockMin[b], s.blockMin[b+1])
	}
	s.state, s.before, s.firstAt = nil, nil, nil
	for name, e := range s.early {
		if e.hello.m == nil {
			delete(s.early, name) // rules, and no hello ever
		}
	}
}

// lowest is the earliest time of the lines from seq on (math.MaxInt64:
// none).
func (s *scanOrder) lowest(seq int) int64 {
	if b := seq >> replayBlockShift; b < len(s.blockMin) {
		return s.blockMin[b]
	}
	return math.MaxInt64
}

// heldItem is a message the reorder stage holds: its line seq, its time
// (a meta line's is the lowest, so it goes first), and its size.
type heldItem struct {
	it   replayItem
	seq  int
	ts   int64
	size int64
	fed  bool // fed ahead of its place (a hello or rules moved first)
	out  bool // handed out in its place
}

type heldHeap []*heldItem

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if h[i].ts != h[j].ts {
		return h[i].ts < h[j].ts
	}
	return h[i].seq < h[j].seq
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(*heldItem)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// reorder is one pass's reorder stage.
type reorder struct {
	raw    replayPass
	scan   *scanOrder
	max    int64
	n      int // lines read
	eof    bool
	held   heldHeap
	bytes  int64
	ids    map[string][]*heldItem // the hellos and rules held, by instance, in line order
	skip   map[int]bool           // lines fed ahead (early hellos and their rules)
	early  map[string]bool        // instances whose early hello was fed
	lastTs int64                  // the latest time handed out
	late   int64                  // messages handed out after a later one
	lateAt int64                  // the time of the first
	seq    int                    // the line of the message handed out last
}

func newReorder(raw replayPass, scan *scanOrder, maxBytes int64) *reorder {
	return &reorder{raw: raw, scan: scan, max: maxBytes, ids: map[string][]*heldItem{}, skip: map[int]bool{}, early: map[string]bool{}, lastTs: math.MinInt64}
}

// next hands out the earliest message held once no line still to read can
// be earlier (or the stage holds its bound), and a bad line as soon as it
// is read; ok is false at the end.
func (o *reorder) next() (replayItem, bool, error) {
	for {
		if len(o.held) > 0 {
			top := o.held[0]
			if o.eof || top.ts <= o.scan.lowest(o.n) || o.bytes > o.max {
				heap.Pop(&o.held)
				if top.fed {
					continue
				}
				o.bytes -= top.size
				top.out = true
				if _, meta := top.it.m.(*wire.Meta); !meta {
					if top.ts < o.lastTs {
						if o.late == 0 {
							o.lateAt = top.ts
						}
						o.late++
					}
					o.lastTs = max(o.lastTs, top.ts)
				}
				o.seq = top.seq
				return top.it, true, nil
			}
		}
		if o.eof {
			return replayItem{}, false, nil
		}
		it, ok, err := o.raw()
		if err != nil {
			return it, false, err
		}
		if !ok {
			o.eof = true
			continue
		}
		seq := o.n
		o.n++
		if it.err != nil {
			return it, true, nil
		}
		if o.skip[seq] {
			delete(o.skip, seq)
			continue
		}
		h := &heldItem{it: it, seq: seq, ts: math.MinInt64, size: messageBytes(it.m)}
		if _, meta := it.m.(*wire.Meta); !meta {
			h.ts = it.m.Head().Ts
		}
		switch it.m.(type) {
		case *wire.Hello, *wire.Rules:
			name := it.m.Head().Instance
			o.ids[name] = append(o.ids[name], h)
		}
		heap.Push(&o.held, h)
		o.bytes += h.size
	}
}

// ahead returns what must be fed before it, the message handed out last:
// the hellos and rules of its instance held from earlier lines, or the
// early hello (and rules) of an instance whose lines come before its
// hello. Each is fed once.
func (o *reorder) ahead(it replayItem) []replayItem {
	if it.m == nil {
		return nil
	}
	if _, meta := it.m.(*wire.Meta); meta {
		return nil
	}
	name := it.m.Head().Instance
	var out []replayItem
	if e := o.scan.early[name]; e != nil && !o.early[name] {
		// The first of an instance whose first line is not its hello: the
		// hello goes first, then its rules (which may come before it).
		o.early[name] = true
		if o.seq == e.helloSeq {
			// The hello itself: what came before it in the input (its rules)
			// follows it, fed in its place or ahead of a later line.
			return nil
		}
		out = append(out, e.hello)
		o.drop(name, e.helloSeq)
		if e.rules != nil && e.rulesSeq > o.seq {
			out = append(out, *e.rules)
			o.drop(name, e.rulesSeq)
		}
	}
	// The list is in line order, and every message handed out comes here:
	// what is before it in the list is fed now or was already, so the
	// list is trimmed from its front, each entry looked at once (a hello
	// or rules handed out in its place trims itself).
	list := o.ids[name]
	for len(list) > 0 && list[0].seq <= o.seq {
		h := list[0]
		list[0] = nil
		list = list[1:]
		if h.seq < o.seq && !h.fed && !h.out {
			h.fed = true
			o.bytes -= h.size
			out = append(out, h.it)
		}
	}
	if len(list) == 0 {
		delete(o.ids, name)
	} else {
		o.ids[name] = list
	}
	return out
}

// drop makes line seq of instance name skipped: marked fed when it is held
// already, passed over when it is read.
func (o *reorder) drop(name string, seq int) {
	if seq < o.n {
		for _, h := range o.ids[name] {
			if h.seq == seq && !h.fed {
				h.fed = true
				o.bytes -= h.size
			}
		}
		return
	}
	o.skip[seq] = true
}

// messageBytes estimates the memory a message held takes.
func messageBytes(m wire.Message) int64 {
	const base = 256
	switch x := m.(type) {
	case *wire.Buckets:
		n := int64(base)
		for i := range x.Items {
			n += int64(unsafe.Sizeof(x.Items[i])) + int64(len(x.Items[i].Resource)) + int64(len(x.Items[i].Hot))*64
		}
		return n
	case *wire.Rules:
		return base + int64(len(x.Breakers))*int64(unsafe.Sizeof(core.BreakerRule{})) +
			int64(len(x.Flows))*int64(unsafe.Sizeof(core.FlowRule{})) + int64(len(x.Params))*512
	}
	return base
}
