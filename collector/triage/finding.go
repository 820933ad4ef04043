package triage

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// Kind names a failure pattern of spec/findings-v1.md.
type Kind string

// The finding kinds, in the order of the spec's table (also the tie-break
// order of Findings).
const (
	KindSawtooth          Kind = "sawtooth"
	KindSyncHalfOpen      Kind = "sync-half-open"
	KindLowConfidenceTrip Kind = "low-confidence-trip"
	KindRuleDrift         Kind = "rule-drift"
	KindUnprotected       Kind = "unprotected"
	KindRulesLost         Kind = "rules-lost"
	KindInertRule         Kind = "inert-rule"
	KindWarmUp            Kind = "warm-up"
	KindSelfInflicted     Kind = "self-inflicted"
	KindHotValue          Kind = "hot-value"
	KindSharedResource    Kind = "shared-resource"
	KindWindowMisaligned  Kind = "window-misaligned"
	KindRuleAdvice        Kind = "rule-advice"
)

// Kinds lists every kind in the spec's order.
var Kinds = []Kind{
	KindSawtooth, KindSyncHalfOpen, KindLowConfidenceTrip, KindRuleDrift,
	KindUnprotected, KindRulesLost, KindInertRule, KindWarmUp, KindSelfInflicted, KindHotValue, KindSharedResource, KindWindowMisaligned, KindRuleAdvice,
}

// criticalWhileItLasts reports whether the kind's findings are critical
// while their condition lasts, and warnings once it ended (findings-v1
// "Severities"): sawtooth, sync-half-open, rule-drift, unprotected,
// rules-lost and self-inflicted. A finding of such a kind was critical while its condition
// lasted, so its peak is critical however it stands at the end.
func (k Kind) criticalWhileItLasts() bool {
	switch k {
	case KindSawtooth, KindSyncHalfOpen, KindRuleDrift, KindUnprotected, KindRulesLost, KindSelfInflicted:
		return true
	}
	return false
}

func (k Kind) rank() int {
	if i := slices.Index(Kinds, k); i >= 0 {
		return i
	}
	return len(Kinds)
}

// Severity orders findings: Critical first.
type Severity uint8

// The severities. A larger value is more severe.
const (
	Info Severity = iota
	Warning
	Critical
)

// String returns the spec's name: "info", "warning" or "critical".
func (s Severity) String() string {
	switch s {
	case Critical:
		return "critical"
	case Warning:
		return "warning"
	default:
		return "info"
	}
}

// ParseSeverity reads a severity a finding may reach that a threshold
// names: "warning" or "critical" (the spec's names, as String writes
// them). "info", which every finding is at least, names no threshold and
// is refused with the rest.
func ParseSeverity(s string) (Severity, error) {
	switch s {
	case "warning":
		return Warning, nil
	case "critical":
		return Critical, nil
	}
	return Info, fmt.Errorf("%q: %w", s, ErrSeverity)
}

// ErrSeverity is ParseSeverity's error, after the text it was given.
var ErrSeverity = errors.New("want warning or critical")

// Finding is one named failure pattern for one app and resource, with the
// instances that show it merged: the common fields, and the kind's own in
// Facts.
type Finding struct {
	Kind     Kind
	Severity Severity
	// PeakSeverity is the highest severity the finding reached over the
	// input (findings-v1 revision 3 "peakSeverity"): a postmortem of an
	// incident that was critical is judged by it (--fail-on).
	PeakSeverity Severity
	App          string
	Resource     string
	// Instances showing the pattern, sorted, without duplicates.
	Instances []string
	// From and To bound the evidence, Unix ms.
	From, To int64
	// Summary and Advice are one sentence each, with numbers. They never
	// quote input strings (names, versions): renderers print those from the
	// structured fields, where they can sanitize them.
	Summary, Advice string

	// Facts are the kind's own evidence (*SawtoothFacts for a sawtooth,
	// and so on); Summary and Advice are made from them.
	Facts Facts

	// Timelines are the breaker state changes of (up to MaxTimelines of)
	// the instances over [From, To]: evidence for renderers, not part of the
	// JSON report.
	Timelines []Timeline
}

// Evidence is the window of a breaker trip: K bad of N requests, and the
// one-sided 90 % Wilson lower bound of K/N, rounded to 2 decimals.
type Evidence struct {
	K     int64   `json:"k"`
	N     int64   `json:"n"`
	Lower float64 `json:"lower"`
}

// RuleSet is an instance's rules for one resource; both lists are empty when
// it has none.
type RuleSet struct {
	Breakers []core.BreakerRule `json:"breakers"`
	Flows    []core.FlowRule    `json:"flows"`
}

// MarshalJSON writes empty lists as [], never null.
func (r RuleSet) MarshalJSON() ([]byte, error) {
	type plain RuleSet
	p := plain(r)
	if p.Breakers == nil {
		p.Breakers = []core.BreakerRule{}
	}
	if p.Flows == nil {
		p.Flows = []core.FlowRule{}
	}
	return json.Marshal(p)
}

// MaxTimelines bounds the timelines attached to one finding.
const MaxTimelines = 8

