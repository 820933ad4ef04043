package triage

import (
	"math"

	"github.com/sentinel-top/sentinel-top/core"
)

// The rule-advice detector: ratio breakers whose settings do not fit the
// healthy traffic seen.

// adviceJudgment is one instance's ratio breaker judged against its series.
type adviceJudgment struct {
	in     *instState
	rule   *core.BreakerRule // in the instance's rules, never modified
	qps    float64
	p99    int64 // healthy, slow-ratio rules only; 0 without one
	window bool  // fewer than AdviceMinRequests requests in a window
	rt     bool  // maxAllowedRtMs under AdviceRtFactor x the least the healthy p99 can be
}

// judgeAdvice judges the instance's ratio breakers of the series' resource,
// in their canonical order, and returns the first that does not fit.
func judgeAdvice(in *instState, s *series) (j adviceJudgment, fires bool) {
	rr := s.rr
	if rr == nil || !s.traffic {
		return j, false
	}
	qps := s.qps()
	p99, hasP99 := s.healthyP99()
	for i := range rr.Breakers {
		r := &rr.Breakers[i]
		if !r.Strategy.IsRatio() {
			continue
		}
		j = adviceJudgment{in: in, rule: r, qps: qps}
		j.window = qps*float64(r.StatIntervalMs)/1000 < AdviceMinRequests
		if r.Strategy == core.SlowRequestRatio {
			if hasP99 {
				j.p99 = p99
				j.rt = r.MaxAllowedRtMs < uint64(AdviceRtFactor*p99Floor(p99))
			}
			j.rt = j.rt || ratioAsRt(*r)
		}
		if r.MinRequestAmount < AdviceMinRequests || j.window || j.rt {
			return j, true
		}
	}
	return j, false
}

// ratioAsRt reports whether a slow-ratio rule's maxAllowedRtMs is a ratio
// typed where a response time belongs: Java rounds count 0.5 to 1 ms.
func ratioAsRt(r core.BreakerRule) bool {
	return r.Strategy == core.SlowRequestRatio && r.MaxAllowedRtMs <= 1
}

// rule-advice: every instance's ratio breakers of a resource are judged
// against that instance's traffic (the first of them in canonical order
// that does not fit counts); the instances where one does not fit are
// merged into one finding per app and resource, quoting the rule of the
// first of them by name. qps is the median of their QPS (series.qps: the
// mean offered load, as low-confidence-trip takes it), windowRequests qps x
// statIntervalMs / 1000, minRequestSeconds minRequestAmount / qps, p99Ms
// the highest of their healthy p99s (slow-ratio only, absent without one:
// the RT a rule must allow on all of them) and rtOverP99 maxAllowedRtMs /
// p99Ms. It fires when
// minRequestAmount < AdviceMinRequests, windowRequests <
// AdviceMinRequests, or (slow-ratio) maxAllowedRtMs < AdviceRtFactor x the
// healthy p99 or at most 1 ms; it suggests minRequestAmount
// AdviceMinRequests, the statIntervalMs (whole seconds) that holds
// AdviceMinRequests requests at qps, and maxAllowedRtMs AdviceRtFactor x
// p99Ms, each where it does not fit. Always info.
func (d *adviceDetector) findings(_ int64, out []Finding) []Finding {
	e := d.e
	e.judgeDirtyAdvice()
	d.gen++ // a bucket's series may be judged at once again
	for _, ar := range d.ars {
		a := &ar.advice
		if a.stale {
			a.stale = false
			a.has = a.refresh(ar) && e.adviceFinding(ar, &a.f)
		}
		if a.has {
			out = append(out, a.f)
		}
	}
	return out
}

