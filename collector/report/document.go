package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// The Markdown and Text renderers share one layout, built here from the
// report: per finding a title, the summary, labelled values, preformatted
// blocks (timelines, rules) and the advice. Values keep input strings apart
// from the report's own prose so that each renderer can make them safe its
// own way.

// seg is a piece of a value: the report's own prose, or a string from the
// input.
type seg struct {
	text  string
	input bool
	limit int // runes of it printed (0: maxNameRunes)
}

func prose(format string, args ...any) seg { return seg{text: fmt.Sprintf(format, args...)} }

func input(s string) seg { return seg{text: s, input: true} }

// warning is a warning line (a snapshot's, or a target's): words around
// names from the input, printed as input, longer than a name.
func warning(s string) seg { return seg{text: s, input: true, limit: maxWarningRunes} }

// runes is how much of s is printed.
func (s seg) runes() int { return cmp.Or(s.limit, maxNameRunes) }

// part is a labelled value or, when block is set, preformatted lines whose
// input strings are already sanitized, or, when table is set, a table.
type part struct {
	label string
	value []seg
	block []string
	table *table
}

type section struct {
	f     *triage.Finding
	parts []part
}

const (
	maxListedNames = 20 // names listed per value
	stripWidth     = 40 // columns of a state timeline
	maxBlockRunes  = 2000
)

// nameList lists names as input segments separated by ", ", at most
// maxListedNames of them.
func nameList(names []string) []seg {
	var out []seg
	for i, n := range names {
		if i == maxListedNames {
			out = append(out, prose(" and %d more", len(names)-i))
			break
		}
		if i > 0 {
			out = append(out, prose(", "))
		}
		out = append(out, input(n))
	}
	if len(names) == 0 {
		out = append(out, prose("none"))
	}
	return out
}

func fmtTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") + " UTC"
}

func fmtClock(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("15:04:05.000")
}

// fmtDur prints a duration of ms, never negative (a range whose end is
// before its start lasts 0 s), in hours past what a time.Duration holds
// (292 years).
func fmtDur(ms int64) string {
	ms = max(ms, 0)
	if ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return fmt.Sprintf("%dh", ms/3_600_000)
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// fmtRange prints a time range in UTC, the second date only when it
// differs; an end before the start is taken as the start.
func fmtRange(from, to int64) string {
	to = max(to, from)
	end := fmtTime(to)
	if time.UnixMilli(from).UTC().YearDay() == time.UnixMilli(to).UTC().YearDay() &&
		time.UnixMilli(from).UTC().Year() == time.UnixMilli(to).UTC().Year() {
		end = fmtClock(to) + " UTC"
	}
	return fmt.Sprintf("%s to %s (%s)", fmtTime(from), end, fmtDur(to-from))
}

func headerParts(r *Report) []part {
	c, w, i := r.severityCounts()
	parts := []part{
		{label: "Source", value: []seg{input(r.Source)}},
		{label: "Time range", value: []seg{prose("%s", fmtRange(r.From, r.To))}},
		{label: "Seen", value: []seg{prose("%d %s, %d %s, %d %s; %d messages accepted, %d rejected",
			r.Apps, plural(r.Apps, "app", "apps"), r.Instances, plural(r.Instances, "instance", "instances"),
			r.Resources, plural(r.Resources, "resource", "resources"), r.Messages, r.Rejected)}},
		{label: "Findings", value: []seg{prose("%d critical, %d warning, %d info", c, w, i)}},
	}
	if line := r.cannotJudge(); line != "" {
		parts = append(parts, part{label: "Breaker states", value: []seg{prose("%s", line)}})
	}
	for _, w := range r.warnings() {
		parts = append(parts, part{label: "Warning", value: []seg{w}})
	}
	return parts
}

func sections(r *Report) []section {
	out := make([]section, len(r.Findings))
	plans := planNumbers(r)
	for i := range r.Findings {
		f := &r.Findings[i]
		s := section{f: f}
		add := func(label string, value ...seg) { s.parts = append(s.parts, part{label: label, value: value}) }
		add(nameCount("Instances", len(f.Instances)), nameList(f.Instances)...)
		add("When", prose("%s", fmtRange(f.From, f.To)))
		if f.Facts != nil {
			for _, fact := range f.Facts.Evidence() {
				var value []seg
				for _, p := range fact.Parts {
					if p.Input != nil {
						value = append(value, nameList(p.Input)...)
					} else {
						value = append(value, prose("%s", p.Text))
					}
				}
				s.parts = append(s.parts, part{label: fact.Label, value: value})
				if fact.Rules != nil {
					s.parts = append(s.parts, part{block: ruleLines(fact.Rules.Breakers, fact.Rules.Flows)})
				}
			}
		}
		if len(f.Timelines) > 0 {
			lo, hi := timelineSpan(f.From, f.To)
			lines, unknown := timelineLines(f, lo, hi)
			legend := "▁ CLOSED, ▄ HALF_OPEN, █ OPEN"
			if unknown {
				legend += ", · not known"
			}
			add("Timeline", prose("%s; %s to %s UTC, %s per column",
				legend, fmtClock(lo), fmtClock(hi), fmtDur((hi-lo)/stripWidth)))
			s.parts = append(s.parts, part{block: lines})
		}
		if len(plans[i]) > 0 {
			s.parts = append(s.parts, planRef(r, plans[i]))
		}
		out[i] = s
	}
	return out
}

// ruleLines prints rules as one line of JSON each, sanitized.
func ruleLines(breakers []core.BreakerRule, flows []core.FlowRule) []string {
	var lines []string
	for _, b := range breakers {
		lines = append(lines, "breaker "+jsonLine(b))
	}
	for _, f := range flows {
		lines = append(lines, "flow    "+jsonLine(f))
	}
	if len(lines) == 0 {
		lines = append(lines, "(no rule)")
	}
	return lines
}

func jsonLine(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "(unprintable: " + err.Error() + ")"
	}
	return sanitize(string(b), maxBlockRunes)
}

