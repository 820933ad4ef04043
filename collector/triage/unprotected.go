package triage

import (
	"math"
)

// The unprotected detector: traffic passed without a rule while other
// instances of the app had one.

type unprot struct {
	on      bool // the latest bucket with traffic passed without a rule
	epStart int64
	passed  int64
	seen    bool
	from    int64
	to      int64
	maxSpan int64
	listed  bool
}

// dropRule counts one attached instance fewer with a rule for the resource.
func (ar *appRes) dropRule(ts int64) {
	ar.ruleCount--
	if ar.ruleCount == 0 {
		ar.ruledTo = ts
	}
}

// ruled reports whether some instance of the app has a rule for the
// resource at now (the last ones may have left at now, at the very end of
// the input).
func (ar *appRes) ruled(now int64) bool {
	return ar.ruleCount > 0 || (ar.ruledTo > 0 && ar.ruledTo >= now)
}

func (e *Engine) unprotectedBucket(s *series, start, end, pass int64) {
	in := s.inst
	if !in.hasRules {
		return // rules not known yet: nothing to judge
	}
	u := &s.up
	if _, has := in.rules[s.resource]; has || s.ar.ruleCount == 0 || !in.attached {
		u.on = false
		return
	}
	if !u.on {
		u.on, u.epStart = true, start
	}
	if !u.seen {
		u.seen, u.from = true, start
	}
	u.passed += pass
	u.to = max(u.to, end)
	u.maxSpan = max(u.maxSpan, end-u.epStart)
	if !u.listed && u.maxSpan >= e.cfg.GraceMs {
		u.listed = true
		e.unprot = append(e.unprot, s)
	}
}

// unprotected: passed counts every entry admitted without a rule, From and
// To bound those buckets. Reported once an instance passed traffic without a
// rule for GraceMs in a row. It is critical when, on an instance still
// there, the latest bucket with traffic passed without a rule, ended within
// StaleMs of the instance's end (now, or its bye), and the instance still
// has no rule while others of the app do.
func (e *Engine) unprotectedFindings(now int64, out []Finding) []Finding {
	byAR := map[*appRes][]*series{}
	var order []*appRes
	for _, s := range e.unprot {
		if _, ok := byAR[s.ar]; !ok {
			order = append(order, s.ar)
		}
		byAR[s.ar] = append(byAR[s.ar], s)
	}
	for _, ar := range order {
		f := Finding{Kind: KindUnprotected, App: ar.app.name, Resource: ar.resource, From: math.MaxInt64}
		x := &UnprotectedFacts{}
		f.Facts = x
		var insts []*instState
		ongoing := false
		for _, s := range byAR[ar] {
			in, u := s.inst, &s.up
			insts = append(insts, in)
			x.Passed += u.passed
			f.From, f.To = min(f.From, u.from), max(f.To, u.to)
			_, has := in.rules[ar.resource]
			if u.on && !has && ar.ruled(now) && e.alive(in, now) && u.to >= in.end(now)-e.cfg.StaleMs {
				ongoing = true
			}
		}
		insts = sortInsts(insts)
		f.Instances = names(insts)
		f.Severity = severity(ongoing)
		words(&f)
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}
