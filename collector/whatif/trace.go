package whatif

import (
	"math"

	"github.com/sentinel-top/sentinel-top/core"
)

// SoundCalls is the fewest calls a trip or an outage may rest on to count
// as evidence (findings-v1's low-confidence bound).
const SoundCalls = 20

// MaxCallsPerBucket bounds the calls one bucket becomes: a bucket that
// claims more is scaled down to this many, in proportion, and the replay
// is marked Estimated (a peer can claim any count; the replay's cost is
// bounded all the same).
const MaxCallsPerBucket = 50_000

// Span is the time [From, To), Unix ms.
type Span struct{ From, To int64 }

// Bucket is one bucket of one resource's traffic on one instance, as the
// input holds it (wire v1 "buckets" item): the counts of core.Metrics.
type Bucket struct {
	Start, Ms int64
	Pass      int64
	Block     int64
	Complete  int64
	Error     int64
	// Slow counts the completions slower than SlowBoundMs.
	Slow int64
	// SlowBoundMs is the bound Slow counts against (the smallest
	// maxAllowedRtMs of the resource's slow-ratio breakers then); 0: the
	// trace's.
	SlowBoundMs  int64
	RtMin, RtMax int64
	// HasHist says Hist counts completions by response time
	// (core.HistogramBounds).
	HasHist bool
	Hist    [core.HistogramSlots]int64
}

// Trace is one resource's traffic on one instance.
type Trace struct {
	Instance string
	// Buckets in time order, not overlapping.
	Buckets []Bucket
	// Spells are the spans, in time order, during which the instance's
	// real breakers of the resource were not CLOSED: a bucket's blocks
	// overlapping one were the breaker's, others a flow rule's.
	Spells []Span
	// SlowBoundMs is the bound Bucket.Slow counts against where a bucket
	// does not say; 0: none.
	SlowBoundMs int64
	// Restarts are the times, in order, the instance's process restarted:
	// its breakers began again CLOSED and empty, and so do the replay's.
	Restarts []int64
}

// call is one call of a trace: when it arrived, what is known of its
// response time ([rtLo, rtHi] ms) and whether it failed; an unknown call's
// outcome is estimated from its neighbours at replay.
type call struct {
	at         int64
	rtLo, rtHi int64
	err        bool
	known      bool
	// slowKnown: the call is known to be slow (1) or not (0) against the
	// trace's SlowBoundMs; -1 when the bucket does not say.
	slowKnown int8
}

// slotRange is the response times a histogram slot holds, ms, inclusive.
func slotRange(i int, rtMax int64) (lo, hi int64) {
	b := core.HistogramBounds
	switch {
	case i == 0:
		return 0, b[0]
	case i < len(b):
		return b[i-1] + 1, b[i]
	default:
		return b[len(b)-1] + 1, max(rtMax, b[len(b)-1]+1)
	}
}

// dealer deals a bucket's known calls their histogram slot in a
// well-mixed order: the j-th call takes the call at cumulative index
// (j*stride) mod n, stride coprime to n, so every slot keeps its count
// exactly and slow calls are spread over the bucket rather than bunched.
type dealer struct {
	n, stride int64
}

func newDealer(n int64) dealer {
	if n <= 1 {
		return dealer{n: n, stride: 1}
	}
	s := max(int64(float64(n)*0.6180339887), 1)
	for gcd(s, n) != 1 {
		s++
	}
	return dealer{n: n, stride: s}
}

