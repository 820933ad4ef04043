// The detail screen's words: a rule as text, and a finding with its
// evidence, its instances' timelines and its advice, wrapped to a width.

package ui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// fmtThreshold renders a breaker's threshold: a ratio as a percentage.
func fmtThreshold(s core.Strategy, v float64) string {
	if s.IsRatio() {
		return fmtPct(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// breakerText renders a breaker rule on one line.
func breakerText(r *core.BreakerRule) string {
	var b strings.Builder
	b.WriteString(r.Strategy.String())
	b.WriteString(" ")
	b.WriteString(fmtThreshold(r.Strategy, r.Threshold))
	if r.Strategy == core.AverageRT {
		b.WriteString("ms avg (Java before 1.8: opens after min slow calls in a row)")
	}
	if r.Strategy == core.SlowRequestRatio {
		b.WriteString(" maxRt " + fmtMs(int64(r.MaxAllowedRtMs)))
	}
	b.WriteString(" retry " + fmtMs(int64(r.RetryTimeoutMs)))
	b.WriteString(" min " + strconv.FormatUint(r.MinRequestAmount, 10))
	b.WriteString(" stat " + fmtMs(int64(r.StatIntervalMs)) + "/" + strconv.FormatUint(uint64(r.StatSlidingWindowBucketCount), 10))
	if r.ProbeNum > 0 {
		b.WriteString(" probes " + strconv.FormatUint(r.ProbeNum, 10))
	}
	if r.ID != "" {
		b.WriteString(" id " + safeName(r.ID, 16))
	}
	if r.Pattern != "" {
		b.WriteString(" regex " + safeName(r.Pattern, 40)) // governs every resource it fully matches
	}
	if r.LimitApp != "" {
		b.WriteString(" limitApp " + safeName(r.LimitApp, 24))
	}
	return b.String()
}

// flowText renders a flow rule on one line.
func flowText(r *core.FlowRule) string {
	var b strings.Builder
	b.WriteString("flow " + strconv.FormatFloat(r.Threshold, 'f', -1, 64) + "/s " + r.ControlBehavior.String())
	if r.ControlBehavior == core.Throttling {
		b.WriteString(" queue " + fmtMs(int64(r.MaxQueueingTimeMs)))
	}
	if r.TokenCalculateStrategy == core.WarmUp {
		b.WriteString(" warm-up " + strconv.FormatUint(uint64(r.WarmUpPeriodSec), 10) + "s")
	}
	if r.ID != "" {
		b.WriteString(" id " + safeName(r.ID, 16))
	}
	if r.Pattern != "" {
		b.WriteString(" regex " + safeName(r.Pattern, 40))
	}
	if r.LimitApp != "" {
		b.WriteString(" limitApp " + safeName(r.LimitApp, 24))
	}
	return b.String()
}

// findingLines renders a finding: its headline, summary, evidence, its
// instances' bands as the timeline draws them with the finding's span
// marked under them, and the advice.
func findingLines(st *Styles, f *triage.Finding, w int, loc *time.Location, selected bool, tl *timeline) []string {
	var out []string
	clock := func(ms int64) string { return time.UnixMilli(ms).In(loc).Format("15:04:05") }
	var h strings.Builder
	h.WriteString(listMark(selected, true))
	st.sevPaint(f.Severity).write(&h, sevMark(f.Severity)+" "+sevWord(f.Severity))
	h.WriteString(" " + st.bold.on(string(f.Kind)))
	h.WriteString("  " + clock(f.From) + "–" + clock(f.To))
	if len(f.Instances) > 0 {
		h.WriteString("  " + joinNames(f.Instances, max(12, w/2)))
	}
	line := fitLine(h.String(), w)
	if selected && st.color {
		line = st.selected.on(ansi.Strip(line))
	}
	out = append(out, line)
	const indent = "      "
	for _, l := range wrap(sanitize(f.Summary), w-len(indent)) {
		out = append(out, indent+l)
	}
	if ev := evidence(f); ev != "" {
		for _, l := range wrap("evidence: "+ev, w-len(indent)) {
			out = append(out, indent+st.dim.on(l))
		}
	}
	out = append(out, findingBands(st, f, tl)...)
	for _, l := range wrap("advice: "+sanitize(f.Advice), w-len(indent)) {
		out = append(out, indent+l)
	}
	return out
}

// findingBands are the bands of a finding's instances (up to
// triage.MaxTimelines) in the timeline's columns, the same cells the
// timeline shows, and a ruler marking the finding's span under them.
func findingBands(st *Styles, f *triage.Finding, tl *timeline) []string {
	var out []string
	row := func(name, band string) string {
		var b strings.Builder
		b.WriteString("  ")
		padRight(&b, name, tl.nameW)
		b.WriteByte(' ')
		b.WriteString(band)
		return fitLine(b.String(), tl.width)
	}
	for _, name := range f.Instances {
		if len(out) == triage.MaxTimelines {
			break
		}
		if band, ok := tl.band(name); ok {
			out = append(out, row(safeName(name, tl.nameW), band))
		}
	}
	if len(out) > 0 {
		out = append(out, row(st.dim.on("span"), st.dim.on(tl.ruler(f.From, f.To))))
	}
	return out
}

// evidence renders a finding's own facts on one line: "label value; ...",
// input strings sanitized and elided.
func evidence(f *triage.Finding) string {
	if f.Facts == nil {
		return ""
	}
	var parts []string
	for _, fact := range f.Facts.Evidence() {
		var b strings.Builder
		b.WriteString(strings.ToLower(fact.Label[:1]) + fact.Label[1:])
		b.WriteByte(' ')
		for _, p := range fact.Parts {
			if p.Input != nil {
				b.WriteString(joinNames(p.Input, 32))
			} else {
				b.WriteString(p.Text)
			}
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

// joinNames lists sanitized names in about w cells: "a, b, c +5".
func joinNames(names []string, w int) string {
	return joinEach(len(names), w, func(i int) string { return safeName(names[i], 24) })
}

// joinEach lists n items, item(i) each, in about w cells, the number of
// those left out at its end: "a, b, c +5".
func joinEach(n, w int, item func(i int) string) string {
	var b strings.Builder
	for i := range n {
		s := item(i)
		if i > 0 && width(b.String())+2+width(s) > w {
			b.WriteString(" +" + strconv.Itoa(n-i))
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// wrap breaks trusted text into lines of at most w cells at spaces.
func wrap(s string, w int) []string {
	if w < 8 {
		w = 8
	}
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case width(line)+1+width(word) <= w:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
		for width(line) > w {
			head := ansi.Truncate(line, w, "")
			out = append(out, head)
			line = line[len(head):]
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}
