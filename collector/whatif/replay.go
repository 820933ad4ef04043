package whatif

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// ErrTooLarge is returned for a trace whose calls exceed MaxCalls.
var ErrTooLarge = errors.New("whatif: trace too large to replay")

// MaxCalls bounds the calls of one trace a replay takes (about 48 bytes
// each while it runs).
const MaxCalls = 20_000_000

// side is one of the replay's two readings of what the input cannot tell.
type side int

const (
	sensitive side = iota // unknown response times high, refused calls as bad as their worse neighbour
	lenient               // the other way
)

var sides = [...]side{sensitive, lenient}

// prepared is a trace's calls and outage episodes for one current rule.
type prepared struct {
	inst      string
	calls     []call
	prev      []int32 // index of the last known call before each call, -1 if none
	next      []int32 // index of the first known call after it, -1 if none
	episodes  []episode
	stepMs    int64
	estimated bool // refused calls, unknown response times or scaled buckets
	strategy  core.Strategy
	bound     int64 // the current rule's maxAllowedRtMs (slow ratio)
	slowBound int64 // the trace's
}

// episode is an outage episode: [from, to), whether it is sound, and its
// known calls.
type episode struct {
	from, to   int64
	firstMs    int64 // its first bucket's length
	known, bad int64
	sound      bool
}

func prepare(t *Trace, current *core.BreakerRule) (*prepared, error) {
	p := &prepared{inst: t.Instance, strategy: current.Strategy, bound: int64(current.MaxAllowedRtMs), slowBound: t.SlowBoundMs}
	var total int64
	for i := range t.Buckets {
		total += min(max(t.Buckets[i].Complete, 0)+max(t.Buckets[i].Block, 0), MaxCallsPerBucket)
	}
	if total > MaxCalls {
		return nil, fmt.Errorf("%w: %d calls on %q, at most %d", ErrTooLarge, total, t.Instance, MaxCalls)
	}
	p.calls = make([]call, 0, total)
	type bucketSpan struct {
		start, ms  int64
		first, end int // its calls
	}
	spans := make([]bucketSpan, 0, len(t.Buckets))
	k := 0
	for i := range t.Buckets {
		b := &t.Buckets[i]
		p.stepMs = max(p.stepMs, b.Ms)
		refused := t.refusedIn(b, &k)
		first := len(p.calls)
		var scaled bool
		p.calls, scaled = t.calls(b, refused, p.calls)
		p.estimated = p.estimated || scaled || (refused && b.Block > 0)
		spans = append(spans, bucketSpan{start: b.Start, ms: b.Ms, first: first, end: len(p.calls)})
	}
	n := len(p.calls)
	p.prev, p.next = make([]int32, n), make([]int32, n)
	last := int32(-1)
	for i := range p.calls {
		p.prev[i] = last
		if p.calls[i].known {
			last = int32(i)
		}
	}
	last = -1
	for i := n - 1; i >= 0; i-- {
		p.next[i] = last
		if p.calls[i].known {
			last = int32(i)
		}
	}
	for i := range p.calls {
		c := &p.calls[i]
		if c.known && c.slowKnown < 0 && c.rtLo != c.rtHi && p.strategy == core.SlowRequestRatio {
			p.estimated = true
		}
	}
	// Episodes: runs of failing buckets with only empty ones between.
	thr := current.Threshold
	if current.Strategy == core.ErrorCount {
		thr = 0.5
	}
	var cur *episode
	for _, s := range spans {
		if s.first == s.end {
			continue // empty: neither starts nor breaks an episode
		}
		var known, bad, refusedBad, refused int64
		for i := s.first; i < s.end; i++ {
			c := &p.calls[i]
			if c.known {
				known++
				if p.surelyBad(c) {
					bad++
				}
				continue
			}
			refused++
			if a, b := p.prev[i], p.next[i]; a >= 0 && b >= 0 && p.surelyBad(&p.calls[a]) && p.surelyBad(&p.calls[b]) {
				refusedBad++
			}
		}
		failing := known > 0 && bad > 0 && float64(bad) >= thr*float64(known)
		if known == 0 {
			failing = refusedBad == refused
		}
		if !failing {
			cur = nil
			continue
		}
		if cur == nil {
			p.episodes = append(p.episodes, episode{from: s.start, firstMs: s.ms})
			cur = &p.episodes[len(p.episodes)-1]
		}
		cur.to = s.start + s.ms
		cur.known += known
		cur.bad += bad
	}
	for i := range p.episodes {
		e := &p.episodes[i]
		e.sound = e.known >= SoundCalls && float64(e.bad) >= thr*float64(e.known)
	}
	return p, nil
}

