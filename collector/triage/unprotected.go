package triage

import (
	"math"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
)

// The unprotected detector: traffic passed without a rule while other
// instances of the app had one.

type unprot struct {
	on     bool // the latest bucket with traffic passed without a rule
	seen   bool
	listed bool
	// missed: the latest episode's cause is CauseMissedPush, else
	// CauseStartedWithoutRules (a flag beside the others, not a string:
	// every series has one).
	missed  bool
	epStart int64
	passed  int64
	from    int64
	to      int64
	maxSpan int64
}

// addRule counts one attached instance more with a rule for the resource.
func (ar *appRes) addRule(ts int64) {
	if ar.ruleCount == 0 {
		ar.ruledSince = ts
	}
	ar.ruleCount++
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

// rules: traffic of a resource that now has a rule is protected from here
// on.
func (d *unprotectedDetector) rules(in *instState, _ int64, _ *fleet.Rules) {
	for r := range in.rules() {
		if s := in.series[r]; s != nil {
			s.up.on = false
		}
	}
}

func (d *unprotectedDetector) bucket(s *series, b *takenBucket) {
	e, start, end, pass := d.e, b.Start, b.end, b.pass
	if pass == 0 {
		return
	}
	in := s.inst
	if !in.hasRules() {
		return // rules not known yet: nothing to judge
	}
	u := &s.up
	// Rules this process had and lost are rules-lost's.
	if s.rr != nil || s.ar.ruleCount == 0 || !in.attached || in.lostRules(s.resource) != nil {
		u.on = false
		return
	}
	if end <= s.ar.ruledSince {
		return // admitted before any instance of the app had a rule
	}
	if !u.on {
		u.on, u.epStart = true, start
		// The app had rules for the resource when this process sent its
		// first rules: it started without them. Else they came to the
		// others while it was there: it missed their push.
		u.missed = in.ruleHist.from < s.ar.ruledSince
	}
	if !u.seen {
		u.seen, u.from = true, start
	}
	u.passed += pass
	u.to = max(u.to, end)
	u.maxSpan = max(u.maxSpan, end-u.epStart)
	if !u.listed && u.maxSpan >= e.cfg.GraceMs {
		u.listed = true
		d.series = append(d.series, s)
	}
}

// unprotectedDetector is the unprotected detector's own state: the engine it
// observes, and its series: series with unprotected traffic lasting GraceMs.
type unprotectedDetector struct {
	e      *Engine
	series []*series
}

func (d *unprotectedDetector) init(e *Engine) detector { d.e = e; return d }
func (*unprotectedDetector) kind() Kind                { return KindUnprotected }

// unprotected: passed counts every entry admitted without a rule, From and
// To bound those buckets. Reported once an instance passed traffic without a
// rule for GraceMs in a row. The cause is missed-push when an instance's
// latest episode was, else started-without-rules. It is critical when, on
// an instance still there, the latest bucket with traffic passed without a
// rule, ended within StaleMs of the instance's end (now, or its bye), and
// the instance still has no rule while others of the app do.
func (d *unprotectedDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	order, byAR := groupBy(e.unprot.series, func(s *series) *appRes { return s.ar })
	for _, ar := range order {
		f := Finding{Kind: KindUnprotected, App: ar.app.name, Resource: ar.resource, From: math.MaxInt64}
		x := &UnprotectedFacts{Cause: CauseStartedWithoutRules}
		f.Facts = x
		var insts []*instState
		ongoing := false
		for _, s := range byAR[ar] {
			in, u := s.inst, &s.up
			insts = append(insts, in)
			x.Passed += u.passed
			x.LongestMs = max(x.LongestMs, u.maxSpan)
			if u.missed {
				x.Cause = CauseMissedPush
			}
			f.From, f.To = min(f.From, u.from), max(f.To, u.to)
			has := in.rulesOf(ar.resource) != nil
			if u.on && !has && ar.ruled(now) && e.alive(in, now) && u.to >= in.end(now)-e.cfg.StaleMs {
				ongoing = true
			}
		}
		f.Severity = severity(ongoing)
		e.complete(&f, insts)
		out = append(out, f)
	}
	return out
}

// UnprotectedCause says why an instance had no rule.
type UnprotectedCause string

// The causes of unprotected.
const (
	// CauseStartedWithoutRules: its traffic began before its first rules
	// for the resource, which the app's other instances had.
	CauseStartedWithoutRules UnprotectedCause = "started-without-rules"
	// CauseMissedPush: the app's other instances received rules for the
	// resource while it was there, and it did not.
	CauseMissedPush UnprotectedCause = "missed-push"
)

// UnprotectedFacts: traffic passed without a rule.
type UnprotectedFacts struct {
	// Passed counts entries admitted without a rule.
	Passed int64 `json:"passed"`
	// Cause is why the instances had none.
	Cause UnprotectedCause `json:"cause"`
	// LongestMs is the longest run of traffic without a rule on one
	// instance.
	LongestMs int64 `json:"-"`
}

// Kind is KindUnprotected.
func (*UnprotectedFacts) Kind() Kind { return KindUnprotected }

// Evidence lists what passed, for how long, and why.
func (f *UnprotectedFacts) Evidence() []Fact {
	return []Fact{
		text("Passed without a rule", itoa(f.Passed)+" entries, for up to "+fmtFloat(float64(f.LongestMs)/1000, 1)+" s on one instance"),
		text("Cause", string(f.Cause)),
	}
}
