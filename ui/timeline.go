package ui

import (
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/sentinel-top/sentinel-top/collector"
)

// maxListedTransitions bounds the transitions listed for the selected
// instance (the newest are kept).
const maxListedTransitions = 12

// timeline draws one band per instance over the detail's time range, on a
// grid anchored to absolute time (grid.go), each cell the most severe
// state the breaker held within it, and lists the exact transitions of the
// selected instance. The bands are drawn once per data, size and range;
// the findings' evidence shows the same bands (band, ruler).
type timeline struct {
	st   *Styles
	keys *keyMap
	loc  *time.Location

	d       *collector.Detail
	cur     cursor // over the instances, all in sight
	focused bool
	width   int
	height  int // the detail screen's, which the transitions listed fit in
	listMax int
	rng     time.Duration
	stepMs  int64 // the input's resolution when coarser than 1 s (Prometheus), else 0

	// drawn by prepare: the grid, the column widths and each instance's band.
	g             grid
	nameW, bandW  int
	bands         []string
	bandInstances map[string]int
}

func newTimeline(st *Styles, keys *keyMap, loc *time.Location) timeline {
	return timeline{st: st, keys: keys, loc: loc, listMax: maxListedTransitions, rng: DefaultRange}
}

// SetInputStep sets the input's resolution, in ms, when it is coarser
// than per-second counts (the Prometheus source's step: CoarseInput); 0
// for per-second inputs. It bounds how far an inferred transition may be
// from its time.
func (t timeline) SetInputStep(ms int64) timeline { t.stepMs = max(ms, 0); return t }

// inferredBound is how close an inferred transition is to its time:
// "±1 s" from per-second counts, "within 15 s" from a coarser input.
func (t timeline) inferredBound() string {
	if t.stepMs > 1000 {
		return "within " + fmtSpanMs(t.stepMs)
	}
	return "±1 s"
}

// SetDetail sets the data, keeping the selected instance when it is still
// there.
func (t timeline) SetDetail(d *collector.Detail) timeline {
	pos := t.cur.Pos()
	if t.d != nil && d != nil && pos < len(t.d.Instances) {
		sel := t.d.Instances[pos].Instance
		for i := range d.Instances {
			if d.Instances[i].Instance == sel {
				pos = i
				break
			}
		}
	}
	t.d = d
	t.cur = t.cur.SetCount(t.instances()).Select(pos)
	return t.prepare()
}

// instances is the number of instances shown.
func (t timeline) instances() int {
	if t.d == nil {
		return 0
	}
	return len(t.d.Instances)
}

// SetSize sets the width and, through the height, how many transitions the
// selected instance lists: as many as fit under the bands in one screen.
func (t timeline) SetSize(w, h int) timeline {
	t.width, t.height = w, h
	return t.prepare()
}

// SetRange sets the time range the bands cover.
func (t timeline) SetRange(rng time.Duration) timeline {
	t.rng = rng
	return t.prepare()
}

// timelineLines are the timeline's lines besides the bands and the
// transitions: the legend, the axis and the selected instance's heading.
const timelineLines = 3

// Grid is the grid the bands are drawn on for data up to `to`: what the
// detail is fetched for, from its first cell on.
func (t timeline) Grid(to int64) grid {
	_, bandW := t.layout()
	return newGrid(to, t.rng.Milliseconds(), bandW, 1)
}

// prepare draws the bands for the data, the width and the range.
func (t timeline) prepare() timeline {
	if t.d == nil || t.width <= 0 {
		t.bands = nil
		return t
	}
	d := t.d
	t.listMax = max(3, min(maxListedTransitions, t.height-detailHeadLines-timelineLines-len(d.Instances)))
	t.nameW, t.bandW = t.layout()
	t.g = t.Grid(d.To)
	t.bands = make([]string, len(d.Instances))
	t.bandInstances = make(map[string]int, len(d.Instances))
	pad := strings.Repeat(" ", t.bandW-t.g.n)
	for i := range d.Instances {
		in := &d.Instances[i]
		t.bandInstances[in.Instance] = i
		var b strings.Builder
		switch {
		case in.Provenance == collector.ProvenanceUnknown && in.HasBreaker:
			padRight(&b, t.st.dim.on(unknownBand(t.bandW)), t.bandW)
		case !in.HasBreaker && in.Provenance != collector.ProvenanceInferred:
			padRight(&b, t.st.dim.on(noBreakerText(instanceRuleWord(in))), t.bandW)
		default:
			b.WriteString(pad)
			drawStates(&b, t.st, t.g.states(in.Timeline(), d.To))
		}
		t.bands[i] = b.String()
	}
	return t
}

// hasStates reports whether an instance's band draws states: it has a
// breaker rule, or states were inferred for it (from a metric log, which
// tells no rules), and its source can tell them.
func hasStates(in *collector.InstanceDetail) bool {
	return in.Provenance == collector.ProvenanceInferred || (in.HasBreaker && in.Provenance == collector.ProvenanceExact)
}

