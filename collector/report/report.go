package report

import (
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
	// Warnings say what the input lacked (a target down, say): one line
	// each, in the text and Markdown headers. Input strings in them must
	// already be sanitized.
	Warnings []string
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
