package ui

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/guptarohit/asciigraph"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// detailPanel is the part of the detail screen that has the keyboard.
type detailPanel uint8

const (
	panelTimeline detailPanel = iota
	panelFindings
	numDetailPanels
)

// detailView is the detail screen of one app x resource: the instances'
// timelines, charts of traffic, ratio and latency against the rule, each
// instance's rules with drift marked, and the resource's findings. It is
// one document, built when its data or size changes, scrolled by View.
type detailView struct {
	st   *Styles
	keys *keyMap
	loc  *time.Location

	app, res string
	d        *collector.Detail
	loaded   bool
	// row is the resource's row in the snapshot shown (for the average RT
	// where the source has no p99); hasRow is false when there is none.
	row    collector.ResourceRow
	hasRow bool
	// plans are the resource's rule plans in the snapshot shown.
	plans []triage.Plan

	tl    timeline
	focus detailPanel
	fcur  cursor // over the findings, all in the document
	// goTo is the finding to select when the data arrives (opened from
	// the alerts), nil when none.
	goTo *triage.Finding

	width, height int
	scroll        window // over lines
	lines         []string
	selLine       int // the first line of the selection, kept in sight
	selEnd        int // its last line
}

func newDetailView(st *Styles, keys *keyMap, loc *time.Location) detailView {
	return detailView{st: st, keys: keys, loc: loc, tl: newTimeline(st, keys, loc).Focus(true)}
}

// Open starts showing a resource; its data arrives with SetDetail. With
// a finding, the view opens on it, its whole text in sight.
func (v detailView) Open(app, res string, f *triage.Finding) detailView {
	v.app, v.res = app, res
	v.d, v.loaded = nil, false
	v.tl = v.tl.SetDetail(nil).Focus(true)
	v.focus, v.fcur, v.scroll, v.goTo = panelTimeline, cursor{}, window{}, f
	return v.build()
}

// Is reports whether the view shows app x res.
func (v detailView) Is(app, res string) bool { return v.app == app && v.res == res }

// SetDetail sets the data (nil: nothing known of the resource).
func (v detailView) SetDetail(d *collector.Detail) detailView {
	v.d, v.loaded = d, true
	v.tl = v.tl.SetDetail(d)
	if d == nil {
		return v.build()
	}
	v.fcur = v.fcur.SetCount(len(d.Findings))
	if f := v.goTo; f != nil {
		v.goTo = nil
		for i := range d.Findings {
			if d.Findings[i].Kind == f.Kind && d.Findings[i].From == f.From {
				v.focus, v.fcur = panelFindings, v.fcur.Select(i)
				v.tl = v.tl.Focus(false)
				return v.build().reveal()
			}
		}
	}
	return v.build()
}

// SetRow sets the resource's row of the snapshot shown.
func (v detailView) SetRow(r collector.ResourceRow, ok bool) detailView {
	v.row, v.hasRow = r, ok
	return v
}

// SetInputStep sets the input's resolution when coarser than 1 s (ms; 0
// for per-second inputs): the bound said of inferred transitions.
func (v detailView) SetInputStep(ms int64) detailView {
	v.tl = v.tl.SetInputStep(ms)
	return v
}

// SetPlans sets the resource's plans in the snapshot shown.
func (v detailView) SetPlans(plans []triage.Plan) detailView {
	v.plans = plans
	return v
}

// detailHeadLines are the detail's lines above the timeline: the title,
// the rule and a blank line.
const detailHeadLines = 3

// SetRange sets the time range shown.
func (v detailView) SetRange(rng time.Duration) detailView {
	v.tl = v.tl.SetRange(rng)
	return v.build()
}

// FetchFrom is where the Detail for data up to `to` should begin: the
// first cell of the timeline's grid, so that every cell drawn is whole.
func (v detailView) FetchFrom(to int64) int64 { return v.tl.Grid(to).from() }