// unknownBand is the band of an instance whose source cannot tell breaker
// states, in w cells: the longest of its reasons that fits.
func unknownBand(w int) string {
	for _, s := range []string{
		glyphUnknown + " breaker states unknown: Java Sentinel and metric logs do not report them",
		glyphUnknown + " states unknown: not reported by this source",
		glyphUnknown + " states unknown",
	} {
		if width(s) <= w-2 { // apart from the state after it
			return s
		}
	}
	return cut(glyphUnknown+" unknown", w)
}

// provenances reports whether any instance's states are unknown, and
// whether any were inferred.
func provenances(d *collector.Detail) (unknown, inferred bool) {
	if d == nil {
		return false, false
	}
	for i := range d.Instances {
		switch d.Instances[i].Provenance {
		case collector.ProvenanceUnknown:
			unknown = unknown || d.Instances[i].HasBreaker
		case collector.ProvenanceInferred:
			inferred = true
		}
	}
	return unknown, inferred
}

// band is an instance's band as the timeline draws it, in bandW cells.
func (t timeline) band(instance string) (string, bool) {
	i, ok := t.bandInstances[instance]
	if !ok || t.bands == nil {
		return "", false
	}
	return t.bands[i], true
}

// ruler marks [from, to] on the bands' grid in bandW cells: ├──┤, with ◂
// or ▸ where the span runs past the range.
func (t timeline) ruler(from, to int64) string {
	g := t.g
	a, z := g.cell(from), g.cell(to)
	cells := []rune(strings.Repeat(" ", g.n))
	if z < 0 || a >= g.n {
		return strings.Repeat(" ", t.bandW)
	}
	for i := max(0, a); i <= min(z, g.n-1); i++ {
		cells[i] = '─'
	}
	switch {
	case a < 0:
		cells[0] = '◂'
	default:
		cells[a] = '├'
	}
	switch {
	case z >= g.n:
		cells[g.n-1] = '▸'
	case z > a:
		cells[z] = '┤'
	}
	return strings.Repeat(" ", t.bandW-g.n) + string(cells)
}

// Focus marks whether the timeline has the keyboard.
func (t timeline) Focus(on bool) timeline { t.focused = on; return t }

// Update moves the selection among the instances.
func (t timeline) Update(msg tea.Msg) (timeline, tea.Cmd) {
	if _, ok := msg.(tea.KeyMsg); ok {
		t.cur, _ = t.cur.Update(msg, t.keys)
	}
	return t, nil
}

// layout returns the widths of the name column and of the band.
func (t timeline) layout() (nameW, bandW int) {
	nameW = 8
	if t.d != nil {
		for i := range t.d.Instances {
			nameW = max(nameW, width(sanitize(t.d.Instances[i].Instance)))
		}
	}
	nameW = min(nameW, max(8, t.width/4))
	bandW = max(4, t.width-2-nameW-1-1-t.stateW()-9) // " ✖ OPEN  " and " hh:mm:ss"
	return nameW, bandW
}

// stateW is the width of the state after the bands: "● CLOSED", or
// "? unknown" and "● CLOSED~" when some instance's state is unknown or
// inferred.
func (t timeline) stateW() int {
	if unknown, inferred := provenances(t.d); unknown || inferred {
		return 9
	}
	return 8
}

// View renders the legend, the bands, the time axis and the selected
// instance's transitions. selLine reports the line of the selected band.
func (t timeline) View() string {
	s, _ := t.render()
	return s
}

