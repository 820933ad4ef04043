package report

import (
	"cmp"
	"fmt"

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
	// Findings in report order (as triage.Engine.Findings returns them).
	Findings []triage.Finding
	// ResourcesSeen lists every app x resource with its totals over the
	// input and where its breaker states came from (findings-v1
	// "resourcesSeen"); empty when the caller has none to give.
	ResourcesSeen []ResourceSeen
	// Targets are the dialed targets of a live input: each one not up is
	// a warning, before Warnings.
	Targets []collector.TargetStatus
	// Warnings are what the input's snapshot warned of (clock skew, data
	// never received, ...), in its order. The text and Markdown headers
	// word each with collector.WarningText.
	Warnings []collector.Warning
}

// New builds the report of an engine that has been fed the whole input:
// counts and time range from the engine, findings judged at the end of the
// input.
func New(source string, e *triage.Engine, messages, rejected int64) *Report {
	c := e.Counts()
	return &Report{
		Source:    source,
		From:      c.From,
		To:        c.To,
		Apps:      c.Apps,
		Instances: c.Instances,
		Resources: c.Resources,
		Messages:  messages,
		Rejected:  rejected,
		Findings:  e.Findings(c.To),
	}
}

// down lists the targets not up, one sanitized "NAME: WHY" each.
func (r *Report) down() []string {
	var out []string
	for _, t := range r.Targets {
		if t.State != collector.TargetUp {
			out = append(out, Sanitize(t.Name)+": "+Sanitize(cmp.Or(t.LastError, t.State.String())))
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

// noFindings is what an empty report says: never an unqualified "No
// findings" where breaker states were unknown.
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