// SetSize sets the screen area of the view.
func (v detailView) SetSize(w, h int) detailView {
	v.width, v.height = w, h
	v.tl = v.tl.SetSize(w, h)
	return v.build()
}

// Update moves the selection of the focused panel, switches panels and
// scrolls.
func (v detailView) Update(msg tea.Msg) (detailView, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		k := v.keys
		switch {
		case key.Matches(msg, k.Tab):
			step := detailPanel(1)
			if msg.String() == "shift+tab" {
				step = numDetailPanels - 1
			}
			v.focus = (v.focus + step) % numDetailPanels
			v.tl = v.tl.Focus(v.focus == panelTimeline)
			v = v.build()
			return v.reveal(), nil
		case key.Matches(msg, k.PgUp):
			v.scroll = v.scroll.ScrollBy(-max(1, v.height-1))
			return v, nil
		case key.Matches(msg, k.PgDn):
			v.scroll = v.scroll.ScrollBy(max(1, v.height-1))
			return v, nil
		}
		if v.focus == panelTimeline {
			v.tl, _ = v.tl.Update(msg)
		} else {
			n := 0
			if v.d != nil {
				n = len(v.d.Findings)
			}
			v.fcur, _ = v.fcur.SetCount(n).Update(msg, k)
		}
		v = v.build()
		return v.reveal(), nil
	case tea.MouseMsg:
		switch msg.Button {
		case tea.MouseButtonWheelUp:
			v.scroll = v.scroll.ScrollBy(-wheelStep)
		case tea.MouseButtonWheelDown:
			v.scroll = v.scroll.ScrollBy(wheelStep)
		}
		return v, nil
	}
	return v, nil
}

// reveal scrolls so the selection is in sight.
func (v detailView) reveal() detailView {
	v.scroll = v.scroll.Reveal(v.selLine, v.selEnd)
	return v
}

// clampScroll fits the scroll to the lines built.
func (v detailView) clampScroll() detailView {
	v.scroll = v.scroll.Resize(len(v.lines), v.height)
	return v
}

