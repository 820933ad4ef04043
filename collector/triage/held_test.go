package triage

import (
	"math/rand/v2"
	"testing"
)

// The packed held buckets against a plain slice of them: random pushes
// (ends out of order too, counts up to the largest kept, empty and full
// histograms), pops and drops give back the same buckets in the same order,
// and in steady state the buffer stops growing.
func TestHeldQueueMatchesSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q heldQueue
	var want []heldBucket
	end := int64(1_764_460_800_000)
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 6:
			var b heldBucket
			end += int64(rng.IntN(2000)) - 200
			b.end, b.rtMax = end, rng.Int64N(1<<31)
			for i := range b.hist {
				switch rng.IntN(4) {
				case 0:
					b.hist[i] = rng.Int64N(maxHeldCount + 1)
				case 1:
					b.hist[i] = rng.Int64N(300)
				}
				b.n += b.hist[i]
			}
			q.push(&b)
			want = append(want, b)
		case op < 9 && len(want) > 0:
			if got := q.oldestEnd(); got != want[0].end {
				t.Fatalf("step %d: oldest ends at %d, want %d", step, got, want[0].end)
			}
			var b heldBucket
			q.pop(&b)
			if b != want[0] {
				t.Fatalf("step %d: popped %+v, want %+v", step, b, want[0])
			}
			want = want[1:]
		case len(want) > 0:
			from := want[rng.IntN(len(want))].end - int64(rng.IntN(500))
			var sum heldBucket
			k := len(want)
			for k > 0 && want[k-1].end > from {
				k--
				for i, c := range want[k].hist {
					sum.hist[i] += c
				}
				sum.n += want[k].n
			}
			if got := q.dropAfter(from); got != sum {
				t.Fatalf("step %d: dropped %+v, want %+v", step, got, sum)
			}
			want = want[:k]
		}
		var got []heldBucket
		q.each(func(b *heldBucket) { got = append(got, *b) })
		if len(got) != len(want) || int(q.n) != len(want) {
			t.Fatalf("step %d: %d held (n %d), want %d", step, len(got), q.n, len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("step %d: held %d is %+v, want %+v", step, i, got[i], want[i])
			}
		}
		if len(want) > 40 {
			var b heldBucket
			q.pop(&b)
			want = want[1:]
		}
	}
	// At most 41 buckets of at most maxHeldBytes, a quarter more and two
	// buckets of room.
	if limit := 41*maxHeldBytes*5/4 + 2*maxHeldBytes; cap(q.buf) > limit {
		t.Fatalf("buffer of %d bytes, over %d", cap(q.buf), limit)
	}
}

// A bucket of a few small counts packs into a few bytes.
func TestHeldQueuePacks(t *testing.T) {
	var q heldQueue
	for k := range int64(22) {
		b := heldBucket{end: 1_764_460_800_000 + 500*k, rtMax: 180, n: 10}
		b.hist[4], b.hist[5], b.hist[7] = 5, 4, 1
		q.push(&b)
	}
	if per := len(q.buf) / 22; per > 9 {
		t.Fatalf("%d bytes a bucket, want at most 9", per)
	}
}
