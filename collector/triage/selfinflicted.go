package triage

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// The self-inflicted detector: a breaker whose own bound counts the
// downstream's healthy calls as bad, so that the rule, not the
// downstream, keeps it tripping (findings-v1 revision 3).
//
// What "healthy" is here: when the rule itself keeps the breaker open,
// the healthy traffic of findings-v1 (CLOSED buckets, less the window
// before each trip) is nearly empty, since the breaker trips on its first
// window. The latency the downstream gives when it is fine is read from
// every call that passed and completed, in every bucket whatever the
// breaker's state: the calls before its first trip, those of its CLOSED
// spells and its probes (selfStats). A downstream that is failing trips
// a sound breaker, which then lets only its probes through, so the calls
// that passed are mostly those of a downstream that was fine.

// SelfMinTrips is the fewest times a breaker must have opened for its
// rule to be called the cause: a rule that keeps it tripping.
const SelfMinTrips = 2

// selfShortWindow is the most probability a healthy window may hold
// fewer errors than trip an error-count breaker for the error-count
// test: the healthy error rate exceeds the threshold in 19 windows of 20.
const selfShortWindow = 0.05

// selfStats are the completions of every bucket of a series, whatever
// its breakers' state: the latency and errors the downstream gives.
// Its counts are 32 bits, saturating (a series' 4 billionth completion
// is not counted): it is kept for every series, and read only when a
// breaker of it opened twice.
type selfStats struct {
	// hist counts completions by response time: a bucket's histogram, or,
	// for a bucket without one (Java Sentinel sends a second's mean
	// response time only), all its completions in the slot of its mean,
	// which means is then set for.
	hist             [core.HistogramSlots]uint32
	complete, errors uint32
	means            bool
}

// add counts a bucket's completions (the engine's, for every bucket).
func (st *selfStats) add(b *BucketStat) {
	n := max(b.Complete, 0)
	if n == 0 {
		return
	}
	st.complete = satAdd32(st.complete, n)
	st.errors = satAdd32(st.errors, min(max(b.Error, 0), n))
	if b.HasHist {
		for m := b.counted; m != 0; m &= m - 1 {
			i := bits.TrailingZeros16(m)
			st.hist[i] = satAdd32(st.hist[i], max(b.Hist[i], 0))
		}
		return
	}
	i := core.HistogramSlot(max(b.RtSum, 0) / n)
	st.hist[i] = satAdd32(st.hist[i], n)
	st.means = true
}

// satAdd32 is a + n, at most the largest uint32 (n >= 0).
func satAdd32(a uint32, n int64) uint32 {
	return uint32(min(int64(a)+n, math.MaxUint32))
}

// hist64 is the histogram as core's functions read it.
func (st *selfStats) hist64() (h [core.HistogramSlots]int64) {
	for i, c := range st.hist {
		h[i] = int64(c)
	}
	return h
}

// slowerThan counts the completions surely slower than bound ms: those in
// slots whose every response time is over it.
func slowerThan(h *[core.HistogramSlots]int64, bound uint64) int64 {
	var n int64
	for i := 1; i < core.HistogramSlots; i++ {
		if uint64(core.HistogramBounds[i-1]) >= bound {
			n += h[i]
		}
	}
	return n
}

// medianFloor is the least the median of a histogram can be: the lower
// edge (exclusive) of the slot holding it, 0 for the first slot.
func medianFloor(h *[core.HistogramSlots]int64) (floor, upper int64) {
	upper = core.HistogramQuantile(h, 0.5, 0)
	if upper == 0 { // the open-ended slot
		return core.HistogramBounds[len(core.HistogramBounds)-1], 0
	}
	return p99Floor(upper), upper
}

// errorsToTrip is the fewest errors in a window that trip an error-count
// breaker of threshold t: Java trips above it, sentinel-golang at its
// whole part or more.
func errorsToTrip(r *core.BreakerRule) int64 {
	if r.Semantics == core.SemanticsGo {
		return int64(r.Threshold)
	}
	return int64(math.Floor(r.Threshold)) + 1
}