// surelyBad reports whether a known call is bad as the current rule counts
// it, whatever the input could not tell.
func (p *prepared) surelyBad(c *call) bool {
	if p.strategy != core.SlowRequestRatio {
		return c.err
	}
	if c.slowKnown >= 0 && p.slowBound == p.bound {
		return c.slowKnown == 1
	}
	return c.rtLo > p.bound
}

// outcome is what call i did on side s: its response time and whether it
// failed; an unknown call takes a neighbour's.
func (p *prepared) outcome(i int, s side) (rt int64, failed bool) {
	c := &p.calls[i]
	if !c.known {
		a, b := p.prev[i], p.next[i]
		switch {
		case a < 0 && b < 0:
			if s == sensitive {
				return 60_000, true
			}
			return 0, false
		case a < 0:
			c = &p.calls[b]
		case b < 0:
			c = &p.calls[a]
		default:
			x, y := &p.calls[a], &p.calls[b]
			if p.worse(y, x, s) == (s == sensitive) {
				c = y
			} else {
				c = x
			}
		}
	}
	if s == sensitive {
		return c.rtHi, c.err
	}
	return c.rtLo, c.err
}

// worse reports whether a is worse than b as the current rule's strategy
// judges calls: by response time first for a slow ratio, by failure first
// otherwise.
func (p *prepared) worse(a, b *call, s side) bool {
	ra, rb := a.rtLo, b.rtLo
	if s == sensitive {
		ra, rb = a.rtHi, b.rtHi
	}
	if p.strategy == core.SlowRequestRatio {
		return ra > rb || ra == rb && a.err && !b.err
	}
	return a.err && !b.err || a.err == b.err && ra > rb
}

// healthy reports whether call i's outcome on side s is good as the
// current rule counts calls.
func (p *prepared) healthy(i int, s side) bool {
	rt, failed := p.outcome(i, s)
	if p.strategy == core.SlowRequestRatio {
		return rt <= p.bound
	}
	return !failed
}

// run is one replay of a prepared trace under a rule on one side.
type run struct {
	trips, lowConf, probes int64
	tripAt                 []int64
	passedOutage, blocked  int64 // blocked: healthy calls blocked outside sound outages
}

type pending struct {
	at, rt int64
	failed bool
}

type pendingHeap []pending

func (h pendingHeap) Len() int           { return len(h) }
func (h pendingHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h pendingHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)        { *h = append(*h, x.(pending)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// listener counts a replayed breaker's trips and probes.
type listener struct{ r *run }

func (l listener) OnTransition(t core.Transition) {
	switch {
	case t.From == core.Closed && t.To == core.Open:
		l.r.trips++
		l.r.tripAt = append(l.r.tripAt, t.AtMs)
		if t.Snapshot.Total < SoundCalls {
			l.r.lowConf++
		}
	case t.From == core.Open && t.To == core.HalfOpen:
		l.r.probes++
	}
}

// replay runs the prepared trace through a new breaker for rule on side s.
// A known call completed at its time (buckets count completions when they
// come) and so arrived its response time earlier; a refused call arrived
// at its time. Calls are offered to the breaker in the order they arrived.
func (p *prepared) replay(rule core.BreakerRule, s side) (*run, error) {
	r := &run{}
	br, err := core.NewBreaker(rule, listener{r})
	if err != nil {
		return nil, fmt.Errorf("whatif: %w", err)
	}
	type arrival struct {
		at, rt int64
		i      int32
		failed bool
	}
	order := make([]arrival, len(p.calls))
	for i := range p.calls {
		rt, failed := p.outcome(i, s)
		at := p.calls[i].at
		if p.calls[i].known {
			at -= rt
		}
		order[i] = arrival{at: at, rt: rt, i: int32(i), failed: failed}
	}
	slices.SortStableFunc(order, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
	var h pendingHeap
	flush := func(until int64) {
		for len(h) > 0 && h[0].at <= until {
			x := heap.Pop(&h).(pending)
			br.OnComplete(x.at, x.rt, x.failed)
		}
	}
	for _, a := range order {
		flush(a.at)
		// Whether the call met a failing downstream is judged at its
		// completion, as the episodes are.
		done := a.at + a.rt
		inOutage := p.inSoundEpisode(done)
		if pass, _ := br.TryPass(a.at); pass {
			if inOutage {
				r.passedOutage++
			}
			heap.Push(&h, pending{at: done, rt: a.rt, failed: a.failed})
			continue
		}
		if !inOutage && p.healthy(int(a.i), s) {
			r.blocked++
		}
	}
	flush(1<<62 - 1)
	return r, nil
}

// inSoundEpisode reports whether at falls in a sound outage episode.
func (p *prepared) inSoundEpisode(at int64) bool {
	i, _ := slices.BinarySearchFunc(p.episodes, at, func(e episode, t int64) int {
		if e.to <= t {
			return -1
		}
		return 1
	})
	return i < len(p.episodes) && p.episodes[i].from <= at && p.episodes[i].sound
}