// adviceFinding makes ar's finding from the sums of its firing series'
// judgments and the judgment of its first (by instance); they are not
// empty.
func (e *Engine) adviceFinding(ar *appRes, f *Finding) bool {
	a := &ar.advice
	first := a.firing[0].advice.j // of the first instance by name
	a.findExtremes()
	p99 := max(a.p99, 0)
	window, rt := a.nWindow > 0, a.nRt > 0
	from, to := a.first, max(a.end, 0)
	r, qps := *first.rule, medianSorted(a.qps)
	x := &RuleAdviceFacts{Rule: r, P99Ms: p99}
	// The numbers derive from the QPS shown, so that they can be checked.
	x.QPS = round(qps, 1)
	if x.QPS > 0 {
		qps = x.QPS
	}
	x.WindowRequests = round(qps*float64(r.StatIntervalMs)/1000, 1)
	x.MinRequestSeconds = round(float64(r.MinRequestAmount)/qps, 2)
	if x.P99Ms > 0 {
		x.RtOverP99 = round(float64(r.MaxAllowedRtMs)/float64(x.P99Ms), 2)
	}
	if r.MinRequestAmount < AdviceMinRequests {
		x.Suggest.MinRequestAmount = AdviceMinRequests
	}
	if need := int64(0); window {
		if need = adviceInterval(qps, &r); need > int64(r.StatIntervalMs) {
			x.Suggest.StatIntervalMs = uint32(min(need, math.MaxUint32))
		}
	}
	if x.P99Ms > 0 {
		x.P99FloorMs = p99Floor(x.P99Ms)
	}
	if rt && x.P99FloorMs > 0 {
		x.Suggest.MaxAllowedRtMs = uint64(AdviceRtFactor * x.P99FloorMs)
	}
	if r.Semantics == core.SemanticsJava16 {
		// Sentinel before 1.8 has no statIntervalMs (its window is 1 s) and,
		// in 1.6, a fixed minRequestAmount: a field a rule does not have is
		// never proposed for it (findings-v1 revision 3).
		x.Legacy = x.Suggest.MinRequestAmount > 0 || x.Suggest.StatIntervalMs > 0
		x.Suggest.MinRequestAmount, x.Suggest.StatIntervalMs = 0, 0
	}
	*f = Finding{
		Kind: KindRuleAdvice, Severity: Info, App: ar.app.name, Resource: ar.resource,
		Instances: a.names, From: from, To: to, Facts: x,
	}
	words(f)
	return true
}

// adviceInterval is the statIntervalMs, in whole seconds, whose window
// holds AdviceMinRequests requests at qps with 95 % probability, the calls
// arriving as a Poisson process (findings-v1 revision 3): sized on the
// mean, a window holds fewer 40-50 % of the time, and a breaker that
// needs that many calls may then not trip for several windows. The span
// a window is sure to cover is its shape's: a sentinel-golang window of b
// buckets covers at least (b-1)/b of its interval (its oldest bucket
// leaves whole), Java's tumbling window all of it only at its end. For a
// sentinel-golang rule r of several buckets the interval is also a
// multiple of their count, which Sentinel otherwise silently turns into
// one bucket (window-misaligned). r nil: a one-bucket window.
func adviceInterval(qps float64, r *core.BreakerRule) int64 {
	buckets := int64(1)
	if r != nil && r.Semantics == core.SemanticsGo && r.StatSlidingWindowBucketCount > 1 {
		buckets = int64(r.StatSlidingWindowBucketCount)
	}
	covered := func(ms int64) float64 {
		if buckets > 1 {
			return float64(ms) * float64(buckets-1) / float64(buckets)
		}
		return float64(ms)
	}
	ms := int64(1000)
	for ; ms < 3_600_000; ms += 1000 {
		if ms%buckets != 0 {
			continue
		}
		if poissonBelow(qps*covered(ms)/1000, AdviceMinRequests) <= adviceShortWindow {
			break
		}
	}
	return ms
}

// adviceShortWindow is the most probability a window sized by
// adviceInterval may hold fewer than AdviceMinRequests calls.
const adviceShortWindow = 0.05