func (d dealer) index(j int64) int64 {
	if d.n <= 1 {
		return 0
	}
	return int64((uint64(j) * uint64(d.stride)) % uint64(d.n))
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// spread reports whether the i-th of n items is one of k spread evenly
// among them.
func spread(i, n, k int64) bool {
	if k <= 0 || n <= 0 {
		return false
	}
	if k >= n {
		return true
	}
	return (i+1)*k/n > i*k/n
}

// calls appends bucket b's calls to out: its known completions and, when
// refused is set, its blocks as calls of unknown outcome. scaled reports
// that the bucket claimed more than MaxCallsPerBucket calls.
func (t *Trace) calls(b *Bucket, refused bool, out []call) (_ []call, scaled bool) {
	known := max(b.Complete, 0)
	unknown := int64(0)
	if refused {
		unknown = max(b.Block, 0)
	}
	errs := min(max(b.Error, 0), known)
	slow := min(max(b.Slow, 0), known)
	n := known + unknown
	if n <= 0 || b.Ms <= 0 {
		return out, false
	}
	if n > MaxCallsPerBucket {
		f := float64(MaxCallsPerBucket) / float64(n)
		known = int64(math.Round(float64(known) * f))
		unknown = MaxCallsPerBucket - known
		errs = int64(math.Round(float64(errs) * f))
		slow = int64(math.Round(float64(slow) * f))
		n, scaled = MaxCallsPerBucket, true
	}
	// The histogram's slots as cumulative counts, scaled to known.
	var cum [core.HistogramSlots + 1]int64
	hist := b.HasHist
	if hist {
		var total int64
		for j := range b.Hist {
			c := b.Hist[j]
			total += max(c, 0)
		}
		if total <= 0 {
			hist = false
		} else {
			var acc float64
			for i := range b.Hist {
				c := b.Hist[i]
				acc += float64(max(c, 0)) * float64(known) / float64(total)
				cum[i+1] = int64(math.Round(acc))
			}
			cum[core.HistogramSlots] = known
		}
	}
	bound := t.SlowBoundMs
	if b.SlowBoundMs > 0 {
		bound = b.SlowBoundMs
	}
	// Slow calls above the bound's slot are slow by their slot; the rest of
	// Slow falls in the slot the bound cuts, at its top.
	cut, cutSlow := -1, int64(0)
	if hist && bound > 0 {
		above := int64(0)
		for i := range core.HistogramSlots {
			lo, hi := slotRange(i, b.RtMax)
			switch {
			case lo > bound:
				above += cum[i+1] - cum[i]
			case hi > bound:
				cut = i
			}
		}
		if cut >= 0 {
			cutSlow = min(max(slow-above, 0), cum[cut+1]-cum[cut])
		}
	}
	d := newDealer(known)
	var j int64 // known calls dealt
	for i := range n {
		at := b.Start + (2*i+1)*b.Ms/(2*n)
		if spread(i, n, unknown) {
			out = append(out, call{at: at, slowKnown: -1})
			continue
		}
		c := call{at: at, known: true, err: spread(j, known, errs), slowKnown: -1}
		q := d.index(j)
		j++
		switch {
		case hist:
			s := 0
			for s < core.HistogramSlots-1 && q >= cum[s+1] {
				s++
			}
			c.rtLo, c.rtHi = slotRange(s, b.RtMax)
			if bound > 0 {
				switch {
				case c.rtLo > bound:
					c.slowKnown = 1
				case c.rtHi <= bound:
					c.slowKnown = 0
				case q >= cum[s+1]-cutSlow: // the top of the cut slot
					c.slowKnown, c.rtLo = 1, bound+1
				default:
					c.slowKnown, c.rtHi = 0, bound
				}
			}
		case bound > 0:
			if q < slow {
				c.slowKnown = 1
				c.rtLo, c.rtHi = bound+1, max(b.RtMax, bound+1)
			} else {
				c.slowKnown = 0
				c.rtLo, c.rtHi = min(max(b.RtMin, 0), bound), bound
			}
		default:
			c.rtLo, c.rtHi = max(b.RtMin, 0), max(b.RtMax, b.RtMin, 0)
		}
		out = append(out, c)
	}
	return out, scaled
}

// refusedIn reports whether bucket b overlaps a spell, advancing *k past
// the spells that end before it.
func (t *Trace) refusedIn(b *Bucket, k *int) bool {
	for *k < len(t.Spells) && t.Spells[*k].To <= b.Start {
		*k++
	}
	return *k < len(t.Spells) && t.Spells[*k].From < b.Start+b.Ms
}
