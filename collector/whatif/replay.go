package whatif

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// ErrTooLarge is returned for a trace whose calls exceed MaxCalls.
var ErrTooLarge = errors.New("whatif: trace too large to replay")

// MaxCalls bounds the calls of one trace a replay takes (about 50 bytes
// each while it runs, given back after: 100 MB at most): an hour at 500
// calls a second. A longer or busier trace is not replayed (ErrTooLarge),
// and its plan says so.
const MaxCalls = 2_000_000

// side is one of the replay's two readings of what the input cannot tell.
type side int

const (
	sensitive side = iota // unknown response times high, refused calls as bad as their worse neighbour
	lenient               // the other way
)

var sides = [...]side{sensitive, lenient}

// prepared is a trace's calls and outage episodes for one current rule.
type prepared struct {
	inst  string
	calls []call
	// pick is, for each refused call, the known call whose outcome it
	// takes on each side (-1: none known at all); see estimate.
	pick      [len(sides)][]int32
	episodes  []episode
	sound     int // how many of episodes are sound
	stepMs    int64
	end       int64 // the end of the last bucket
	estimated bool  // refused calls, unknown response times or scaled buckets
	strategy  core.Strategy
	bound     int64 // the current rule's maxAllowedRtMs (slow ratio)
	restarts  []int64
	// arrived is, on each side, the calls' indexes in the order they
	// arrived (arrivals): the same for every rule replayed on that side.
	arrived [len(sides)][]int32
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
	p := &prepared{inst: t.Instance, strategy: current.Strategy, bound: int64(current.MaxAllowedRtMs), restarts: t.Restarts}
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
		p.end = max(p.end, b.Start+b.Ms)
		refused := t.refusedIn(b, &k)
		first := len(p.calls)
		var scaled bool
		p.calls, scaled = t.calls(b, refused, p.calls)
		p.estimated = p.estimated || scaled || (refused && b.Block > 0)
		spans = append(spans, bucketSpan{start: b.Start, ms: b.Ms, first: first, end: len(p.calls)})
	}
	p.estimate(min(max(int64(current.StatIntervalMs), 1), estimateSpanMs))
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
			if k := p.pick[lenient][i]; k >= 0 && p.surelyBad(&p.calls[k]) {
				refusedBad++ // bad even on the side that judges it better
			}
		}
		failing := known > 0 && bad > 0 && float64(bad) >= thr*float64(known)
		if known == 0 {
			// Only refused calls: bad at the threshold even on the lenient
			// reading (the probes around them failed), they are evidence too.
			failing = refusedBad > 0 && float64(refusedBad) >= thr*float64(refused)
			known, bad = refused, refusedBad
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
		e.sound = e.bad >= SoundCalls && float64(e.bad) >= thr*float64(e.known)
		if e.sound {
			p.sound++
		}
	}
	return p, nil
}

// surelyBad reports whether a known call is bad as the current rule counts
// it, whatever the input could not tell.
func (p *prepared) surelyBad(c *call) bool {
	if p.strategy != core.SlowRequestRatio {
		return c.err
	}
	return c.rtLo > p.bound // a call known slow against the bound starts above it
}

// outcome is what call i did on side s: its response time and whether it
// failed; a refused call takes the outcome of the known call picked for
// it (estimate).
func (p *prepared) outcome(i int, s side) (rt int64, failed bool) {
	c := &p.calls[i]
	if !c.known {
		k := p.pick[s][i]
		if k < 0 {
			if s == sensitive {
				return 60_000, true
			}
			return 0, false
		}
		c = &p.calls[k]
	}
	if s == sensitive {
		return c.rtHi, c.err
	}
	return c.rtLo, c.err
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
	// steps are the breaker's transitions, in order: when it opened (to
	// OPEN from CLOSED or HALF_OPEN) or closed, for whether it was open
	// at an episode's start.
	steps                 []step
	passedOutage, blocked int64 // blocked: healthy calls blocked outside sound outages
	passedAll             int64 // every call let through
	// estimated: a response time between histogram edges was judged
	// against the rule's bound.
	estimated bool
}

// step is one transition of a replayed breaker.
type step struct {
	at int64
	to core.State
}

