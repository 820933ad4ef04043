package report

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// Version is the report format version, the "v" of the JSON report.
const Version = 1

// Report is everything a report shows.
type Report struct {
	// Source names the input: a fixture path, a list of targets, "demo".
	Source string
	// From and To bound the input, Unix ms.
	From, To int64
	// Apps, Instances and Resources count what the input named.
	Apps, Instances, Resources int
	// Messages counts the messages accepted, Rejected those refused.
	Messages, Rejected int64
	// Findings in report order (as the collector publishes them).
	Findings []triage.Finding
	// Plans are the findings' proposals, one per rule, replayed and gated
	// (findings-v1 revision 3), in the findings' order.
	Plans []triage.Plan
	// ResourcesSeen lists every app x resource with its totals over the
	// input and where its breaker states came from (findings-v1
	// "resourcesSeen"); empty when the caller has none to give.
	ResourcesSeen []ResourceSeen
	// Activity is what happened to each app x resource (trips, time
	// OPEN, blocks by cause), which a report with no findings tells
	// instead (text and Markdown: findings-v1 has no JSON field for it);
	// nil when the caller has none to give.
	Activity []collector.ResourceActivity
	// Targets are the dialed targets of a live input: each one not up is
	// a warning, before Warnings.
	Targets []*collector.TargetStatus
	// Warnings are what the input's snapshot warned of (clock skew, data
	// never received, ...), in its order. The text and Markdown headers
	// word each with collector.WarningText.
	Warnings []collector.Warning
}

// Bound keeps the report's time range within [from, to] (a live input's
// watch, on the collector's clock), however far off the peers stamped
// what they sent: a range wholly outside it becomes its nearer end. The
// findings keep their own times.
func (r *Report) Bound(from, to int64) {
	if to < from {
		return
	}
	r.From = min(max(r.From, from), to)
	r.To = min(max(r.To, r.From), to)
}

// Histories gives findings the timelines of their instances from the
// fleet model's breaker histories, the one history every view draws
// (collector.Collector.Timelines), and what happened to each resource
// (collector.Collector.Activity).
type Histories interface {
	Timelines(findings []triage.Finding, pad func(from, to int64) int64) []triage.Finding
	Activity() []collector.ResourceActivity
}

// FromSnapshot builds the report of a snapshot the collector published
// once it had been fed the input: its counts and time range, its
// findings (judged once, at the publish), its totals, targets and
// warnings, and, from h (nil: none), each finding's timelines over the
// span its text draws. The report judges nothing itself, so it says what
// the dashboard and /metrics say of the same snapshot.
func FromSnapshot(source string, s *collector.Snapshot, h Histories) *Report {
	findings := s.Findings
	var activity []collector.ResourceActivity
	if h != nil {
		findings = h.Timelines(findings, TimelinePad)
		activity = h.Activity()
	}
	return &Report{
		Source:        source,
		From:          s.Seen.From,
		To:            s.Seen.To,
		Apps:          s.Seen.Apps,
		Instances:     s.Seen.Instances,
		Resources:     s.Seen.Resources,
		Messages:      s.Messages,
		Rejected:      s.Rejected,
		Findings:      findings,
		Plans:         s.Plans,
		ResourcesSeen: resourcesSeen(s.Totals),
		Activity:      activity,
		Targets:       s.Targets,
		Warnings:      s.Warnings,
	}
}

// resourcesSeen is the report's list of app x resource totals, with where
// their breaker states came from.
func resourcesSeen(totals []collector.ResourceTotals) []ResourceSeen {
	if totals == nil {
		return nil
	}
	out := make([]ResourceSeen, 0, len(totals))
	for _, t := range totals {
		out = append(out, ResourceSeen{App: t.App, Resource: t.Resource, Pass: t.Pass, Block: t.Block,
			Complete: t.Complete, Error: t.Error, Slow: t.Slow, States: t.States.String()})
	}
	return out
}

// down lists the targets not up, one sanitized "NAME: WHY" each.
func (r *Report) down() []string {
	var out []string
	for _, t := range r.Targets {
		if t.State != collector.TargetUp {
			out = append(out, Sanitize(t.Name)+": "+Sanitize(cmp.Or(collector.ProblemText(t.Problem), t.State.String())))
		}
	}
	return out
}