// Timeline is one instance's breaker history over a finding's span, as
// the fleet model keeps it: the one history every view draws.
type Timeline struct {
	Instance string
	RuleID   string
	// Start is the state at the beginning of the span, or at KnownFrom
	// when that is later.
	Start core.State
	// Steps are the transitions within the span, in time order.
	Steps []Step
	// KnownFrom is when the breaker's state is first known (the
	// instance's first data for the resource); 0: before the span.
	// KnownTo is when it stops being known (the instance left, or the
	// input ends); 0: after the span. Unknown are the spans between them
	// whose state is not known either: data that never arrived, or no
	// process running (between a process's last data and its restart).
	KnownFrom, KnownTo int64
	Unknown            []Span
}

// Span is the time [From, To), Unix ms.
type Span = fleet.Span

// End is the state after the last step.
func (t *Timeline) End() core.State {
	if len(t.Steps) == 0 {
		return t.Start
	}
	return t.Steps[len(t.Steps)-1].To
}

// Step is one transition on a Timeline.
type Step struct {
	AtMs int64
	To   core.State
}

// StateUnknown is a cell of Cells whose state is not known.
const StateUnknown core.State = -1

// Cells is the timeline's state in each cell [edges[i], edges[i+1]): the
// most severe state the breaker held within the known part of the cell
// (OPEN, then HALF_OPEN, then CLOSED: the order of core.State), so a cell
// with an OPEN spell shows OPEN whatever else fell in it. A cell is
// StateUnknown when no part of it is known (before KnownFrom, from
// KnownTo on, or wholly in an Unknown span), and when the state known of a
// cell an Unknown span cuts is CLOSED (the unknown part may have been
// worse). Every view draws a breaker's history with this one rule.
func (t *Timeline) Cells(edges []int64) []core.State {
	if len(edges) < 2 {
		return nil
	}
	out := make([]core.State, len(edges)-1)
	known := func(at int64) bool { return at >= t.KnownFrom && (t.KnownTo == 0 || at < t.KnownTo) }
	cur, j := t.Start, 0
	advance := func(before int64) core.State { // applies the steps before a time; the worst state entered
		worst := StateUnknown
		for ; j < len(t.Steps) && t.Steps[j].AtMs < before; j++ {
			cur = t.Steps[j].To
			worst = max(worst, cur)
		}
		return worst
	}
	advance(edges[0])
	for i := range out {
		lo, hi := max(edges[i], t.KnownFrom), edges[i+1]
		if t.KnownTo != 0 {
			hi = min(hi, t.KnownTo)
		}
		if lo >= hi || !known(lo) {
			advance(edges[i+1])
			out[i] = StateUnknown
			continue
		}
		advance(lo + 1)
		atLo := cur // read before advance moves it
		out[i] = max(atLo, advance(hi))
		advance(edges[i+1])
	}
	for _, sp := range t.Unknown {
		for i := range out {
			lo, hi := edges[i], edges[i+1]
			if sp.From >= hi || sp.To <= lo {
				continue
			}
			if (sp.From <= lo && sp.To >= hi) || out[i] == core.Closed {
				out[i] = StateUnknown
			}
		}
	}
	return out
}

// compareFindings is the report order: severity (critical first), then
// From, then kind (spec order), app, resource.
func compareFindings(a, b *Finding) int {
	return compareRanked(a, b, a.Kind.rank(), b.Kind.rank())
}

// compareRanked is compareFindings with the kinds' ranks given.
func compareRanked(a, b *Finding, ra, rb int) int {
	if c := cmp.Compare(b.Severity, a.Severity); c != 0 {
		return c
	}
	if c := cmp.Compare(a.From, b.From); c != 0 {
		return c
	}
	if c := cmp.Compare(ra, rb); c != 0 {
		return c
	}
	if c := cmp.Compare(a.App, b.App); c != 0 {
		return c
	}
	return cmp.Compare(a.Resource, b.Resource)
}

// findingRef is a finding to sort: its index and its kind's rank.
type findingRef struct{ i, rank int }

// sortFindings puts fs in the report order (compareFindings), reusing
// refs. It sorts references, each kind ranked once, and then moves each
// finding once, rather than comparing and swapping the findings
// themselves: a finding is 168 bytes, and a fleet's rule advice
// alone can be a thousand of them at every snapshot.
func sortFindings(fs []Finding, refs []findingRef) []findingRef {
	refs = refs[:0]
	for i := range fs {
		refs = append(refs, findingRef{i, fs[i].Kind.rank()})
	}
	slices.SortFunc(refs, func(a, b findingRef) int { return compareRanked(&fs[a.i], &fs[b.i], a.rank, b.rank) })
	// fs[k] takes the finding at refs[k].i, a cycle of moves at a time;
	// a ref taken is marked -1.
	for k := range refs {
		if refs[k].i < 0 {
			continue
		}
		held, j := fs[k], k
		for {
			from := refs[j].i
			refs[j].i = -1
			if from == k {
				fs[j] = held
				break
			}
			fs[j], j = fs[from], from
		}
	}
	return refs
}

// NeedExact lists the kinds that need breaker transitions timed and
// ordered exactly, or response times: sawtooth (consecutive failed probes
// and their RT), sync-half-open (HALF_OPEN within 1000 ms across
// instances), low-confidence-trip (the calls in the tripping window) and
// self-inflicted (the healthy latency). An input that counts transitions
// per step, without response times, cannot judge them: its views say so
// rather than guess (collector.Options.Resolution).
func NeedExact() []Kind {
	return []Kind{KindSawtooth, KindSyncHalfOpen, KindLowConfidenceTrip, KindSelfInflicted}
}