func (t timeline) render() (string, int) {
	st, d := t.st, t.d
	if d == nil || t.width <= 0 || t.bands == nil {
		return "", 0
	}
	var b strings.Builder
	unknown, inferred := provenances(d)
	title := "TIMELINE"
	if t.focused {
		title = glyphCursor + " TIMELINE"
	}
	legend := st.title.on(title) + "  " + stateLegend(st, unknown, inferred)
	if note := st.dim.on("  a cell (" + fmtMs(t.g.step) + ") shows the worst state in it"); width(legend)+width(note) <= t.width {
		legend += note
	}
	b.WriteString(fitLine(legend, t.width))
	if len(d.Instances) == 0 {
		b.WriteString("\n" + st.dim.on("  no instance reports this resource in the range"))
		return b.String(), 1
	}
	nameW := t.nameW
	selLine, sel := 0, t.cur.Pos()
	for i := range d.Instances {
		in := &d.Instances[i]
		b.WriteByte('\n')
		selected := i == sel
		if selected {
			selLine = i + 1
		}
		var line strings.Builder
		line.WriteString(listMark(selected, t.focused))
		nm := safeName(in.Instance, nameW)
		if in.Drift {
			padRight(&line, st.drift.on(nm), nameW)
		} else {
			padRight(&line, nm, nameW)
		}
		line.WriteByte(' ')
		line.WriteString(t.bands[i])
		line.WriteByte(' ')
		switch {
		case in.Gone:
			line.WriteString(st.dim.on("gone"))
		case in.HasBreaker || hasStates(in):
			padRight(&line, st.stateOf(in.State, in.Provenance), t.stateW())
			if in.StateSince > 0 && in.Provenance != collector.ProvenanceUnknown {
				line.WriteString(st.dim.on(" " + t.clock(in.StateSince)))
			}
		}
		s := fitLine(line.String(), t.width)
		if selected && t.focused {
			s = st.selected.on(ansiStripIfColor(st, s))
		}
		b.WriteString(s)
	}
	// the axis: clock times where round times begin.
	b.WriteByte('\n')
	b.WriteString(st.dim.on(fitLine(strings.Repeat(" ", 2+nameW+1+t.bandW-t.g.n)+t.g.axis(t.loc), t.width)))
	// the selected instance's transitions, newest last.
	in := &d.Instances[sel]
	b.WriteByte('\n')
	tr := in.Transitions
	head := safeName(in.Instance, max(8, t.width/3)) + ": "
	switch {
	case in.Provenance == collector.ProvenanceUnknown && in.HasBreaker:
		head += "states unknown: not reported, and none inferred from counts"
	case !hasStates(in):
		head += noBreakerText(instanceRuleWord(in))
	case len(tr) == 0:
		head += "no transition in range, " + stateWord(in.Start) + " throughout"
	default:
		head += strconv.Itoa(len(tr)) + " " + plural(len(tr), "transition", "transitions") + " in range"
		if len(tr) > t.listMax {
			head += ", the last " + strconv.Itoa(t.listMax) + " below"
		}
	}
	if in.Provenance == collector.ProvenanceInferred {
		head += " (inferred from counts, " + t.inferredBound() + ")"
	}
	b.WriteString(fitLine(st.bold.on(head), t.width))
	// the newest: a list of a page, at its bottom.
	newest, end := cursor{}.SetPage(t.listMax).SetCount(len(tr)).Bottom().Bounds()
	for i := newest; i < end; i++ {
		b.WriteByte('\n')
		b.WriteString(fitLine(t.transition(&tr[i]), t.width))
	}
	return b.String(), selLine
}

// stateLegend names the bands' glyphs, worst first, then the marks of
// unknown and inferred states when some instance has them.
func stateLegend(st *Styles, unknown, inferred bool) string {
	s := st.open.on(bandOpen+" OPEN") + "  " + st.half.on(bandHalf+" HALF") + "  " +
		st.closed.on(bandClosed+" CLOSED") + "  " + st.dim.on(bandNone+" no data")
	if unknown {
		s += "  " + st.dim.on(glyphUnknown+" unknown")
	}
	if inferred {
		s += "  " + markInferred + " inferred"
	}
	return s
}

// listMark is the mark before a list's item: ▸ on the selected one of the
// panel with the keyboard, ▹ on the selected one of another.
func listMark(selected, focused bool) string {
	switch {
	case selected && focused:
		return glyphCursor + " "
	case selected:
		return glyphCursorIdle + " "
	}
	return "  "
}

// ansiStripIfColor drops the cells' own colours so the selection's reverse
// video covers the whole line.
func ansiStripIfColor(st *Styles, s string) string {
	if !st.color {
		return s
	}
	return ansi.Strip(s)
}

// transition renders one transition with its evidence.
func (t timeline) transition(tr *collector.Transition) string {
	st := t.st
	var b strings.Builder
	b.WriteString("    ")
	if tr.Inferred {
		// dated to the second in which counts showed it.
		b.WriteString(time.UnixMilli(tr.AtMs).In(t.loc).Format("15:04:05") + "    ")
	} else {
		b.WriteString(time.UnixMilli(tr.AtMs).In(t.loc).Format("15:04:05.000"))
	}
	b.WriteString("  ")
	b.WriteString(st.state(tr.From))
	b.WriteString(" → ")
	b.WriteString(st.state(tr.To))
	if tr.Snapshot != nil {
		w := tr.Snapshot
		b.WriteString(st.dim.on("  window " + strconv.FormatInt(w.Bad, 10) + " bad of " +
			strconv.FormatInt(w.Total, 10) + " = " + strconv.FormatFloat(w.Value, 'f', 2, 64)))
	}
	if tr.Probe != nil {
		p := "  probe " + fmtMs(tr.Probe.RtMs)
		if tr.Probe.Error {
			p += " error"
		}
		b.WriteString(st.dim.on(p))
	}
	if tr.Restart {
		b.WriteString(st.dim.on("  the process restarted"))
	}
	if tr.RuleID != "" {
		b.WriteString(st.dim.on("  rule " + safeName(tr.RuleID, 24)))
	}
	if tr.Inferred {
		b.WriteString("  " + markInferred + " inferred, " + t.inferredBound())
	}
	return b.String()
}

func (t timeline) clock(ms int64) string {
	return time.UnixMilli(ms).In(t.loc).Format("15:04:05")
}