// warnings are the report's warning lines: the targets not up (sanitized
// as they are made, name and error each cut to a name's length), then the
// snapshot's warnings in the collector's words around names from the
// input, printed as input.
func (r *Report) warnings() []seg {
	var out []seg
	for _, d := range r.down() {
		out = append(out, warning("target "+d))
	}
	for _, w := range r.Warnings {
		out = append(out, warning(collector.WarningText(w)))
	}
	return out
}

// WarningLines are the report's warnings as its text header shows them,
// one sanitized line each: for a terminal beside the report (its standard
// error, when standard output carries the report).
func (r *Report) WarningLines() []string {
	segs := r.warnings()
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = sanitize(s.text, s.runes())
	}
	return out
}

// ErrNoData is the class of the error NoData returns.
var ErrNoData = errors.New("no data")

// NoData says why a report of an input that brought no message at all is
// no report (a report of nothing would read as a quiet fleet): every
// target down, with why, or nothing from the source in the time watched.
// It returns nil when a message was accepted.
func (r *Report) NoData(watched time.Duration) error {
	if r.Messages > 0 {
		return nil
	}
	if down := r.down(); len(r.Targets) > 0 && len(down) == len(r.Targets) {
		return fmt.Errorf("%w: all %d %s down: %s", ErrNoData, len(down), plural(len(down), "target", "targets"), strings.Join(down, "; "))
	}
	return fmt.Errorf("%w from %s in %s", ErrNoData, Sanitize(r.Source), watched)
}

// AtLeast lists the findings whose peak severity (the highest they
// reached over the input) is at least least, in report order, one
// sanitized line each: "critical rule-drift APP/RESOURCE", or "critical
// (now warning) sawtooth APP/RESOURCE" for one that ended: a postmortem of
// a critical incident fails a gate of --fail-on critical.
func (r *Report) AtLeast(least triage.Severity) []string {
	var out []string
	for _, f := range r.Findings {
		if f.PeakSeverity < least && f.Severity < least {
			continue
		}
		sev := max(f.PeakSeverity, f.Severity).String()
		if f.PeakSeverity > f.Severity {
			sev += " (now " + f.Severity.String() + ")"
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s", sev, f.Kind, Sanitize(f.App), Sanitize(f.Resource)))
	}
	return out
}

// severityWords is a finding's severity as a section heading says it, with
// its peak when that was higher: "WARNING (CRITICAL while it lasted)".
func severityWords(f *triage.Finding) string {
	s := strings.ToUpper(f.Severity.String())
	if f.PeakSeverity > f.Severity {
		s += " (" + strings.ToUpper(f.PeakSeverity.String()) + " while it lasted)"
	}
	return s
}

// severityCounts counts the findings by severity.
func (r *Report) severityCounts() (critical, warning, info int) {
	for _, f := range r.Findings {
		switch f.Severity {
		case triage.Critical:
			critical++
		case triage.Warning:
			warning++
		default:
			info++
		}
	}
	return
}

// ResourceSeen is one app x resource of the input: its totals, and States,
// "exact", "inferred" or "unknown".
type ResourceSeen struct {
	App      string `json:"app"`
	Resource string `json:"resource"`
	Pass     int64  `json:"pass"`
	Block    int64  `json:"block"`
	Complete int64  `json:"complete"`
	Error    int64  `json:"error"`
	Slow     int64  `json:"slow"`
	States   string `json:"states"`
}

// unknownStates counts the resources whose breaker states the input could
// not tell.
func (r *Report) unknownStates() int {
	n := 0
	for _, rs := range r.ResourcesSeen {
		if rs.States == "unknown" {
			n++
		}
	}
	return n
}

// noFindings is what an empty report says first: never an unqualified
// "No findings" where breaker states were unknown; what happened per
// resource follows it (accounts).
func noFindings(r *Report) string {
	if n := r.unknownStates(); n > 0 {
		return "\nNo findings, but " + r.cannotJudge() + ".\n"
	}
	return "\nNo findings.\n"
}

// cannotJudge is the line said instead of, or beside, "No findings" when
// breaker states are unknown for some resources.
func (r *Report) cannotJudge() string {
	n := r.unknownStates()
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("breaker states are unknown for %d of %d %s (the source cannot report them): breaker behaviour cannot be judged from this input",
		n, len(r.ResourcesSeen), plural(len(r.ResourcesSeen), "resource", "resources"))
}