type pending struct {
	at, rt int64
	failed bool
}

// pendingHeap is the calls in flight, a binary min-heap by completion
// time, typed (container/heap would box every element it moves).
type pendingHeap []pending

func (h *pendingHeap) push(x pending) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].at <= a[i].at {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *pendingHeap) pop() pending {
	a := *h
	x := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && a[l].at < a[m].at {
			m = l
		}
		if r := l + 1; r < n && a[r].at < a[m].at {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
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
	l.r.steps = append(l.r.steps, step{at: t.AtMs, to: t.To})
}

// replay runs the prepared trace through a new breaker for rule on side s.
// A known call completed at its time (buckets count completions when they
// come) and so arrived its response time earlier; a refused call arrived
// at its time. Calls are offered to the breaker in the order they arrived.
func (p *prepared) replay(rule core.BreakerRule, s side) (*run, error) {
	r := &run{}
	var br *core.Breaker
	var err error
	if rule.Resource != "" {
		if br, err = core.NewBreaker(rule, listener{r}); err != nil {
			return nil, fmt.Errorf("whatif: %w", err)
		}
	}
	bound := int64(rule.MaxAllowedRtMs)
	if br != nil && rule.Strategy == core.SlowRequestRatio {
		for i := range p.calls {
			if c := &p.calls[i]; c.known && c.rtLo <= bound && c.rtHi > bound {
				r.estimated = true
				break
			}
		}
	}
	var h pendingHeap
	flush := func(until int64) {
		for len(h) > 0 && h[0].at <= until {
			x := h.pop()
			if br != nil {
				br.OnComplete(x.at, x.rt, x.failed)
			}
		}
	}
	restarts := p.restarts
	for _, i := range p.arrivals(s) {
		rt, failed := p.outcome(int(i), s)
		at := p.calls[i].at
		if p.calls[i].known {
			at -= rt
		}
		if len(restarts) > 0 && at >= restarts[0] {
			// A new process: what the old one had in flight is gone, and its
			// breakers begin again.
			for len(restarts) > 0 && at >= restarts[0] {
				restarts = restarts[1:]
			}
			h = h[:0]
			r.steps = append(r.steps, step{at: at, to: core.Closed})
			if br != nil {
				br, _ = core.NewBreaker(rule, listener{r}) // valid: it was made once
			}
		}
		flush(at)
		// Whether the call met a failing downstream is judged at its
		// completion, as the episodes are.
		done := at + rt
		inOutage := p.inSoundEpisode(done)
		pass := true
		if br != nil {
			pass, _ = br.TryPass(at)
		}
		if pass {
			r.passedAll++
			if inOutage {
				r.passedOutage++
			}
			h.push(pending{at: done, rt: rt, failed: failed})
			continue
		}
		if !inOutage && p.healthy(int(i), s) {
			r.blocked++
		}
	}
	flush(1<<62 - 1)
	return r, nil
}

// arrivalBits is how many low bits of an arrival's sort key hold its
// call's index: MaxCalls fits them.
const arrivalBits = 21

var _ = [1]int{}[MaxCalls>>arrivalBits] // MaxCalls < 1<<arrivalBits

// arrivals is the indexes of the calls in the order they arrived on side
// s, by arrival time and then index: a known call arrived its response
// time before it completed, a refused one at its time. It is worked out
// once a side and shared by the replays of every rule on it: each key is
// the arrival's offset from the earliest and the index in one word, so
// the sort compares words, not records.
func (p *prepared) arrivals(s side) []int32 {
	if p.arrived[s] != nil || len(p.calls) == 0 {
		return p.arrived[s]
	}
	// at[i] is call i's arrival, as a word: offset from the earliest and
	// packed with the index once the span is known to fit.
	at := make([]uint64, len(p.calls))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range p.calls {
		a := p.calls[i].at
		if p.calls[i].known {
			rt, _ := p.outcome(i, s)
			a -= rt
		}
		at[i] = uint64(a)
		lo, hi = min(lo, a), max(hi, a)
	}
	order := make([]int32, len(p.calls))
	if span := uint64(hi) - uint64(lo); span < 1<<(64-arrivalBits) {
		for i := range at {
			at[i] = (at[i]-uint64(lo))<<arrivalBits | uint64(i)
		}
		slices.Sort(at)
		for j, k := range at {
			order[j] = int32(k & (1<<arrivalBits - 1))
		}
	} else {
		// Times too far apart for a key (a hostile input's): compared
		// one by one.
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int {
			return cmp.Or(cmp.Compare(int64(at[a]), int64(at[b])), cmp.Compare(a, b))
		})
	}
	p.arrived[s] = order
	return order
}

