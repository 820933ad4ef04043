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
// shows whether the downstream really was failing.

// ColdStartMs is how soon after an instance's first traffic on a resource a
// trip counts as a cold start.
const ColdStartMs = 60_000

// coldSeenMs is how long before a resource's first reported traffic the
// instance must have been reporting other traffic for that first report to
// be its first traffic (buckets of every active resource ship together, every
// half second).
const coldSeenMs = 1000

// lowTrip is one trip on fewer than AdviceMinRequests completions.
type lowTrip struct {
	b        *breaker
	at       int64
	ev       Evidence
	margin   float64 // the unrounded lower bound minus the threshold
	thr      float64
	strategy core.Strategy
	atThr    bool
	cold     bool
	rule     core.BreakerRule // the instance's rule for the breaker at the trip
	hasRule  bool
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

// lowTally sums trips.
type lowTally struct {
	count, atThr, closed, cold int64
	worst                      lowTrip
	from, to                   int64
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
	c.cold += b2i(t.cold)
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
	pending []lowTrip               // trips awaiting their first probe, one per breaker at most
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
	insts  []*instState
	names  []string
	series []*series
	qps    []float64 // scratch for the median
}

// transition follows a breaker's trips and the first probe after each:
// a trip on too few completions is held until its first probe decides. A
// failed probe shows the downstream was failing and drops the trip; a probe
// that closes the breaker, or a new trip before any probe, settles it.
func (d *lowDetector) transition(b *breaker, t *core.Transition) {
	l := &b.s.ar.low
	switch {
	case t.From == core.Closed && t.To == core.Open:
		l.settle(b, false, 0)
		if tr, ok := lowTripOf(b, *t); ok {
			l.pending = append(l.pending, tr)
			l.gen++
			if !l.listed {
				l.listed = true
				d.ars = append(d.ars, b.s.ar)
			}
		}
	case t.From == core.HalfOpen && t.To == core.Open:
		l.take(b)
	case t.To == core.Closed:
		l.settle(b, t.From == core.HalfOpen, t.AtMs)
	}
}

// take removes the breaker's pending trip, reporting whether it had one.
func (l *lowConf) take(b *breaker) (lowTrip, bool) {
	for i := range l.pending {
		if l.pending[i].b == b {
			t := l.pending[i]
			last := len(l.pending) - 1
			l.pending[i] = l.pending[last]
			l.pending[last] = lowTrip{}
			l.pending = l.pending[:last]
			l.gen++
			return t, true
		}
	}
	return lowTrip{}, false
}

// settle counts the breaker's pending trip, closed at end (at its first
// probe or not) or still open (end 0).
func (l *lowConf) settle(b *breaker, closed bool, end int64) {
	t, ok := l.take(b)
	if !ok {
		return
	}
	l.settled.add(&t, closed, end)
	if l.insts == nil {
		l.insts = map[*instState]struct{}{}
	}
	l.insts[b.s.inst] = struct{}{}
}

// lowTripOf judges a CLOSED -> OPEN: a ratio breaker whose window held
// fewer than AdviceMinRequests completions (and at least one: a trip
// without a snapshot is not judged).
func lowTripOf(b *breaker, t core.Transition) (lowTrip, bool) {
	n, k, thr := t.Snapshot.Total, t.Snapshot.Bad, t.Threshold
	if !t.Strategy.IsRatio() || n <= 0 || n >= AdviceMinRequests || k < 0 || k > n ||
		math.IsNaN(thr) || thr < 0 || thr > 1 {
		return lowTrip{}, false
	}
	lower := WilsonLower(k, n)
	tr := lowTrip{
		b: b, at: t.AtMs, ev: Evidence{K: k, N: n, Lower: round(lower, 2)}, margin: lower - thr,
		thr: thr, strategy: t.Strategy, atThr: float64(k)/float64(n) == thr,
		cold: coldStart(b.s, t.AtMs),
	}
	tr.rule, tr.hasRule = tripRule(b.s.inst, t)
	return tr, true
}

// coldStart reports whether a trip at `at` came within ColdStartMs of the
// instance's first traffic on the resource, as far as the input tells: the
// first traffic reported is the first only if the process started shortly
// before, or the instance was already reporting other traffic.
func coldStart(s *series, at int64) bool {
	in := s.inst
	if in.id.StartedAt > 0 && at >= in.id.StartedAt && at-in.id.StartedAt <= ColdStartMs {
		return true // any traffic of this process came after its start
	}
	first := at
	if s.traffic {
		first = min(s.firstAt, at)
	}
	if at-first > ColdStartMs || (in.id.StartedAt > 0 && in.id.StartedAt > first) {
		return false // too late, or a restart after the first traffic seen
	}
	for _, o := range in.seriesList {
		if o != s && o.traffic && o.firstAt+coldSeenMs <= first {
			return true
		}
	}
	return false
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
// observes, and its ars: app x resource with a low-confidence trip.
type lowDetector struct {
	e   *Engine
	ars []*appRes
}

func (d *lowDetector) init(e *Engine) detector { d.e = e; return d }
func (*lowDetector) kind() Kind                { return KindLowConfidenceTrip }

// low-confidence-trip: count is the trips settled and those still awaiting
// their first probe; worst the one whose lower bound sits furthest under
// its threshold (then the smaller window, then the earliest); From is the
// first of them, To the last of them or of the CLOSED that ended one. The advice's QPS is the median over the
// instances of each one's QPS for the resource, and its current values are
// the weakest trip's rule. Always a warning.
func (d *lowDetector) findings(_ int64, out []Finding) []Finding {
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
			Count: c.count, Worst: w.ev, AtThreshold: c.atThr, ClosedAtFirstProbe: c.closed, ColdStart: c.cold,
			Threshold: w.thr, Strategy: w.strategy, QPS: round(medianOf(m.qps), 1),
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
// trip changed; only the instances' QPS are read at every call.
func (l *lowConf) sum(resource string) *lowMade {
	m := &l.made
	if m.ok && m.gen == l.gen {
		return m
	}
	c := l.settled
	insts := make([]*instState, 0, len(l.insts)+len(l.pending))
	for in := range l.insts {
		insts = append(insts, in)
	}
	for i := range l.pending {
		c.add(&l.pending[i], false, 0)
		insts = append(insts, l.pending[i].b.s.inst)
	}
	insts = sortInsts(insts)
	var series []*series
	for _, in := range insts {
		if s := in.series[resource]; s != nil {
			series = append(series, s)
		}
	}
	*m = lowMade{ok: true, gen: l.gen, c: c, insts: insts, names: names(insts), series: series, qps: m.qps}
	return m
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
	// ColdStart those within ColdStartMs of the instance's first traffic.
	AtThreshold        int64 `json:"atThreshold"`
	ClosedAtFirstProbe int64 `json:"closedAtFirstProbe"`
	ColdStart          int64 `json:"coldStart"`
	// Suggest is the rule values the advice proposes.
	Suggest LowConfidenceSuggest `json:"suggest"`

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

// Evidence lists the trips, the weakest, how they ended and began, and the
// values proposed.
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
	return []Fact{
		text("Trips", itoa(f.Count)+" on fewer than "+itoa(AdviceMinRequests)+" calls"),
		text("Weakest", itoa(f.Worst.K)+" bad of "+itoa(f.Worst.N)+", 90% lower bound "+fmtFloat(f.Worst.Lower, 2)),
		text("At the threshold exactly", itoa(f.AtThreshold)),
		text("Closed at the first probe", itoa(f.ClosedAtFirstProbe)),
		text("Cold start", itoa(f.ColdStart)+" within "+itoa(ColdStartMs/1000)+" s of first traffic"),
		text("Proposed", proposed),
	}
}