// poissonQuantile is the least k with P(N <= k) >= q, N Poisson with mean
// lambda.
func poissonQuantile(lambda, q float64) int64 {
	term := math.Exp(-lambda)
	sum := term
	var k int64
	for sum < q && k < 1_000_000 {
		k++
		term *= lambda / float64(k)
		sum += term
	}
	return k
}

// selfDetector is the self-inflicted detector's own state: the engine
// it observes and the breakers that opened (the only ones it judges).
type selfDetector struct {
	e        *Engine
	breakers []*breaker
}

func (d *selfDetector) init(e *Engine) detector { d.e = e; return d }
func (*selfDetector) kind() Kind                { return KindSelfInflicted }

// transition counts the breaker's entries into OPEN, with the rule in
// force at the latest.
func (d *selfDetector) transition(b *breaker, t *core.Transition) {
	if t.To != core.Open || t.From == core.Open {
		return
	}
	s := b.s
	r := breakerRuleOf(s.rr, b.ruleID)
	if r == nil {
		return
	}
	if b.opens == 0 {
		b.firstOpenAt = t.AtMs
		d.breakers = append(d.breakers, b)
	}
	b.opens++
	b.lastOpenAt, b.openRule = t.AtMs, r
}

// breakerRuleOf is breakerRule's rule in a series' rules (rr, nil for
// none; never modified: a new rule set replaces them), nil if it has
// none.
func breakerRuleOf(rr *resRules, ruleID string) *core.BreakerRule {
	if rr != nil {
		for i := range rr.Breakers {
			if b := &rr.Breakers[i]; b.ID == ruleID || ruleID == "" {
				return b
			}
		}
	}
	return nil
}

// selfHit is one breaker whose rule counts its healthy calls bad.
type selfHit struct {
	b       *breaker
	ongoing bool
	lambda  float64 // error-count: errors a window holds at the healthy rate
	window  float64 // error-count: calls a window holds
}

// judgeSelf judges a breaker that opened: its rule (the one in force when
// it last opened) counts the calls that passed bad, a slow-ratio bound at
// or under their median or an error count their error rate exceeds in 19
// windows of 20, and it opened SelfMinTrips times or more on at least
// AdviceMinRequests completions.
func (e *Engine) judgeSelf(b *breaker, now int64) (h selfHit, ok bool) {
	s, r := b.s, b.openRule
	st := &s.si
	if b.opens < SelfMinTrips || st.complete < AdviceMinRequests {
		return h, false
	}
	switch r.Strategy {
	case core.SlowRequestRatio:
		hist := st.hist64()
		if floor, _ := medianFloor(&hist); r.MaxAllowedRtMs > uint64(floor) {
			return h, false
		}
	case core.ErrorCount:
		h.window = s.qps() * float64(r.StatIntervalMs) / 1000
		h.lambda = float64(st.errors) / float64(st.complete) * h.window
		if k := errorsToTrip(r); k > 0 && poissonBelow(h.lambda, int(min(k, math.MaxInt32))) > selfShortWindow {
			return h, false
		}
	default:
		return h, false
	}
	h.b = b
	in := s.inst
	if cur, has := breakerRule(in, s.resource, b.ruleID); has && cur == *r && e.alive(in, now) {
		h.ongoing = b.state() != core.Closed || held(b.lastOpenAt, now, e.cfg.HoldMs)
	}
	return h, true
}

