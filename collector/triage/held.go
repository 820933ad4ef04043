package triage

import (
	"encoding/binary"
	"math"

	"github.com/sentinel-top/sentinel-top/core"
)

// heldQueue is the buckets a series holds back (healthy.go), oldest first,
// packed into bytes: per bucket its end as a varint difference from the
// end of the bucket before it, its slowest call, a bit mask of its
// non-empty histogram slots and their counts, all varints. A bucket of a
// few slots of small counts takes about 9 bytes where a fixed layout took
// 44 (a 10 s window of 500 ms buckets: 0.24 KB a series instead of 1 KB);
// the longest, 14 slots of the largest counts kept, takes maxHeldBytes.
// Buckets are taken from the front (released) and from the back (dropped
// by a trip), read front to back.
type heldQueue struct {
	buf []byte // the packed buckets: the oldest from off on
	off int32
	// n is how many are held, max how many at most (0: none are held).
	n, max int32
	// base is the end the oldest held bucket's is relative to (the end of
	// the one released before it), last the end of the newest.
	base, last int64
}

// heldBucket is one held bucket, unpacked: its histogram's counts (each at
// most maxHeldCount), their sum and its slowest call.
type heldBucket struct {
	end, n, rtMax int64
	hist          [core.HistogramSlots]int64
}

const (
	// maxHeldCount bounds a held histogram slot: a bucket's sum of them
	// still fits 32 bits, and a slot's varint 4 bytes.
	maxHeldCount = math.MaxInt32 / core.HistogramSlots
	// maxHeldBytes is the longest packed bucket: the end's difference,
	// rtMax (at most 2^31 - 1), the mask and every slot.
	maxHeldBytes = binary.MaxVarintLen64 + 5 + 2 + core.HistogramSlots*4
)

// push holds b after the newest. It allocates only when the bytes held
// outgrow the buffer: a quarter more, once the oldest are moved to its
// front.
func (q *heldQueue) push(b *heldBucket) {
	var tmp [maxHeldBytes]byte
	e := binary.AppendVarint(tmp[:0], b.end-q.last)
	e = binary.AppendUvarint(e, uint64(b.rtMax))
	var mask uint64
	for i := range b.hist {
		c := b.hist[i]
		if c != 0 {
			mask |= 1 << i
		}
	}
	e = binary.AppendUvarint(e, mask)
	for j := range b.hist {
		c := b.hist[j]
		if c != 0 {
			e = binary.AppendUvarint(e, uint64(c))
		}
	}
	if len(q.buf)+len(e) > cap(q.buf) && q.off > 0 {
		q.buf, q.off = q.buf[:copy(q.buf, q.buf[q.off:])], 0
	}
	if len(q.buf)+len(e) > cap(q.buf) {
		nb := make([]byte, len(q.buf), len(q.buf)+len(q.buf)/4+2*len(e))
		q.buf = nb[:copy(nb, q.buf)]
	}
	q.buf = append(q.buf, e...)
	q.last = b.end
	q.n++
}

// read unpacks the bucket at off, whose end is relative to prev, into b;
// it returns where the next one starts.
func (q *heldQueue) read(off int, prev int64, b *heldBucket) int {
	d, k := binary.Varint(q.buf[off:])
	off += k
	rt, k := binary.Uvarint(q.buf[off:])
	off += k
	mask, k := binary.Uvarint(q.buf[off:])
	off += k
	b.end, b.rtMax, b.n = prev+d, int64(rt), 0
	for i := range b.hist {
		b.hist[i] = 0
		if mask&(1<<i) != 0 {
			c, k := binary.Uvarint(q.buf[off:])
			off += k
			b.hist[i] = int64(c)
			b.n += int64(c)
		}
	}
	return off
}

// oldestEnd is the end of the oldest held bucket; n > 0.
func (q *heldQueue) oldestEnd() int64 {
	d, _ := binary.Varint(q.buf[q.off:])
	return q.base + d
}

// pop takes the oldest held bucket out into b; n > 0.
func (q *heldQueue) pop(b *heldBucket) {
	q.off = int32(q.read(int(q.off), q.base, b))
	q.base = b.end
	if q.n--; q.n == 0 {
		q.buf, q.off = q.buf[:0], 0
	}
}

// each calls f for the held buckets, oldest first.
func (q *heldQueue) each(f func(*heldBucket)) {
	var b heldBucket
	prev := q.base
	for off, i := int(q.off), int32(0); i < q.n; i++ {
		off = q.read(off, prev, &b)
		prev = b.end
		f(&b)
	}
}

// dropAfter takes out the newest held buckets that end after from, back to
// the newest one that does not, and returns what their histograms add up to.
func (q *heldQueue) dropAfter(from int64) (dropped heldBucket) {
	var b heldBucket
	// cut is where the run of buckets ending after from begins, keep how
	// many are before it and end the end of the last of those.
	cut, keep, end := int(q.off), int32(0), q.base
	prev, off := q.base, int(q.off)
	for i := range q.n {
		next := q.read(off, prev, &b)
		prev = b.end
		if b.end <= from {
			cut, keep, end = next, i+1, b.end
			dropped = heldBucket{}
		} else {
			for k := range b.hist {
				c := b.hist[k]
				dropped.hist[k] += c
			}
			dropped.n += b.n
		}
		off = next
	}
	if keep == q.n { // none ends after from
		return dropped
	}
	q.buf, q.n, q.last = q.buf[:cut], keep, end
	if q.n == 0 {
		q.buf, q.off = q.buf[:0], 0
	}
	return dropped
}
