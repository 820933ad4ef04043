package triage

import (
	"math"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// The low-confidence-trip detector: trips of ratio breakers whose window
// held too few completions to tell a failing downstream from a few unlucky
// calls. A sliding window crosses the threshold one call at a time, so a
// trip's ratio sits at the threshold however strong the evidence: the size
// of the window is what is judged, and the first probe after the trip, which
// shows whether the downstream really was failing. Java Sentinel's trips
// are inferred from per-second counts and have no snapshot: their windows
// are bounded from the counts (lowjava.go).

// ColdStartMs is how soon after its instance's process start (hello
// startedAt) a trip counts as a cold start.
const ColdStartMs = 60_000

// lowTrip is one trip on fewer than AdviceMinRequests completions, or, for
// an inferred trip, one whose window is not judged yet or cannot be.
type lowTrip struct {
	b        *breaker
	at       int64
	ev       Evidence
	margin   float64 // the unrounded lower bound minus the threshold
	thr      float64
	strategy core.Strategy
	atThr    bool
	// cold: the trip came within ColdStartMs of the process start;
	// coldKnown: that start is known.
	cold, coldKnown bool
	rule            core.BreakerRule // the instance's rule for the breaker at the trip
	hasRule         bool
	// closedAt is when the first probe after the trip closed the breaker
	// (0: it did not, or not yet): a trip again within the rule's
	// statIntervalMs after it shows the downstream was failing.
	closedAt int64
	// inferred: a Java trip, judged from per-second counts (lowjava.go);
	// win is what is known of its window.
	inferred bool
	win      javaWindow
}

// weaker reports whether t rested on less evidence than u: a lower bound
// further under its threshold, then a smaller window, then earlier.
func (t *lowTrip) weaker(u *lowTrip) bool {
	if t.margin != u.margin {
		return t.margin < u.margin
	}
	if t.ev.N != u.ev.N {
		return t.ev.N < u.ev.N
	}
	return t.at < u.at
}

// retripMs is how soon after the closing probe a new trip shows that the
// downstream was failing: the rule's statIntervalMs (0 when the rule is
// unknown: only a trip at the same instant).
func (t *lowTrip) retripMs() int64 {
	if !t.hasRule {
		return 0
	}
	return int64(t.rule.StatIntervalMs)
}

// lowTally sums trips.
type lowTally struct {
	count, atThr, closed, cold, coldKnown, inferred int64
	worst                                           lowTrip
	from, to                                        int64
}

// add counts a trip, closed at its first probe at end or not (end 0).
func (c *lowTally) add(t *lowTrip, closed bool, end int64) {
	end = max(end, t.at)
	if c.count == 0 {
		c.worst, c.from, c.to = *t, t.at, end
	} else if t.weaker(&c.worst) {
		c.worst = *t
	}
	c.from, c.to = min(c.from, t.at), max(c.to, end)
	c.count++
	c.atThr += b2i(t.atThr)
	c.closed += b2i(closed)
	c.cold += b2i(t.cold && t.coldKnown)
	c.coldKnown += b2i(t.coldKnown)
	c.inferred += b2i(t.inferred)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

type lowConf struct {
	listed  bool
	settled lowTally                // trips whose first probe closed the breaker, or that never had one
	insts   map[*instState]struct{} // of the settled trips
	// sorted are insts sorted (sortInsts), all but added, the ones settled
	// since the last sum: a fleet's thousands of instances are not sorted
	// again at every trip. sortedNames and sortedSeries (of the resource)
	// are theirs, read at each sum without visiting each instance.
	sorted       []*instState
	added        []*instState
	sortedNames  []string
	sortedSeries []*series
	// pending are the trips awaiting their first probe, or, closed by it,
	// a trip again within statIntervalMs: one per breaker at most.
	pending []lowTrip
	// waiting are inferred trips settled before their window's seconds
	// came (lowjava.go), at most maxWaiting, and unjudged those whose
	// window cannot be judged.
	waiting  []lowTrip
	unjudged lowUnjudged
	// gen counts the changes to the trips; made is what lowFindings took
	// from them at made.gen.
	gen  int
	made lowMade
}

// lowMade is an app x resource's trips summed (settled and pending), their
// instances sorted, their names and series of the resource, as of gen
// (ok: made).
type lowMade struct {
	ok     bool
	gen    int
	c      lowTally
	names  []string
	series []*series
	qps    []float64 // scratch for the median
}

// transition follows a breaker's trips and the first probe after each:
// a trip on too few completions is held until its first probe decides. A
// failed probe shows the downstream was failing and drops the trip; a probe
// that closes the breaker counts it, unless the breaker trips again within
// statIntervalMs after that probe (which drops it too); a new trip before
// any probe, or a CLOSED without a probe, settles it.
func (d *lowDetector) transition(b *breaker, t *core.Transition) {
	l := &b.s.ar.low
	switch {
	case t.From == core.Closed && t.To == core.Open:
		if p, ok := l.take(b); ok {
			if p.closedAt == 0 || t.AtMs-p.closedAt > p.retripMs() {
				l.settle(p)
			}
		}
		tr, ok := lowTripOf(b, *t)
		if !ok {
			return
		}
		if tr.inferred {
			if tr.win.judge(&tr, b.s); tr.win.state == winHigh {
				return // it may have rested on 20 calls or more
			}
		}
		l.pending = append(l.pending, tr)
		l.gen++
		d.list(b.s.ar)
	case t.From == core.HalfOpen && t.To == core.Open:
		if i := l.find(b); i >= 0 && l.pending[i].closedAt == 0 {
			l.take(b)
		}
	case t.From == core.HalfOpen && t.To == core.Closed:
		if i := l.find(b); i >= 0 && l.pending[i].closedAt == 0 {
			l.pending[i].closedAt = max(t.AtMs, l.pending[i].at)
			l.gen++
		}
	case t.To == core.Closed:
		if p, ok := l.take(b); ok {
			l.settle(p)
		}
	}
}

// list makes ar one of the detector's.
func (d *lowDetector) list(ar *appRes) {
	if !ar.low.listed {
		ar.low.listed = true
		d.ars = append(d.ars, ar)
	}
}

// find is the index of the breaker's pending trip, -1 if none.
func (l *lowConf) find(b *breaker) int {
	for i := range l.pending {
		if l.pending[i].b == b {
			return i
		}
	}
	return -1
}

// take removes the breaker's pending trip, reporting whether it had one.
func (l *lowConf) take(b *breaker) (lowTrip, bool) {
	i := l.find(b)
	if i < 0 {
		return lowTrip{}, false
	}
	t := l.pending[i]
	last := len(l.pending) - 1
	l.pending[i] = l.pending[last]
	l.pending[last] = lowTrip{}
	l.pending = l.pending[:last]
	l.gen++
	return t, true
}

// settle counts a trip taken from pending: closed at its first probe (at
// t.closedAt) or not; its window judged, waiting for its seconds, or not
// to be judged.
func (l *lowConf) settle(t lowTrip) {
	l.gen++
	switch t.win.state {
	case winAwait:
		if len(l.waiting) < maxWaiting {
			l.waiting = append(l.waiting, t)
		} else {
			l.unjudged.add(&t)
		}
		return
	case winUnjudged:
		l.unjudged.add(&t)
		return
	case winHigh:
		return
	}
	l.settled.add(&t, t.closedAt > 0, t.closedAt)
	if l.insts == nil {
		l.insts = map[*instState]struct{}{}
	}
	if in := t.b.s.inst; !has(l.insts, in) {
		l.insts[in] = struct{}{}
		l.added = append(l.added, in)
	}
}

func has[K comparable](m map[K]struct{}, k K) bool {
	_, ok := m[k]
	return ok
}

// lowTripOf judges a CLOSED -> OPEN: a ratio breaker whose window held
// fewer than AdviceMinRequests completions (and at least one: a trip
// without a snapshot is not judged), or an inferred trip of a resource
// with a ratio breaker, whose window is judged from the counts.
func lowTripOf(b *breaker, t core.Transition) (lowTrip, bool) {
	if t.Inferred {
		return javaTripOf(b, t)
	}
	n, k, thr := t.Snapshot.Total, t.Snapshot.Bad, t.Threshold
	if !t.Strategy.IsRatio() || n <= 0 || n >= AdviceMinRequests || k < 0 || k > n ||
		math.IsNaN(thr) || thr < 0 || thr > 1 {
		return lowTrip{}, false
	}
	lower := WilsonLower(k, n)
	tr := lowTrip{
		b: b, at: t.AtMs, ev: Evidence{K: k, N: n, Lower: round(lower, 2)}, margin: lower - thr,
		thr: thr, strategy: t.Strategy, atThr: float64(k)/float64(n) == thr,
	}
	tr.cold, tr.coldKnown = coldStart(b.s.inst, t.AtMs)
	tr.rule, tr.hasRule = tripRule(b.s.inst, t)
	return tr, true
}

// coldStart reports whether a trip at `at` came within ColdStartMs of its
// instance's process start, and whether that start is known (hello
// startedAt; Java Sentinel's transport and metric logs do not give it).
// The first traffic an input shows is not the process's: a recording, a
// reconnect's backfill or a metric log may begin long after the start.
func coldStart(in *instState, at int64) (cold, known bool) {
	start := in.id.StartedAt
	if start <= 0 {
		return false, false
	}
	return at >= start && at-start <= ColdStartMs, true
}

// tripRule is the instance's breaker rule that tripped: same resource, id
// and strategy, the same threshold if one has it.
func tripRule(in *instState, t core.Transition) (core.BreakerRule, bool) {
	rr := in.rulesOf(t.Resource)
	if rr == nil {
		return core.BreakerRule{}, false
	}
	found := -1
	for i, r := range rr.Breakers {
		if r.ID != t.RuleID || r.Strategy != t.Strategy {
			continue
		}
		if r.Threshold == t.Threshold {
			return r, true
		}
		if found < 0 {
			found = i
		}
	}
	if found < 0 {
		return core.BreakerRule{}, false
	}
	return rr.Breakers[found], true
}

// lowDetector is the low-confidence-trip detector's own state: the engine it
// observes, and its ars: app x resource with a trip held, counted or not
// judged.
type lowDetector struct {
	e   *Engine
	ars []*appRes
}

func (d *lowDetector) init(e *Engine) detector { d.e = e; return d }
func (*lowDetector) kind() Kind                { return KindLowConfidenceTrip }

// low-confidence-trip: count is the trips settled and those still awaiting
// their first probe, or a trip again after the probe that closed them;
// worst the one whose lower bound sits furthest under its threshold (then
// the smaller window, then the earliest); From is the first of them, To the
// last of them or of the CLOSED that ended one. The advice's QPS is the
// median over the instances of each one's QPS for the resource, and its
// current values are the weakest trip's rule. Always a warning. Trips that
// could not be judged are not counted: the facts say how many there were
// (and Unjudged lists them).
func (d *lowDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	for _, ar := range e.low.ars {
		m := ar.low.sum(ar.resource)
		c := &m.c
		if c.count == 0 {
			continue
		}
		m.qps = m.qps[:0]
		for _, s := range m.series {
			m.qps = append(m.qps, s.qps())
		}
		w := &c.worst
		x := &LowConfidenceFacts{
			Count: c.count, Worst: w.ev, AtThreshold: c.atThr, ClosedAtFirstProbe: c.closed,
			Inferred: c.inferred > 0, InferredTrips: c.inferred, WorstInferred: w.inferred,
			ColdKnown: c.coldKnown, Threshold: w.thr, Strategy: w.strategy, QPS: round(medianOf(m.qps), 1),
		}
		if c.coldKnown > 0 {
			cold := c.cold
			x.ColdStart = &cold
		}
		if u := ar.low.unjudgedAt(now, e.cfg.StaleMs); u.count > 0 {
			x.Unjudged, x.UnjudgedWhy = u.count, u.why()
		}
		if w.hasRule {
			x.Rule = &w.rule
		}
		x.Suggest = lowSuggest(x.Rule, x.QPS)
		f := Finding{
			Kind: KindLowConfidenceTrip, Severity: Warning, App: ar.app.name, Resource: ar.resource,
			Instances: m.names, From: c.from, To: c.to, Facts: x,
		}
		words(&f)
		out = append(out, f)
	}
	return out
}

// sum is the trips summed with their instances, made again only after a
// trip changed; only the instances' QPS are read at every call. Trips
// whose window is not judged are left out. The settled trips' instances
// are kept sorted (sorted): those settled since the last call, and the
// pending trips' (a breaker's at most), are merged in.
func (l *lowConf) sum(resource string) *lowMade {
	m := &l.made
	if m.ok && m.gen == l.gen {
		return m
	}
	if len(l.added) > 0 {
		l.sorted = mergeInsts(l.sorted, sortInsts(l.added))
		clear(l.added)
		l.added = l.added[:0]
		// Made anew, never written: findings share them.
		l.sortedNames, l.sortedSeries = names(l.sorted), appendSeries(nil, l.sorted, resource)
	}
	c := l.settled
	var pending []*instState
	for i := range l.pending {
		p := &l.pending[i]
		if p.win.state != winLow {
			continue
		}
		c.add(p, p.closedAt > 0, p.closedAt)
		if !has(l.insts, p.b.s.inst) {
			pending = append(pending, p.b.s.inst)
		}
	}
	ns, series := l.sortedNames, append(m.series[:0], l.sortedSeries...)
	if len(pending) > 0 {
		// The order of the series is the median's: any.
		pending = sortInsts(pending)
		ns, series = mergeNames(ns, names(pending)), appendSeries(series, pending, resource)
	}
	*m = lowMade{ok: true, gen: l.gen, c: c, names: ns, series: series, qps: m.qps}
	return m
}

// appendSeries appends the instances' series of resource to out.
func appendSeries(out []*series, insts []*instState, resource string) []*series {
	for _, in := range insts {
		if s := in.series[resource]; s != nil {
			out = append(out, s)
		}
	}
	return out
}

// lowSuggest: minRequestAmount AdviceMinRequests, and a statIntervalMs
// that holds that many requests at qps when the rule's does not (or is
// unknown).
func lowSuggest(r *core.BreakerRule, qps float64) LowConfidenceSuggest {
	s := LowConfidenceSuggest{MinRequestAmount: AdviceMinRequests}
	if qps > 0 {
		if need := adviceInterval(qps, r); r == nil || int64(r.StatIntervalMs) < need {
			s.StatIntervalMs = uint32(min(need, math.MaxUint32))
		}
	}
	return s
}

// LowConfidenceFacts: trips that rested on too few requests.
type LowConfidenceFacts struct {
	// Count is the trips, Worst the one with the least evidence.
	Count int64    `json:"count"`
	Worst Evidence `json:"worst"`
	// AtThreshold counts trips whose ratio equalled the threshold exactly
	// (sentinel-golang trips at >=, Java Sentinel 1.8 only above);
	// ClosedAtFirstProbe those whose first probe closed the breaker;
	// ColdStart those within ColdStartMs of their instance's process
	// start, of the ColdKnown trips whose start is known (nil when none
	// is: unknown, not zero).
	AtThreshold        int64  `json:"atThreshold"`
	ClosedAtFirstProbe int64  `json:"closedAtFirstProbe"`
	ColdStart          *int64 `json:"coldStart,omitempty"`
	// Inferred is set when InferredTrips, trips of Java Sentinel inferred
	// from per-second counts, are among them: their windows are bounded
	// from the counts (at most the completions of the window's seconds),
	// and WorstInferred says that Worst is one of them (its N is that
	// bound, its K the fewest bad calls on which Java trips with N).
	Inferred bool `json:"inferred,omitempty"`
	// Suggest is the rule values the advice proposes.
	Suggest LowConfidenceSuggest `json:"suggest"`

	ColdKnown     int64 `json:"-"`
	InferredTrips int64 `json:"-"`
	WorstInferred bool  `json:"-"`
	// Unjudged counts the resource's inferred trips whose window could
	// not be judged, for the most of them why.
	Unjudged    int64       `json:"-"`
	UnjudgedWhy UnjudgedWhy `json:"-"`

	// Threshold and Strategy are the weakest trip's; Rule its instance's
	// rule at the trip (nil when unknown); QPS the observed load, 0 when
	// unknown.
	Threshold float64           `json:"-"`
	Strategy  core.Strategy     `json:"-"`
	Rule      *core.BreakerRule `json:"-"`
	QPS       float64           `json:"-"`
}

// LowConfidenceSuggest is low-confidence-trip's suggest: StatIntervalMs
// is 0 (left out) when the rule's window already holds the requests.
type LowConfidenceSuggest struct {
	MinRequestAmount uint64 `json:"minRequestAmount,omitempty"`
	StatIntervalMs   uint32 `json:"statIntervalMs,omitempty"`
}

// Kind is KindLowConfidenceTrip.
func (*LowConfidenceFacts) Kind() Kind { return KindLowConfidenceTrip }

// Evidence lists the trips, the weakest, how they ended and began, those
// not judged, and the values proposed.
func (f *LowConfidenceFacts) Evidence() []Fact {
	var values []string
	if f.Suggest.MinRequestAmount > 0 {
		values = append(values, "minRequestAmount "+itoa(int64(f.Suggest.MinRequestAmount)))
	}
	if f.Suggest.StatIntervalMs > 0 {
		values = append(values, "statIntervalMs "+itoa(int64(f.Suggest.StatIntervalMs)))
	}
	proposed := "no change (see the rule's plan)"
	if len(values) > 0 {
		proposed = strings.Join(values, ", ")
	}
	trips := itoa(f.Count) + " on fewer than " + itoa(AdviceMinRequests) + " calls"
	if f.InferredTrips > 0 {
		trips += " (" + itoa(f.InferredTrips) + " inferred from Java Sentinel's per-second counts: each on at most the calls its window's seconds completed)"
	}
	weakest := itoa(f.Worst.K) + " bad of " + itoa(f.Worst.N) + ", 90% lower bound " + fmtFloat(f.Worst.Lower, 2)
	if f.WorstInferred {
		weakest = "at most " + itoa(f.Worst.N) + " calls, on which Java trips with " + itoa(f.Worst.K) + " bad or more, 90% lower bound " + fmtFloat(f.Worst.Lower, 2)
	}
	out := []Fact{
		text("Trips", trips),
		text("Weakest", weakest),
		text("At the threshold exactly", itoa(f.AtThreshold)),
		text("Closed at the first probe", itoa(f.ClosedAtFirstProbe)),
		text("Cold start", coldWords(f)),
	}
	if f.Unjudged > 0 {
		out = append(out, text("Not judged", itoa(f.Unjudged)+" more "+plural(f.Unjudged, "trip", "trips")+": "+f.UnjudgedWhy.Text()))
	}
	return append(out, text("Proposed", proposed))
}

// coldWords: the cold starts among the trips whose process start is known,
// and unknown where it is not.
func coldWords(f *LowConfidenceFacts) string {
	within := " within " + itoa(ColdStartMs/1000) + " s of the process start"
	switch {
	case f.ColdStart == nil:
		return "unknown (the instances' process start is not known)"
	case f.ColdKnown < f.Count:
		return itoa(*f.ColdStart) + " of the " + itoa(f.ColdKnown) + " trips whose process start is known came" + within +
			"; unknown for the other " + itoa(f.Count-f.ColdKnown)
	}
	return itoa(*f.ColdStart) + within
}