// timelineSpan widens [from, to] a little so the states around it show.
func timelineSpan(from, to int64) (lo, hi int64) {
	pad := TimelinePad(from, to)
	return from - pad, to + pad
}

// TimelinePad is how far a finding's timeline reaches before its From and
// after its To, so that the states around it show: what a report's
// timelines are asked of the fleet model for (collector.Timelines).
func TimelinePad(from, to int64) int64 { return max((to-from)/20, 1000) }

// timelineLines draws each timeline over [lo, hi] with its instance's
// state at each end ("not known" where it is not, "left" after the
// instance went), and says whether any column is not known.
func timelineLines(f *triage.Finding, lo, hi int64) (lines []string, unknown bool) {
	width := 0
	names := make([]string, len(f.Timelines))
	for i, tl := range f.Timelines {
		names[i] = sanitize(tl.Instance, 32)
		width = max(width, utf8.RuneCountInString(names[i]))
	}
	lines = make([]string, 0, len(f.Timelines)+1)
	for i := range f.Timelines {
		tl := &f.Timelines[i]
		name := names[i] + strings.Repeat(" ", width-utf8.RuneCountInString(names[i]))
		cells := tl.Cells(stripEdges(lo, hi))
		first, last := tl.Start.String(), tl.End().String()
		if cells[0] == triage.StateUnknown {
			first = "not known"
		}
		if cells[len(cells)-1] == triage.StateUnknown {
			last = "not known"
			if tl.KnownTo != 0 && tl.KnownTo <= hi {
				last = "left"
			}
		}
		lines = append(lines, fmt.Sprintf("%s  %-9s %s %s", name, first, strip(tl, cells, lo, hi), last))
		unknown = unknown || slices.Contains(cells, triage.StateUnknown)
	}
	if more := len(f.Instances) - len(f.Timelines); more > 0 {
		why := "no state change to draw"
		if len(f.Timelines) == triage.MaxTimelines {
			why = "not drawn"
		}
		lines = append(lines, fmt.Sprintf("(%d other %s: %s)", more, plural(more, "instance", "instances"), why))
	}
	return lines, unknown
}

// stripEdges are the edges of a strip's columns over [lo, hi], the last
// column holding hi.
func stripEdges(lo, hi int64) []int64 {
	span := max(hi-lo, 1)
	edges := make([]int64, stripWidth+1)
	for c := range edges {
		edges[c] = lo + span*int64(c)/stripWidth
	}
	edges[stripWidth] = hi + 1
	return edges
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// strip draws a timeline over [lo, hi] in stripWidth columns: · where its
// state is not known (cells, by triage.Timeline.Cells, the rule every view
// draws with), else █ where the breaker was OPEN, ▄ where it entered
// HALF_OPEN (a probe: the report shows each one), ▁ otherwise.
func strip(tl *triage.Timeline, cells []core.State, lo, hi int64) string {
	var b strings.Builder
	state, i := tl.Start, 0
	span := max(hi-lo, 1)
	for c := range stripWidth {
		end := lo + span*int64(c+1)/stripWidth
		open, half := state == core.Open, state == core.HalfOpen
		for i < len(tl.Steps) && (tl.Steps[i].AtMs < end || c == stripWidth-1) {
			state = tl.Steps[i].To
			open = open || state == core.Open
			half = half || state == core.HalfOpen
			i++
		}
		switch {
		case cells[c] == triage.StateUnknown:
			b.WriteString("·")
		case half:
			b.WriteString("▄")
		case open:
			b.WriteString("█")
		default:
			b.WriteString("▁")
		}
	}
	return b.String()
}