// self-inflicted: one finding per app and resource, whose rule is that
// of its first instance by name (the instances whose breaker of the same
// rule id is judged so are merged); healthyBadShare is over the merged
// instances' calls that passed, trips their breakers' entries into OPEN.
// Critical while, on an instance still there that still runs the rule,
// the breaker is not CLOSED or opened less than HoldMs ago; else warning.
func (d *selfDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	var hits []selfHit
	for _, b := range d.breakers {
		if b.openRule == nil {
			continue
		}
		if h, ok := e.judgeSelf(b, now); ok {
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b selfHit) int {
		x, y := a.b.s, b.b.s
		return cmp.Or(strings.Compare(x.ar.app.name, y.ar.app.name), strings.Compare(x.resource, y.resource),
			strings.Compare(x.inst.id.Name, y.inst.id.Name), cmp.Compare(x.inst.seq, y.inst.seq), strings.Compare(a.b.ruleID, b.b.ruleID))
	})
	for i := 0; i < len(hits); {
		first := hits[i]
		ar, rule := first.b.s.ar, *first.b.openRule
		f := Finding{Kind: KindSelfInflicted, App: ar.app.name, Resource: ar.resource, From: math.MaxInt64}
		x := &SelfInflictedFacts{Rule: rule}
		var hist [core.HistogramSlots]int64
		var insts []*instState
		ongoing := false
		j := i
		for ; j < len(hits) && hits[j].b.s.ar == ar; j++ {
			h := &hits[j]
			if h.b.ruleID != rule.ID || h.b.openRule.Strategy != rule.Strategy {
				continue
			}
			b, st := h.b, &h.b.s.si
			insts = append(insts, b.s.inst)
			for k, c := range st.hist {
				hist[k] += int64(c)
			}
			x.Calls += int64(st.complete)
			x.Errors += int64(st.errors)
			x.Inferred = x.Inferred || st.means
			x.Trips += b.opens
			x.WindowCalls, x.ErrorsPerWindow = max(x.WindowCalls, h.window), max(x.ErrorsPerWindow, h.lambda)
			f.From, f.To = min(f.From, b.firstOpenAt), max(f.To, b.lastOpenAt)
			ongoing = ongoing || h.ongoing
		}
		i = j
		x.judge(&hist)
		f.Severity = severity(ongoing)
		f.Facts = x
		e.complete(&f, insts)
		out = append(out, f)
	}
	return out
}

// judge fills in the share of the calls the rule counts bad and what the
// advice proposes, from the merged instances' calls that passed.
func (x *SelfInflictedFacts) judge(hist *[core.HistogramSlots]int64) {
	r := &x.Rule
	switch r.Strategy {
	case core.SlowRequestRatio:
		x.Bad = slowerThan(hist, r.MaxAllowedRtMs)
		x.MedianFloorMs, x.MedianMs = medianFloor(hist)
		if !x.Inferred && x.Calls >= HealthyMinCompletions {
			if p99 := core.HistogramQuantile(hist, 0.99, 0); p99 > 0 {
				x.P99Ms = p99
				x.Suggest = &SelfInflictedSuggest{MaxAllowedRtMs: uint64(AdviceRtFactor * p99Floor(p99))}
			}
		}
	case core.ErrorCount:
		x.Bad = x.Errors
		// Twice what a healthy window holds 19 times in 20, as an RT bound
		// is twice the healthy p99.
		x.HealthyErrorsQ95 = poissonQuantile(x.ErrorsPerWindow, 1-selfShortWindow)
		t := float64(AdviceRtFactor * max(x.HealthyErrorsQ95, 1))
		if t > r.Threshold {
			x.Suggest = &SelfInflictedSuggest{Threshold: t}
		}
	}
	if x.Calls > 0 {
		x.HealthyBadShare = round(float64(x.Bad)/float64(x.Calls), 2)
	}
}

