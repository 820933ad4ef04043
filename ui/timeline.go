package ui

import (
	"math"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// maxListedTransitions bounds the transitions listed for the selected
// instance (the newest are kept).
const maxListedTransitions = 12

// timeline draws one band per instance over the detail's time range, each
// cell the state the breaker was in during its slice of time, and lists the
// exact transitions of the selected instance.
type timeline struct {
	st   *Styles
	keys *keyMap
	loc  *time.Location

	d       *collector.Detail
	cur     cursor // over the instances, all in sight
	focused bool
	width   int
	listMax int
	// dataFrom is when the resource's first data in the range is.
	dataFrom int64
}

func newTimeline(st *Styles, keys *keyMap, loc *time.Location) timeline {
	return timeline{st: st, keys: keys, loc: loc, listMax: maxListedTransitions}
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
	t.dataFrom = firstData(d)
	t.cur = t.cur.SetCount(t.instances()).Select(pos)
	return t
}

// instances is the number of instances shown.
func (t timeline) instances() int {
	if t.d == nil {
		return 0
	}
	return len(t.d.Instances)
}

// SetSize sets the width and, through the height, how many transitions the
// selected instance lists.
func (t timeline) SetSize(w, h int) timeline {
	t.width = w
	t.listMax = max(3, min(maxListedTransitions, h/3))
	return t
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
	for i := range t.d.Instances {
		nameW = max(nameW, width(sanitize(t.d.Instances[i].Instance)))
	}
	nameW = min(nameW, max(8, t.width/4))
	const stateW = 1 + 8 + 9 // " ✖ OPEN  " and "since hh:mm:ss"
	bandW = max(4, t.width-2-nameW-1-stateW)
	return nameW, bandW
}

// View renders the legend, the bands, the time axis and the selected
// instance's transitions. selLine reports the line of the selected band.
func (t timeline) View() string {
	s, _ := t.render()
	return s
}

func (t timeline) render() (string, int) {
	st, d := t.st, t.d
	if d == nil || t.width <= 0 {
		return "", 0
	}
	var b strings.Builder
	title := "TIMELINE"
	if t.focused {
		title = glyphCursor + " TIMELINE"
	}
	legend := st.title.on(title) + "  " + st.closed.on(bandClosed+" CLOSED") + "  " + st.half.on(bandHalf+" HALF") +
		"  " + st.open.on(bandOpen+" OPEN") + "  " + st.dim.on(bandNone+" no data")
	if note := st.dim.on("  (a probe or a trip shows in its cell)"); width(legend)+width(note) <= t.width {
		legend += note
	}
	b.WriteString(fitLine(legend, t.width))
	if len(d.Instances) == 0 {
		b.WriteString("\n" + st.dim.on("  no instance reports this resource in the range"))
		return b.String(), 1
	}
	nameW, bandW := t.layout()
	selLine, sel := 0, t.cur.Pos()
	for i := range d.Instances {
		in := &d.Instances[i]
		b.WriteByte('\n')
		selected := i == sel
		if selected {
			selLine = i + 1
		}
		var line strings.Builder
		if selected {
			line.WriteString(glyphCursor + " ")
		} else {
			line.WriteString("  ")
		}
		nm := safeName(in.Instance, nameW)
		if in.Drift {
			padRight(&line, st.drift.on(nm), nameW)
		} else {
			padRight(&line, nm, nameW)
		}
		line.WriteByte(' ')
		if !in.HasBreaker {
			padRight(&line, st.dim.on("no breaker rule"), bandW)
		} else {
			t.band(&line, in.Start, in.Transitions, d.From, d.To, bandW)
		}
		line.WriteByte(' ')
		switch {
		case in.Gone:
			line.WriteString(st.dim.on("gone"))
		case in.HasBreaker:
			padRight(&line, st.state(in.State), 8)
			if in.StateSince > 0 {
				line.WriteString(st.dim.on(" " + t.clock(in.StateSince)))
			}
		}
		s := fitLine(line.String(), t.width)
		if selected && t.focused {
			s = st.selected.on(ansiStripIfColor(st, s))
		}
		b.WriteString(s)
	}
	// the axis: the range's ends and its middle.
	b.WriteByte('\n')
	from, to := t.clock(d.From), t.clock(d.To)
	var ax strings.Builder
	ax.WriteString(strings.Repeat(" ", 2+nameW+1))
	if bandW >= len(from)+len(to)+2 {
		ax.WriteString(from)
		mid := t.clock((d.From + d.To) / 2)
		gap := bandW - len(from) - len(to)
		if gap >= len(mid)+4 {
			l := (gap - len(mid)) / 2
			ax.WriteString(strings.Repeat(" ", l))
			ax.WriteString(mid)
			ax.WriteString(strings.Repeat(" ", gap-len(mid)-l))
		} else {
			ax.WriteString(strings.Repeat(" ", gap))
		}
		ax.WriteString(to)
	}
	b.WriteString(st.dim.on(fitLine(ax.String(), t.width)))
	// the selected instance's transitions, newest last.
	in := &d.Instances[sel]
	b.WriteByte('\n')
	tr := in.Transitions
	head := safeName(in.Instance, max(8, t.width/3)) + ": "
	switch {
	case !in.HasBreaker:
		head += "no breaker rule"
	case len(tr) == 0:
		head += "no transition in range, " + stateWord(in.Start) + " throughout"
	default:
		head += strconv.Itoa(len(tr)) + " transitions in range"
		if len(tr) > t.listMax {
			head += ", the last " + strconv.Itoa(t.listMax) + " below"
		}
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
	b.WriteString(time.UnixMilli(tr.AtMs).In(t.loc).Format("15:04:05.000"))
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
	if tr.RuleID != "" {
		b.WriteString(st.dim.on("  rule " + safeName(tr.RuleID, 24)))
	}
	return b.String()
}

func (t timeline) clock(ms int64) string {
	return time.UnixMilli(ms).In(t.loc).Format("15:04:05")
}

// band draws the states over [from, to] in w cells. A cell shows HALF when
// a probe happened within it, else OPEN when the breaker was open at any
// time within it, else CLOSED: short events stay visible at any zoom.
func (t timeline) band(b *strings.Builder, start core.State, tr []collector.Transition, from, to int64, w int) {
	drawBand(b, t.st, start, len(tr), func(i int) (int64, core.State) { return tr[i].AtMs, tr[i].To }, from, to, t.dataFrom, w)
}

// drawBand is band over any list of steps. Cells wholly before dataFrom, when
// nothing happened in them, show bandNone: no data yet.
func drawBand(b *strings.Builder, st *Styles, start core.State, n int, step func(int) (int64, core.State), from, to, dataFrom int64, w int) {
	span := max(1, to-from)
	cur := start
	j := 0
	// skip steps before the range: they set the state at from.
	for j < n {
		at, s := step(j)
		if at >= from {
			break
		}
		cur = s
		j++
	}
	prev := paint{}
	for i := 0; i < w; i++ {
		end := from + span*int64(i+1)/int64(w)
		if i == w-1 {
			end = to + 1
		}
		cell := cur
		changed := false
		for j < n {
			at, s := step(j)
			if at >= end {
				break
			}
			cur = s
			changed = true
			if bandRank(s) > bandRank(cell) {
				cell = s
			}
			j++
		}
		p, g := st.statePaint(cell), stateBand(cell)
		if end <= dataFrom && !changed {
			p, g = st.dim, bandNone
		}
		if p != prev {
			b.WriteString(prev.post)
			b.WriteString(p.pre)
			prev = p
		}
		b.WriteString(g)
	}
	b.WriteString(prev.post)
}

// firstData is the start of the detail's first step with any traffic or
// completion (From when it has none).
func firstData(d *collector.Detail) int64 {
	if d == nil {
		return 0
	}
	for i := range d.PassQPS {
		if d.PassQPS[i] > 0 || (i < len(d.BlockQPS) && d.BlockQPS[i] > 0) ||
			(i < len(d.SlowRatio) && !math.IsNaN(d.SlowRatio[i])) {
			return d.From + int64(i)*d.StepMs
		}
	}
	return d.From
}

// bandRank orders what a band cell shows: probes, then trips, then calm.
func bandRank(s core.State) int {
	switch s {
	case core.HalfOpen:
		return 2
	case core.Open:
		return 1
	}
	return 0
}