// poissonBelow is P(N < k) for N Poisson with mean lambda.
func poissonBelow(lambda float64, k int) float64 {
	if lambda <= 0 {
		return 1
	}
	term, sum := math.Exp(-lambda), 0.0
	for i := range k {
		sum += term
		term *= lambda / float64(i+1)
	}
	return sum
}

// RuleAdviceFacts: a ratio breaker's settings against the healthy traffic
// of the instances it does not fit.
type RuleAdviceFacts struct {
	// QPS is the median of the instances' mean offered loads;
	// WindowRequests the requests it puts in one statistic window;
	// MinRequestSeconds the seconds of it minRequestAmount takes.
	QPS               float64 `json:"qps"`
	WindowRequests    float64 `json:"windowRequests"`
	MinRequestSeconds float64 `json:"minRequestSeconds"`
	// P99Ms is the highest healthy p99 among the instances (the upper
	// bound of its histogram slot), 0 (left out) without one or for an
	// error-ratio rule; RtOverP99 is maxAllowedRtMs / P99Ms.
	// P99FloorMs is the least that p99 can be (p99Floor): the RT advice
	// is judged and sized on it, so that it keeps the breaker sensitive.
	P99FloorMs int64   `json:"-"`
	P99Ms      int64   `json:"p99Ms,omitempty"`
	RtOverP99  float64 `json:"rtOverP99,omitempty"`
	// Suggest is the rule values the advice proposes; left out when it
	// proposes none (maxAllowedRtMs 1 without a healthy p99).
	Suggest RuleAdviceSuggest `json:"suggest,omitzero"`
	// Rule is the rule judged.
	Rule core.BreakerRule `json:"-"`
	// Legacy: the rule is Java Sentinel's before 1.8 (core.SemanticsJava16),
	// whose window or minRequestAmount do not fit but cannot be set on it.
	Legacy bool `json:"-"`
}

// RuleAdviceSuggest is rule-advice's suggest: the fields whose values do
// not fit, with the rule's JSON names; the others are 0 (left out).
type RuleAdviceSuggest struct {
	MinRequestAmount uint64 `json:"minRequestAmount,omitempty"`
	StatIntervalMs   uint32 `json:"statIntervalMs,omitempty"`
	MaxAllowedRtMs   uint64 `json:"maxAllowedRtMs,omitempty"`
}

// Kind is KindRuleAdvice.
func (*RuleAdviceFacts) Kind() Kind { return KindRuleAdvice }

// Evidence lists the traffic, the healthy response times and the values
// proposed.
func (f *RuleAdviceFacts) Evidence() []Fact {
	out := []Fact{
		text("QPS", fmtFloat(f.QPS, 1)+" (mean offered load, median instance)"),
		text("Window requests", fmtFloat(f.WindowRequests, 1)),
		text("minRequestAmount", fmtFloat(f.MinRequestSeconds, 2)+" s of traffic"),
	}
	if f.P99Ms > 0 {
		out = append(out,
			text("Healthy p99", "at most "+itoa(f.P99Ms)+" ms"),
			text("maxAllowedRtMs / p99", fmtFloat(f.RtOverP99, 2)))
	}
	var proposed []string
	if s := f.Suggest; s.MinRequestAmount > 0 {
		proposed = append(proposed, "minRequestAmount "+itoa(int64(s.MinRequestAmount)))
	}
	if s := f.Suggest; s.StatIntervalMs > 0 {
		proposed = append(proposed, "statIntervalMs "+itoa(int64(s.StatIntervalMs)))
	}
	if s := f.Suggest; s.MaxAllowedRtMs > 0 {
		proposed = append(proposed, "maxAllowedRtMs "+itoa(int64(s.MaxAllowedRtMs)))
	}
	if len(proposed) > 0 {
		out = append(out, text("Proposed", joinAnd(proposed)))
	}
	return out
}