// SelfInflictedFacts: a breaker whose rule counts healthy calls as bad.
type SelfInflictedFacts struct {
	// Rule is the breaker rule that keeps it tripping.
	Rule core.BreakerRule `json:"rule"`
	// HealthyBadShare is the share of the calls that passed (the
	// downstream's healthy latency and errors) the rule counts bad:
	// surely slower than maxAllowedRtMs, or failed (error count).
	HealthyBadShare float64 `json:"healthyBadShare"`
	// Trips counts the breakers' entries into OPEN: trips and failed
	// probes.
	Trips int64 `json:"trips"`
	// Inferred: the response times are Java Sentinel's per-second means
	// (no histogram), each second's calls counted at its mean.
	Inferred bool `json:"inferred,omitempty"`
	// Suggest is the rule values the advice proposes: a maxAllowedRtMs of
	// twice the least the calls' p99 can be, or an error count of twice
	// what a healthy window holds 19 times in 20; nil when the input does
	// not give one.
	Suggest *SelfInflictedSuggest `json:"suggest,omitempty"`

	// Calls are the completions judged, Errors the failed ones, Bad those
	// the rule counts bad.
	Calls, Errors, Bad int64 `json:"-"`
	// MedianMs is the median of the calls' response times (the upper bound
	// of its slot; 0: over the last bound), MedianFloorMs the least it can
	// be; P99Ms their p99 (0 with fewer than HealthyMinCompletions calls
	// or from means).
	MedianMs, MedianFloorMs, P99Ms int64 `json:"-"`
	// WindowCalls (error count) is the calls one window holds at the
	// observed QPS, ErrorsPerWindow the errors among them at the healthy
	// error rate (the highest of the instances), and HealthyErrorsQ95 the
	// most errors such a window holds 19 times in 20.
	WindowCalls, ErrorsPerWindow float64 `json:"-"`
	HealthyErrorsQ95             int64   `json:"-"`
}

// SelfInflictedSuggest is self-inflicted's suggest.
type SelfInflictedSuggest struct {
	MaxAllowedRtMs uint64  `json:"maxAllowedRtMs,omitempty"`
	Threshold      float64 `json:"threshold,omitempty"`
}

// Kind is KindSelfInflicted.
func (*SelfInflictedFacts) Kind() Kind { return KindSelfInflicted }

// Evidence lists the rule, the calls it counts bad and the trips.
func (f *SelfInflictedFacts) Evidence() []Fact {
	out := []Fact{{Label: "Rule", Parts: []Part{{Text: "as loaded"}}, Rules: &RuleSet{Breakers: []core.BreakerRule{f.Rule}}}}
	switch f.Rule.Strategy {
	case core.SlowRequestRatio:
		med := "over " + itoa(f.MedianFloorMs) + " ms"
		if f.MedianMs > 0 {
			med += " (at most " + itoa(f.MedianMs) + ")"
		}
		how := ""
		if f.Inferred {
			how = ", from Java's per-second mean response times"
		}
		bound := "maxAllowedRtMs "
		if f.Rule.Semantics == core.SemanticsJava || f.Rule.Semantics == core.SemanticsJava16 {
			bound = "count "
		}
		out = append(out, text("Calls that passed", itoa(f.Calls)+", median "+med+how),
			text("Counted slow", itoa(f.Bad)+" ("+fmtFloat(100*f.HealthyBadShare, 0)+" %) over "+bound+itoa(int64(f.Rule.MaxAllowedRtMs))))
	case core.ErrorCount:
		out = append(out, text("Calls that passed", itoa(f.Calls)+", "+itoa(f.Errors)+" failed ("+fmtFloat(100*f.HealthyBadShare, 1)+" %)"),
			text("Errors per window", fmtFloat(f.ErrorsPerWindow, 1)+" of "+fmtFloat(f.WindowCalls, 1)+" calls, at most "+itoa(f.HealthyErrorsQ95)+" in 19 windows of 20"))
	}
	out = append(out, text("Trips", itoa(f.Trips)+" (entries into OPEN)"))
	if s := f.Suggest; s != nil {
		switch {
		case s.MaxAllowedRtMs > 0:
			out = append(out, text("Proposed", "maxAllowedRtMs "+itoa(int64(s.MaxAllowedRtMs))))
		case s.Threshold > 0:
			out = append(out, text("Proposed", "threshold "+fmtNum(s.Threshold)))
		}
	}
	return out
}