// inSoundEpisode reports whether at falls in a sound outage episode.
func (p *prepared) inSoundEpisode(at int64) bool {
	if p.sound == 0 {
		return false
	}
	i, _ := slices.BinarySearchFunc(p.episodes, at, func(e episode, t int64) int {
		if e.to <= t {
			return -1
		}
		return 1
	})
	return i < len(p.episodes) && p.episodes[i].from <= at && p.episodes[i].sound
}

// estimateCalls is how many known calls on each side of a stretch of
// refused calls their outcomes are estimated from.
const estimateCalls = SoundCalls

// estimateSpanMs bounds how far from the nearest known call a sample
// reaches: the calls just before a trip are the downstream as the breaker
// left it, those of a window earlier may be from before the outage.
const estimateSpanMs = 1000

// estimate picks, for each refused call, a known call whose outcome it
// takes on each side. The known calls just before it and just after it
// (the probes among them) are two samples of what the downstream did
// around it: on each side, the nearest known call and those within one
// statIntervalMs of it (the span a breaker judges), at most estimateCalls.
// The sensitive side deals the refused calls the outcomes of the sample
// with more bad calls, in turn, the lenient side those of the other. So
// the refused calls are about as bad as the calls around them, on the
// worse and on the better reading; in the middle of a long OPEN spell
// the samples are the probes on either side of it.
func (p *prepared) estimate(windowMs int64) {
	var known []int32
	for i := range p.calls {
		if p.calls[i].known {
			known = append(known, int32(i))
		}
	}
	bad := make([]int32, len(known)+1) // prefix sums of surely bad
	for j, i := range known {
		bad[j+1] = bad[j]
		if p.surelyBad(&p.calls[i]) {
			bad[j+1]++
		}
	}
	n := int32(len(known))
	for s := range p.pick {
		p.pick[s] = make([]int32, len(p.calls))
	}
	var before, refused int32 // known calls before the call; refused calls so far
	for i := range p.calls {
		if p.calls[i].known {
			before++
			p.pick[sensitive][i], p.pick[lenient][i] = -1, -1
			continue
		}
		bLo, aHi := max(before-estimateCalls, 0), min(before+estimateCalls, n)
		if before > 0 {
			from := p.calls[known[before-1]].at - windowMs
			for bLo < before-1 && p.calls[known[bLo]].at < from {
				bLo++
			}
		}
		if before < n {
			to := p.calls[known[before]].at + windowMs
			for aHi > before+1 && p.calls[known[aHi-1]].at > to {
				aHi--
			}
		}
		nb, na := before-bLo, aHi-before
		var worse, better [2]int32 // [from, to) in known
		switch {
		case nb == 0 && na == 0:
			p.pick[sensitive][i], p.pick[lenient][i] = -1, -1
			refused++
			continue
		case nb == 0:
			worse, better = [2]int32{before, aHi}, [2]int32{before, aHi}
		case na == 0:
			worse, better = [2]int32{bLo, before}, [2]int32{bLo, before}
		default:
			// Shares compared without division: bad_b/nb against bad_a/na.
			sb, sa := int64(bad[before]-bad[bLo])*int64(na), int64(bad[aHi]-bad[before])*int64(nb)
			worse, better = [2]int32{bLo, before}, [2]int32{before, aHi}
			if sa > sb {
				worse, better = better, worse
			}
		}
		p.pick[sensitive][i] = known[worse[0]+refused%(worse[1]-worse[0])]
		p.pick[lenient][i] = known[better[0]+refused%(better[1]-better[0])]
		refused++
	}
}
