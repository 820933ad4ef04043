package triage

import (
	"math"

	"github.com/sentinel-top/sentinel-top/core"
)

// The rule-advice detector: ratio breakers whose settings do not fit the
// traffic seen.

// rule-advice: for every app and resource with a slow-ratio breaker (on
// each instance, its breaker with the smallest maxAllowedRtMs, as the wire's
// slow count uses), the instances running it that passed traffic are judged
// together. qps is the median over those instances of each one's median QPS
// (its buckets' pass counts, silences between buckets up to a minute counted
// as idle buckets); windowRequests is qps x statIntervalMs / 1000; p99Ms is
// the p99 of all their rtHist counts pooled (0 without histograms);
// rtOverP99 is maxAllowedRtMs / p99Ms. The rule judged is that of the first
// instance by name. It fires when minRequestAmount < 20, windowRequests < 20
// or maxAllowedRtMs < 2 x p99Ms, and is always info.
func (e *Engine) adviceFindings(_ int64, out []Finding) []Finding {
	type acc struct {
		ar       *appRes
		insts    []*instState
		qps      []float64
		rt       [core.HistogramSlots]int64
		rtMax    int64
		hasHist  bool
		from, to int64
		rule     core.BreakerRule
		ruleOf   *instState
	}
	byAR := map[*appRes]*acc{}
	var order []*acc
	for _, in := range e.instList {
		for _, sr := range in.slow {
			s := in.series[sr.resource]
			if s == nil || !s.traffic {
				continue
			}
			a := byAR[s.ar]
			if a == nil {
				a = &acc{ar: s.ar, from: math.MaxInt64}
				byAR[s.ar] = a
				order = append(order, a)
			}
			a.insts = append(a.insts, in)
			a.qps = append(a.qps, s.pass.median()*1000/float64(s.bucketMs))
			for i, c := range s.rt {
				a.rt[i] += c
			}
			a.rtMax = max(a.rtMax, s.rtMax)
			a.hasHist = a.hasHist || s.hasHist
			a.from, a.to = min(a.from, s.firstAt), max(a.to, s.endAt)
			if a.ruleOf == nil || in.name < a.ruleOf.name {
				a.rule, a.ruleOf = sr.rule, in
			}
		}
	}
	for _, a := range order {
		r := a.rule
		qps := round(medianOf(a.qps), 1)
		x := &RuleAdviceFacts{QPS: qps, WindowRequests: round(qps*float64(r.StatIntervalMs)/1000, 1), Rule: r}
		if a.hasHist {
			x.P99Ms = core.HistogramQuantile(&a.rt, 0.99, a.rtMax)
		}
		if x.P99Ms > 0 {
			x.RtOverP99 = round(float64(r.MaxAllowedRtMs)/float64(x.P99Ms), 2)
		}
		if r.MinRequestAmount >= AdviceMinRequests && x.WindowRequests >= AdviceMinRequests &&
			(x.P99Ms == 0 || r.MaxAllowedRtMs >= uint64(AdviceRtFactor*x.P99Ms)) {
			continue
		}
		insts := sortInsts(a.insts)
		f := Finding{
			Kind: KindRuleAdvice, Severity: Info, App: a.ar.app.name, Resource: a.ar.resource,
			Instances: names(insts), From: a.from, To: a.to, Facts: x,
		}
		words(&f)
		f.Timelines = e.timelines(insts, a.ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}

// adviceInterval is the statIntervalMs, in whole seconds, that holds
// AdviceMinRequests requests at qps.
func adviceInterval(qps float64) int64 {
	return int64(math.Ceil(AdviceMinRequests*1000/qps/1000)) * 1000
}