// View renders the lines in sight.
func (v detailView) View() string {
	if v.height <= 0 {
		return ""
	}
	first := v.scroll.Offset()
	end := min(len(v.lines), first+v.height)
	var b strings.Builder
	for i := first; i < end; i++ {
		if i > first {
			b.WriteByte('\n')
		}
		b.WriteString(v.lines[i])
	}
	for i := end - first; i < v.height; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// ScrollInfo is the first line shown and the number of lines.
func (v detailView) ScrollInfo() (first, total int) { return v.scroll.Offset(), len(v.lines) }

// build renders the whole document into lines.
func (v detailView) build() detailView {
	v.lines = v.lines[:0]
	if v.width <= 0 {
		return v
	}
	st := v.st
	add := func(s string) {
		for _, l := range strings.Split(s, "\n") {
			v.lines = append(v.lines, fitLine(l, v.width))
		}
	}
	title := st.title.on(safeName(v.app, max(8, v.width/4))) + st.dim.on(" / ") +
		st.title.on(safeName(v.res, max(12, v.width/2)))
	d := v.d
	switch {
	case !v.loaded:
		add(title)
		add(st.dim.on("loading…"))
		return v.clampScroll()
	case d == nil:
		add(title)
		add(st.dim.on("nothing is known of this resource in the range (it may have gone; esc goes back)"))
		return v.clampScroll()
	}
	add(title)
	add(v.ruleLine(d) + st.dim.on(" · "+instancesWord(d)+" · "+
		v.clock(d.From)+"–"+v.clock(d.To)+" · step "+fmtMs(d.StepMs)))
	add("")
	tl, sel := v.tl.render()
	base := len(v.lines)
	add(tl)
	if v.focus == panelTimeline {
		v.selLine, v.selEnd = base, base+sel // the legend to the selected band
	}
	add("")
	v.charts(add)
	add("")
	if hasHot(d) {
		v.hot(add)
		add("")
	}
	v.rules(add)
	add("")
	v.findings(add)
	if len(v.plans) > 0 {
		add("")
		v.planLines(add)
	}
	return v.clampScroll()
}

func (v detailView) clock(ms int64) string { return time.UnixMilli(ms).In(v.loc).Format("15:04:05") }

// instancesWord counts a detail's instances as the table's INST does
// (the live ones), and the departed ones apart: "4 instances", "3
// instances live, 1 gone", "0 instances live, 4 gone".
func instancesWord(d *collector.Detail) string {
	gone := 0
	for i := range d.Instances {
		if d.Instances[i].Gone {
			gone++
		}
	}
	n := len(d.Instances)
	if gone == 0 {
		return strconv.Itoa(n) + " " + plural(n, "instance", "instances")
	}
	return strconv.Itoa(n-gone) + " " + plural(n-gone, "instance", "instances") + " live, " + strconv.Itoa(gone) + " gone"
}

// ruleLine describes the breaker most live instances have, or with none
// live, the departed ones' last known.
func (v detailView) ruleLine(d *collector.Detail) string {
	if !d.HasBreaker {
		return v.st.dim.on(noBreakerText(detailRuleWord(d)))
	}
	s := d.Strategy.String() + " " + fmtThreshold(d.Strategy, d.Threshold)
	if d.Strategy == core.SlowRequestRatio {
		s += " maxRt " + fmtMs(int64(d.MaxAllowedRtMs))
	}
	if d.RulesOfGone {
		s += v.st.dim.on(" (last known: every instance gone)")
	}
	return s
}

// charts adds the pass/block, ratio and p99 charts, side by side when the
// screen is wide.
func (v *detailView) charts(add func(string)) {
	d, st := v.d, v.st
	if d.StepMs <= 0 || len(d.PassQPS) == 0 {
		add(st.dim.on("no traffic recorded for this resource in the range"))
		return
	}
	h := 7
	if v.height >= 30 {
		h = 9
	}
	cols := 1
	if v.width >= 110 {
		cols = 2
	}
	cw := (v.width - (cols-1)*2) / cols
	g := newGrid(d.To, v.tl.rng.Milliseconds(), chartPoints(cw), d.StepMs)
	start := floorDiv(d.From, d.StepMs) * d.StepMs // the ring's step the series begins in
	mk := func(title string, fmt func(float64) string, floor float64, ss ...series) chart {
		return chart{st: st, title: title, series: ss, format: fmt, floor: floor, g: g, start: start,
			stepMs: d.StepMs, loc: v.loc}.SetSize(cw, h)
	}
	pass, block := traffic(d)
	traffic := mk("PASS/S and BLOCK/S", fmtRateLabel, 1,
		series{name: "pass/s", values: pass, color: asciigraph.Green},
		series{name: "block/s", values: block, glyph: "•", color: asciigraph.Yellow})
	var ratio chart
	switch {
	case d.HasBreaker && d.Strategy == core.ErrorRatio:
		ratio = mk("ERROR RATIO", fmtPctLabel, 0.1, series{name: "error ratio", values: d.ErrorRatio, color: asciigraph.Blue})
		ratio.hasLimit, ratio.limit, ratio.limitName = true, d.Threshold, "threshold "+fmtPct(d.Threshold)
	case d.HasBreaker && d.Strategy == core.ErrorCount:
		ratio = mk("ERROR RATIO (the breaker counts errors: trips at "+fmtThreshold(d.Strategy, d.Threshold)+")",
			fmtPctLabel, 0.1, series{name: "error ratio", values: d.ErrorRatio, color: asciigraph.Blue})
	default:
		ratio = mk("SLOW RATIO", fmtPctLabel, 0.1, series{name: "slow ratio", values: d.SlowRatio, color: asciigraph.Blue})
		if v.hasRow && v.row.SlowUnknown {
			ratio.empty = "slow calls unknown: the source does not count them (Java Sentinel, metric logs)"
		}
		if d.HasBreaker {
			ratio.hasLimit, ratio.limit, ratio.limitName = true, d.Threshold, "threshold "+fmtPct(d.Threshold)
		}
	}
	p99s, averagesOnly := p99Series(d)
	p99 := mk("P99 RT", fmtMsLabel, 1, series{name: "p99", values: p99s, color: asciigraph.Blue})
	if v.hasRow && v.row.RTUnknown {
		p99.empty = "response times unknown: the source does not read them (Prometheus)"
	} else if averagesOnly {
		p99.empty = "p99 unknown: the source reports average RTs only (Java Sentinel, metric logs)"
		if v.hasRow && v.row.Completed > 0 && !v.row.HasP99 {
			p99.empty += "; avg RT " + fmtMs(int64(math.Round(v.row.AvgRtMs))) + " now"
		}
	}
	if d.HasBreaker && d.Strategy == core.SlowRequestRatio && d.MaxAllowedRtMs > 0 {
		p99.hasLimit, p99.limit, p99.limitName = true, float64(d.MaxAllowedRtMs), "maxAllowedRtMs "+strconv.FormatUint(d.MaxAllowedRtMs, 10)
	}
	all := []chart{traffic, ratio, p99}
	for i := 0; i < len(all); i += cols {
		if i > 0 {
			add("")
		}
		if cols == 1 || i+1 >= len(all) {
			add(all[i].View())
			continue
		}
		left := strings.Split(all[i].View(), "\n")
		right := strings.Split(all[i+1].View(), "\n")
		for j := 0; j < max(len(left), len(right)); j++ {
			l, r := "", ""
			if j < len(left) {
				l = left[j]
			}
			if j < len(right) {
				r = right[j]
			}
			add(fitLine(l, cw) + "  " + r)
		}
	}
}

// detailRuleWord is ruleWord of a detail: the rules that guard the
// resource on any of its instances.
func detailRuleWord(d *collector.Detail) string {
	var flow, param, unknown bool
	for i := range d.Instances {
		in := &d.Instances[i]
		flow, param = flow || len(in.Flows) > 0, param || len(in.Params) > 0
		unknown = unknown || in.RulesUnknown
	}
	return ruleWord(flow, param, unknown)
}

// instanceRuleWord is ruleWord of one instance of a detail.
func instanceRuleWord(in *collector.InstanceDetail) string {
	return ruleWord(len(in.Flows) > 0, len(in.Params) > 0, in.RulesUnknown)
}

// noBreakerText says a ruleWord where a breaker's rule or states would
// be: "flow rules, no breaker rule".
func noBreakerText(word string) string {
	switch word {
	case noRule:
		return "no breaker rule"
	case rulesUnknown:
		return rulesUnknown
	}
	return word + " rules, no breaker rule"
}

// p99Series is the p99 per step, NaN where it is not known: no call
// completed, or the calls that did came without an RT histogram (the
// collector's p99 of an empty histogram is 0, and of any other at least
// 1 ms). averagesOnly is set when calls completed in the range and none
// came with a histogram.
func p99Series(d *collector.Detail) (p99 []float64, averagesOnly bool) {
	p99 = make([]float64, len(d.P99Ms))
	completed, measured := false, false
	for i, v := range d.P99Ms {
		done := i < len(d.ErrorRatio) && !math.IsNaN(d.ErrorRatio[i]) // some call completed
		completed = completed || done
		if !done || v == 0 || math.IsNaN(v) {
			v = math.NaN()
		}
		measured = measured || !math.IsNaN(v)
		p99[i] = v
	}
	return p99, completed && !measured
}

// traffic is the pass and block series with NaN, not 0, in the steps
// without any traffic: no data is a gap in the chart.
func traffic(d *collector.Detail) (pass, block []float64) {
	pass = make([]float64, len(d.PassQPS))
	block = make([]float64, len(d.PassQPS))
	for i := range d.PassQPS {
		pass[i], block[i] = d.PassQPS[i], d.BlockQPS[i]
		if !hasTraffic(d, i) {
			pass[i], block[i] = math.NaN(), math.NaN()
		}
	}
	return pass, block
}

// hasTraffic reports whether step i of d saw any request: passed, blocked
// or completed.
func hasTraffic(d *collector.Detail, i int) bool {
	return d.PassQPS[i] > 0 || (i < len(d.BlockQPS) && d.BlockQPS[i] > 0) ||
		(i < len(d.SlowRatio) && !math.IsNaN(d.SlowRatio[i]))
}

// rules adds each instance's rules for the resource, drift marked.
func (v *detailView) rules(add func(string)) {
	st, d := v.st, v.d
	drift := 0
	for i := range d.Instances {
		if d.Instances[i].Drift {
			drift++
		}
	}
	head := st.title.on("RULES")
	if drift > 0 {
		what := " instances differ"
		if drift == 1 {
			what = " instance differs"
		}
		head += "  " + st.drift.on(glyphDrift+" "+strconv.Itoa(drift)+what+" from the app's usual rules")
	}
	add(head)
	nameW := 8
	for i := range d.Instances {
		nameW = max(nameW, width(sanitize(d.Instances[i].Instance)))
	}
	nameW = min(nameW, max(8, v.width/5))
	verW := 7
	for i := range d.Instances {
		verW = max(verW, width(sanitize(d.Instances[i].RulesVersion)))
	}
	verW = min(verW, 16)
	restW := max(10, v.width-2-nameW-1-verW-1)
	for i := range d.Instances {
		in := &d.Instances[i]
		var rules []string
		for j := range in.Breakers {
			rules = append(rules, breakerText(&in.Breakers[j]))
		}
		for j := range in.Flows {
			rules = append(rules, flowText(&in.Flows[j]))
		}
		for j := range in.Params {
			rules = append(rules, hotRuleText(&in.Params[j]))
		}
		switch {
		case len(rules) > 0:
		case in.RulesUnknown:
			rules = append(rules, rulesUnknown) // a metric log tells none
		default:
			rules = append(rules, noRule)
		}
		for j, r := range rules {
			var b strings.Builder
			if j == 0 {
				if in.Drift {
					b.WriteString(glyphDrift + " ")
				} else {
					b.WriteString("  ")
				}
				padRight(&b, safeName(in.Instance, nameW), nameW)
				b.WriteByte(' ')
				padRight(&b, safeName(in.RulesVersion, verW), verW)
			} else {
				b.WriteString(strings.Repeat(" ", 2+nameW+1+verW))
			}
			b.WriteByte(' ')
			b.WriteString(cut(r, restW))
			line := b.String()
			if in.Drift {
				line = st.drift.on(line)
			}
			add(line)
		}
	}
}

// findings adds the resource's findings with evidence and advice.
func (v *detailView) findings(add func(string)) {
	st, d := v.st, v.d
	title := "FINDINGS"
	if v.focus == panelFindings {
		title = glyphCursor + " FINDINGS"
	}
	if len(d.Findings) == 0 {
		add(st.title.on(title) + st.dim.on("  none for this resource"))
		if v.focus == panelFindings {
			v.selLine, v.selEnd = len(v.lines)-1, len(v.lines)-1
		}
		return
	}
	add(st.title.on(title))
	for i := range d.Findings {
		f := &d.Findings[i]
		selected := v.focus == panelFindings && i == v.fcur.Pos()
		start := len(v.lines)
		for _, l := range findingLines(st, f, v.width, v.loc, selected, &v.tl) {
			add(l)
		}
		if selected {
			v.selLine, v.selEnd = start, len(v.lines)-1
		}
	}
}
