package triage

import (
	"math"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
)

// The rules-lost detector: an instance that had breaker or flow rules for a
// resource reports rules without them (a malformed push, or a second
// loadRules wiping them) while traffic for the resource goes on.

// ruleHistory is what an instance's rules messages told over time: when
// its process began sending rules and the resources whose rules this
// process lost (the versions it ran are its versionLog's). A process
// restart (a later startedAt) starts it over: a new process has no rules
// to lose.
type ruleHistory struct {
	proc int64                 // the startedAt of the process that sent the rules held
	from int64                 // when that process sent its first rules
	lost map[string]*lostRules // by resource
}

// lostRules is one resource's rules lost on one instance.
type lostRules struct {
	in       *instState
	resource string
	on       bool  // the rules are still gone
	at       int64 // when they went, the latest time
	first    int64 // the first loss followed by traffic
	passed   int64 // entries admitted in buckets that started while they were gone
	to       int64 // end of the latest such bucket
	listed   bool
}

// noteRules records a rules message of an instance, its record's rules
// replacing prev: a new process, a new version, rules lost and rules back.
func (e *Engine) noteRules(in *instState, ts int64, prev *fleet.Rules) {
	h := &in.ruleHist
	if prev == nil || h.proc != in.id.StartedAt {
		// The first rules of this process: nothing held is its own.
		for _, l := range h.lost {
			l.on = false
		}
		*h = ruleHistory{proc: in.id.StartedAt, from: ts}
		return
	}
	rules := in.rules()
	for res := range prev.Resources {
		if _, kept := rules[res]; kept {
			continue
		}
		l := h.lost[res]
		if l == nil {
			if h.lost == nil {
				h.lost = map[string]*lostRules{}
			}
			l = &lostRules{in: in, resource: res}
			h.lost[res] = l
		}
		if !l.on {
			l.on, l.at = true, ts
		}
	}
	for res := range rules {
		if l := h.lost[res]; l != nil {
			l.on = false
		}
	}
}

// lostRules returns the instance's loss of the resource's rules while it
// lasts, nil otherwise.
func (in *instState) lostRules(resource string) *lostRules {
	if len(in.ruleHist.lost) == 0 {
		return nil
	}
	if l := in.ruleHist.lost[resource]; l != nil && l.on {
		return l
	}
	return nil
}

// lostBucket counts a bucket that passed entries. A loss is reported once
// the traffic after it spans GraceMs.
func (d *rulesLostDetector) bucket(s *series, b *takenBucket) {
	e, start, end, pass := d.e, b.Start, b.end, b.pass
	if pass == 0 {
		return
	}
	l := s.inst.lostRules(s.resource)
	if l == nil || start < l.at {
		return
	}
	if l.passed == 0 {
		l.first = l.at
	}
	l.passed += pass
	l.to = max(l.to, end)
	if !l.listed && l.to-l.at >= e.cfg.GraceMs {
		l.listed = true
		d.losses = append(d.losses, l)
	}
}

// rulesLostDetector is the rules-lost detector's own state: the engine it
// observes, and its losses: instance x resource whose rules went, with
// traffic for GraceMs after.
type rulesLostDetector struct {
	e      *Engine
	losses []*lostRules
}

func (d *rulesLostDetector) init(e *Engine) detector { d.e = e; return d }
func (*rulesLostDetector) kind() Kind                { return KindRulesLost }

// rules-lost: one finding per app and resource, merging the instances that
// lost the resource's rules; passed counts the entries admitted in buckets
// that started while the rules were gone, lostAt is the earliest loss
// followed by traffic, From is lostAt and To the end of the latest such
// bucket. It is critical when, on an instance still there, the rules are
// still gone and its latest bucket with traffic after the loss ended within
// StaleMs of the instance's end (now, or its bye).
func (d *rulesLostDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	type key struct{ app, resource string }
	order, byKey := groupBy(e.lost.losses, func(l *lostRules) key { return key{l.in.app.name, l.resource} })
	for _, k := range order {
		f := Finding{Kind: KindRulesLost, App: k.app, Resource: k.resource, From: math.MaxInt64}
		x := &RulesLostFacts{LostAt: math.MaxInt64}
		var insts []*instState
		ongoing := false
		for _, l := range byKey[k] {
			in := l.in
			insts = append(insts, in)
			x.Passed += l.passed
			x.LostAt = min(x.LostAt, l.first)
			f.To = max(f.To, l.to)
			if in.lostRules(l.resource) == l && e.alive(in, now) && l.to >= in.end(now)-e.cfg.StaleMs {
				ongoing = true
			}
		}
		f.From, f.Facts, f.Severity = x.LostAt, x, severity(ongoing)
		e.complete(&f, insts)
		out = append(out, f)
	}
	return out
}

// RulesLostFacts: an instance's rules for a resource gone while its
// traffic went on.
type RulesLostFacts struct {
	// Passed counts the entries admitted after the loss.
	Passed int64 `json:"passed"`
	// LostAt is when the rules went (the earliest loss, Unix ms).
	LostAt int64 `json:"lostAt"`
}

// Kind is KindRulesLost.
func (*RulesLostFacts) Kind() Kind { return KindRulesLost }

// Evidence lists when the rules went and what passed since.
func (f *RulesLostFacts) Evidence() []Fact {
	return []Fact{
		text("Rules lost at", fmtTime(f.LostAt)),
		text("Passed since", itoa(f.Passed)+" entries"),
	}
}

// fmtTime is a Unix ms time as UTC wall time to the millisecond.
func fmtTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") + " UTC"
}
