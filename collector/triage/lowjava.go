package triage

import (
	"cmp"
	"math"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// Java Sentinel's trips, judged for low-confidence-trip. Java exposes no
// breaker state: the collector infers transitions from per-second counts
// (wire v1 "inferred"), dated to the start of the second they happened in,
// without a snapshot. Java 1.8's breaker counts in one tumbling bucket of
// statIntervalMs, aligned on the epoch as the metric lines' seconds are, so
// with the rules known the window's calls are bounded by the counts: a trip
// in second c rested on at most the completions of the seconds from its
// window's start to c (calls in flight at the trip complete after it, in
// the same second; a close within the bucket only empties it). When the
// counts cannot tell whether the trip came in its second or at the end of
// the second before (blocks begin in the second after a trip, and no pass
// in it shows the breaker closed), both windows are bounded, and the larger
// bound holds. A trip whose bound is under AdviceMinRequests surely rested
// on fewer calls, and is judged as a snapshot's would be; a bound of
// AdviceMinRequests or more in a window of whole seconds may be the
// window's true size, and the trip is not counted. Anything else is not
// judged, and Unjudged says so per resource with why.

// lowSecondsLen is how many buckets a series keeps for judging inferred
// trips: a minute of Java's seconds (256 bytes of counts).
const lowSecondsLen = 64

// maxWaiting bounds the inferred trips of an app x resource settled while
// their seconds had not come; further ones are not judged.
const maxWaiting = 64

// lowSeconds are a series' latest buckets, each one's passes and
// completions, in a ring by bucket number; buckets the series did not take
// (silences) are zero. Counts saturate at 65535: a window is judged against
// 20. awaiting counts the trips of the series waiting for their window's
// seconds.
type lowSeconds struct {
	since, last int64 // the first and the latest bucket taken, their starts
	bm          int64
	pass, done  [lowSecondsLen]uint16
	awaiting    int
	// whole: the ring holds the series from its first bucket on, so that
	// its silence before since is no traffic.
	whole bool
}

// take records a bucket that starts after the last one taken.
func (r *lowSeconds) take(start, bm, pass, done int64) {
	switch {
	case r.bm != bm:
		*r = lowSeconds{since: start, last: start - bm, bm: bm, awaiting: r.awaiting, whole: r.whole && r.bm == 0}
	case start <= r.last:
		return
	}
	for k, n := r.last+bm, 0; k < start && n < lowSecondsLen; k, n = k+bm, n+1 {
		i := r.slot(k)
		r.pass[i], r.done[i] = 0, 0
	}
	i := r.slot(start)
	r.pass[i], r.done[i] = uint16(min(pass, math.MaxUint16)), uint16(min(done, math.MaxUint16))
	r.last = start
}

func (r *lowSeconds) slot(start int64) int {
	n := floorDiv(start, r.bm) % lowSecondsLen
	if n < 0 {
		n += lowSecondsLen
	}
	return int(n)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// floorTo rounds t down to a multiple of step (step > 0).
func floorTo(t, step int64) int64 { return floorDiv(t, step) * step }

// winState is what is known of a trip's window.
type winState uint8

const (
	// winLow: it held fewer than AdviceMinRequests completions (a
	// snapshot's, or an inferred trip's bound).
	winLow winState = iota
	// winAwait: an inferred trip whose window's seconds have not all come.
	winAwait
	// winHigh: an inferred trip whose window may have held
	// AdviceMinRequests completions or more: not counted.
	winHigh
	// winUnjudged: an inferred trip whose window cannot be told.
	winUnjudged
)

// javaWindow is what an inferred trip's window needs: the length of the
// window of its ratio rules (the longest), whether they count in Java's
// tumbling bucket, the shortest retry timeout, and the fewest completions
// a trip needs.
type javaWindow struct {
	state  winState
	why    UnjudgedWhy
	ms     int64
	java   bool
	retry  int64
	minReq int64
}

// UnjudgedWhy is why trips could not be judged.
type UnjudgedWhy uint8

// The reasons trips are not judged.
const (
	// UnjudgedNoRules: the instance's rules for the resource are unknown
	// (a metric log holds none): the window's length and whether a ratio
	// breaker tripped are not known.
	UnjudgedNoRules UnjudgedWhy = iota + 1
	// UnjudgedSeveral: the resource has ratio and other breakers, and
	// counts do not tell which one tripped.
	UnjudgedSeveral
	// UnjudgedLegacy: a degrade rule of Java Sentinel before 1.8, which
	// cuts a resource off without a probe.
	UnjudgedLegacy
	// UnjudgedMissing: per-second counts of the window's seconds never
	// arrived, or lie before the data begins.
	UnjudgedMissing
	// UnjudgedResolution: the window is not made of whole seconds, and
	// the seconds around it completed AdviceMinRequests calls or more.
	UnjudgedResolution
	// UnjudgedLong: the window is longer than the seconds kept
	// (lowSecondsLen).
	UnjudgedLong
	// UnjudgedCounts: the counts of the seconds the trip is dated to
	// hold fewer completions than minRequestAmount: its second is not
	// known.
	UnjudgedCounts

	unjudgedKinds = iota + 1
)

// Text says why in a clause, numbers included.
func (w UnjudgedWhy) Text() string {
	switch w {
	case UnjudgedNoRules:
		return "the breaker rules are unknown (a metric log holds none), so neither the window's length nor whether a ratio breaker tripped is known"
	case UnjudgedSeveral:
		return "the resource has ratio and other breakers, and per-second counts do not tell which one tripped"
	case UnjudgedLegacy:
		return "a degrade rule of Java Sentinel before 1.8 cuts the resource off without a probe"
	case UnjudgedMissing:
		return "the per-second counts of the window's seconds never arrived, or lie before the data begins"
	case UnjudgedResolution:
		return "the window is not made of whole seconds, and the seconds around it completed " + itoa(AdviceMinRequests) + " calls or more"
	case UnjudgedLong:
		return "the window is longer than the " + itoa(lowSecondsLen) + " s of per-second counts kept"
	case UnjudgedCounts:
		return "the seconds the trip is dated to completed fewer calls than minRequestAmount, so its second is not known"
	}
	return "unknown"
}

// javaTripOf begins the judgment of an inferred trip: not a
// low-confidence-trip's business when none of the resource's breakers is
// a ratio breaker; else its window is judged from the counts when they
// come (javaWindow.judge), or cannot be.
func javaTripOf(b *breaker, t core.Transition) (lowTrip, bool) {
	in := b.s.inst
	tr := lowTrip{b: b, at: t.AtMs, inferred: true, thr: t.Threshold, strategy: t.Strategy}
	tr.cold, tr.coldKnown = coldStart(in, t.AtMs)
	rr := b.s.rr
	if rr == nil || len(rr.Breakers) == 0 {
		tr.win = javaWindow{state: winUnjudged, why: UnjudgedNoRules}
		return tr, true
	}
	w := javaWindow{state: winAwait, java: true, retry: math.MaxInt64, minReq: math.MaxInt64}
	ratio, other, legacy := -1, false, false
	for i, r := range rr.Breakers {
		w.retry = min(w.retry, int64(r.RetryTimeoutMs))
		legacy = legacy || r.Semantics == core.SemanticsJava16
		if !r.Strategy.IsRatio() {
			other = true
			continue
		}
		if ratio < 0 {
			ratio = i
		}
		w.ms = max(w.ms, int64(r.StatIntervalMs))
		w.java = w.java && r.Semantics == core.SemanticsJava
		w.minReq = min(w.minReq, int64(max(r.MinRequestAmount, 1)))
	}
	switch {
	case ratio < 0:
		return lowTrip{}, false
	case legacy:
		w = javaWindow{state: winUnjudged, why: UnjudgedLegacy}
	case other:
		w = javaWindow{state: winUnjudged, why: UnjudgedSeveral}
	}
	tr.win = w
	if tr.rule, tr.hasRule = tripRule(in, t); !tr.hasRule || !tr.rule.Strategy.IsRatio() {
		tr.rule, tr.hasRule = rr.Breakers[ratio], true
	}
	tr.thr, tr.strategy = tr.rule.Threshold, tr.rule.Strategy
	if w.state == winAwait {
		if b.s.lowSecs == nil {
			b.s.lowSecs = &lowSeconds{whole: !b.s.hasBucket}
		}
		b.s.lowSecs.awaiting++
	}
	return tr, true
}

// judge bounds the window of an inferred trip on s once s has taken the
// bucket of the trip's second or a later one, and judges it: low (with its
// evidence), high, or not to be judged; until then it waits.
func (w *javaWindow) judge(t *lowTrip, s *series) {
	if w.state != winAwait || !s.hasBucket {
		return
	}
	r := s.lowSecs
	bm := int64(s.bucketMs)
	if r != nil && r.bm > 0 {
		bm = r.bm
	}
	sec := floorTo(t.at, bm)
	if s.lastStart < sec {
		return // its second has not come
	}
	w.state = winUnjudged
	if r == nil || r.bm == 0 {
		w.why = UnjudgedMissing
		return
	}
	if w.ms+2*bm > lowSecondsLen*bm {
		w.why = UnjudgedLong
		return
	}
	// The trip came in its second, or, unless that second shows the
	// breaker closed in it (passes, beyond a probe that a trip in the
	// second before could have let through), at the end of the second
	// before.
	seconds := []int64{sec}
	if p := r.at(sec, r.pass[:]); !(p >= 2 || p == 1 && w.retry >= 2*bm) {
		seconds = append(seconds, sec-bm)
	}
	var n int64
	for _, c := range seconds {
		from := floorTo(c-w.ms+1, bm) // a sliding window of w.ms ending in c
		if w.java {
			from = floorTo(floorTo(c, w.ms), bm) // Java's bucket of w.ms holding c
		}
		if from < r.since && (!r.whole || !s.inst.reportedBefore(from)) || r.last-from >= lowSecondsLen*bm || s.inst.unreceived(from, c+bm) {
			w.why = UnjudgedMissing
			return
		}
		var sum int64
		for k := from; k <= c; k += bm {
			sum += r.at(k, r.done[:])
		}
		n = max(n, sum)
	}
	switch {
	case n >= AdviceMinRequests && w.java && w.ms%bm == 0:
		w.state = winHigh
	case n >= AdviceMinRequests:
		w.why = UnjudgedResolution
	case n < w.minReq:
		w.why = UnjudgedCounts
	default:
		w.state = winLow
		k := javaTripBad(t.thr, n)
		lower := WilsonLower(k, n)
		t.ev, t.margin = Evidence{K: k, N: n, Lower: round(lower, 2)}, lower-t.thr
	}
}

// at is a bucket's count in counts (r.pass or r.done): 0 for a bucket the
// series did not take or the ring no longer holds.
func (r *lowSeconds) at(start int64, counts []uint16) int64 {
	if start < r.since || start > r.last || r.last-start >= lowSecondsLen*r.bm {
		return 0
	}
	return int64(counts[r.slot(start)])
}

// reportedBefore reports whether the instance reported traffic on some
// resource at or before t: Java writes no line for a second without
// traffic, so a resource's silence after that, before its first line, is
// no traffic.
func (in *instState) reportedBefore(t int64) bool {
	for _, o := range in.seriesList {
		if o.traffic && o.firstAt <= t {
			return true
		}
	}
	return false
}

// javaTripBad is the fewest bad calls of n on which a Java 1.8 breaker
// trips at threshold thr: its ratio must exceed it (a slow ratio of 1
// trips at 1).
func javaTripBad(thr float64, n int64) int64 {
	if thr >= 1 {
		return n
	}
	return min(int64(math.Floor(thr*float64(n)+1e-9))+1, n)
}

// bucket keeps the buckets of a series with a Java ratio breaker (or an
// inferred trip waiting), and judges the windows the bucket completes.
func (d *lowDetector) bucket(s *series, b *takenBucket) {
	r := s.lowSecs
	if r == nil {
		if !s.javaRatio {
			return
		}
		r = &lowSeconds{whole: s.reportedMs <= b.bm} // this is the series' first bucket
		s.lowSecs = r
	}
	r.take(b.Start, b.bm, b.pass, max(b.Complete, 0))
	if r.awaiting > 0 {
		s.ar.low.judgeWaiting(s)
	}
}

// judgeWaiting judges the windows of s's trips that were waiting for
// their seconds, and counts those still waiting.
func (l *lowConf) judgeWaiting(s *series) {
	waiting := 0
	for i := 0; i < len(l.pending); i++ {
		p := &l.pending[i]
		if p.b.s != s || p.win.state != winAwait {
			continue
		}
		if p.win.judge(p, s); p.win.state == winAwait {
			waiting++
			continue
		}
		l.gen++
		if p.win.state == winHigh {
			l.take(p.b)
			i--
		}
	}
	k := 0
	for i := range l.waiting {
		t := l.waiting[i]
		if t.b.s == s {
			t.win.judge(&t, s)
		}
		if t.win.state == winAwait {
			waiting += int(b2i(t.b.s == s))
			l.waiting[k] = t
			k++
			continue
		}
		l.settle(t)
	}
	clear(l.waiting[k:])
	l.waiting = l.waiting[:k]
	s.lowSecs.awaiting = waiting
}

// hasJavaRatioBreaker reports whether rr has a ratio breaker of Java
// Sentinel 1.8, whose inferred trips are judged from its buckets.
func hasJavaRatioBreaker(rr *resRules) bool {
	if rr == nil {
		return false
	}
	for i := range rr.Breakers {
		if r := &rr.Breakers[i]; r.Strategy.IsRatio() && r.Semantics == core.SemanticsJava {
			return true
		}
	}
	return false
}

// lowUnjudged sums an app x resource's inferred trips whose window could
// not be judged.
type lowUnjudged struct {
	count, closed int64
	whys          [unjudgedKinds]int64
	insts         []*instState
	from, to      int64
}

// add counts a trip (its why, or missing for one whose seconds never came).
func (u *lowUnjudged) add(t *lowTrip) {
	why := t.win.why
	if t.win.state == winAwait || why == 0 {
		why = UnjudgedMissing
	}
	if u.count == 0 {
		u.from, u.to = t.at, t.at
	}
	u.count++
	u.closed += b2i(t.closedAt > 0)
	u.whys[why]++
	u.from, u.to = min(u.from, t.at), max(u.to, t.at, t.closedAt)
	if !slices.Contains(u.insts, t.b.s.inst) {
		u.insts = append(u.insts, t.b.s.inst)
	}
}

// why is the reason of the most trips (the first, of a tie).
func (u *lowUnjudged) why() UnjudgedWhy {
	best := UnjudgedWhy(0)
	for w := range UnjudgedWhy(unjudgedKinds) {
		if u.whys[w] > u.whys[best] {
			best = w
		}
	}
	return best
}

// unjudgedAt is the trips not judged at now: those settled so, those
// pending that cannot be, and those that have waited for their seconds
// longer than stale.
func (l *lowConf) unjudgedAt(now, stale int64) lowUnjudged {
	u := l.unjudged
	cloned := false
	add := func(t *lowTrip) {
		if !cloned {
			u.insts, cloned = slices.Clone(u.insts), true // l.unjudged's stay as they are
		}
		u.add(t)
	}
	for i := range l.pending {
		if p := &l.pending[i]; p.win.state == winUnjudged || p.win.state == winAwait && now-p.at > stale {
			add(p)
		}
	}
	for i := range l.waiting {
		if t := &l.waiting[i]; now-t.at > stale {
			add(t)
		}
	}
	return u
}

// Unjudged is one app x resource's trips that a kind could not judge from
// the input, and why: low-confidence-trip's inferred Java trips whose
// window's calls are not known. Trips whose first probe failed are judged
// (not low-confidence) whatever their window, and are not among them.
type Unjudged struct {
	Kind          Kind
	App, Resource string
	// Instances of the trips, sorted.
	Instances []string
	// Trips not judged, ClosedAtFirstProbe of them closed by the first
	// probe after them; Why the reason of the most of them.
	Trips, ClosedAtFirstProbe int64
	Why                       UnjudgedWhy
	// From and To bound them, Unix ms.
	From, To int64
}

// Unjudged lists, at now, the trips that could not be judged, by app and
// resource. An inferred trip whose seconds have not come is waited for
// StaleMs before it is listed.
func (e *Engine) Unjudged(now int64) []Unjudged {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Unjudged
	for _, ar := range e.low.ars {
		u := ar.low.unjudgedAt(now, e.cfg.StaleMs)
		if u.count == 0 {
			continue
		}
		out = append(out, Unjudged{Kind: KindLowConfidenceTrip, App: ar.app.name, Resource: ar.resource,
			Instances: names(sortInsts(slices.Clone(u.insts))), Trips: u.count, ClosedAtFirstProbe: u.closed, Why: u.why(),
			From: u.from, To: u.to})
	}
	slices.SortFunc(out, func(a, b Unjudged) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}
