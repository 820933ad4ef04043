package triage

import (
	"math"

	"github.com/sentinel-top/sentinel-top/core"
)

// The low-confidence-trip detector: trips of ratio breakers that rested on
// too little evidence.

type lowConf struct {
	count       int64
	worst       Evidence
	worstMargin float64
	worstThr    float64
	from, to    int64
	insts       map[*instState]struct{}
}

func (e *Engine) lowConfidence(s *series, t core.Transition) {
	n, k, thr := t.Snapshot.Total, t.Snapshot.Bad, t.Threshold
	if n <= 0 || k < 0 || k > n || math.IsNaN(thr) || thr < 0 || thr > 1 {
		return
	}
	lower := WilsonLower(k, n)
	if lower > thr {
		return
	}
	l := &s.ar.low
	margin := lower - thr
	if l.count == 0 {
		l.from, l.to = t.AtMs, t.AtMs
		l.insts = map[*instState]struct{}{}
		e.lows = append(e.lows, s.ar)
	}
	if l.count == 0 || margin < l.worstMargin || (margin == l.worstMargin && n < l.worst.N) {
		l.worst = Evidence{K: k, N: n, Lower: round(lower, 2)}
		l.worstMargin, l.worstThr = margin, thr
	}
	l.count++
	l.from, l.to = min(l.from, t.AtMs), max(l.to, t.AtMs)
	l.insts[s.inst] = struct{}{}
}

// low-confidence-trip: count is the trips, worst the one whose lower bound
// sits furthest under its threshold (then the smaller window, then the
// earliest). Always a warning.
func (e *Engine) lowFindings(_ int64, out []Finding) []Finding {
	for _, ar := range e.lows {
		l := &ar.low
		insts := setInsts(l.insts)
		w := l.worst
		f := Finding{
			Kind: KindLowConfidenceTrip, Severity: Warning, App: ar.app.name, Resource: ar.resource,
			Instances: names(insts), From: l.from, To: l.to,
			Facts: &LowConfidenceFacts{Count: l.count, Worst: w, Threshold: l.worstThr},
		}
		words(&f)
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}
