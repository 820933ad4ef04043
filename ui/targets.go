// The targets screen: every dialed target, its state and why it is down.

package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// glyphConnecting marks a target being dialed; up and down take the
// breakers' ● and ✖.
const glyphConnecting = "◌"

// targetsScreen lists every dialed target, down ones first: its state and
// for how long, why it is down in words (the collector's), its reconnects
// and how long since its last message; below, the selected target's whole
// story, wrapped. It covers the screen it was opened from, which t, esc and
// backspace go back to.
type targetsScreen struct {
	*common
	under screen

	order []int // indices into the snapshot's targets, down first
	cur   cursor

	width, height int
}

var _ screen = (*targetsScreen)(nil)

func newTargetsScreen(c *common) *targetsScreen {
	return &targetsScreen{common: c}
}

// Open shows the targets over under.
func (t *targetsScreen) Open(under screen) screen {
	t.under = under
	return t
}

// Show takes a new snapshot and orders its targets.
func (t *targetsScreen) Show(s *collector.Snapshot) {
	t.order = t.order[:0]
	for i := range s.Targets {
		t.order = append(t.order, i)
	}
	slices.SortStableFunc(t.order, func(a, b int) int {
		return targetRank(s.Targets[a].State) - targetRank(s.Targets[b].State)
	})
	t.cur = t.cur.SetCount(len(t.order))
}

// targetRank puts down targets first, then those connecting.
func targetRank(s collector.TargetState) int { return -int(asBreaker(s)) }

// asBreaker maps a target's state on the breaker state of the same
// colour: up on CLOSED, connecting on HALF_OPEN, down on OPEN.
func asBreaker(s collector.TargetState) core.State {
	switch s {
	case collector.TargetUp:
		return core.Closed
	case collector.TargetDown:
		return core.Open
	}
	return core.HalfOpen
}

// targetCounts counts the targets per state.
func targetCounts(ts []*collector.TargetStatus) (up, down, connecting int) {
	for i := range ts {
		switch ts[i].State {
		case collector.TargetUp:
			up++
		case collector.TargetDown:
			down++
		default:
			connecting++
		}
	}
	return up, down, connecting
}

// SetSize sets the screen area.
func (t *targetsScreen) SetSize(w, h int) {
	t.width, t.height = w, h
	t.cur = t.cur.SetPage(max(1, t.listHeight()))
}

// listHeight is the rows the list shows: what the title, the header and
// the selected target's story leave.
func (t *targetsScreen) listHeight() int { return t.height - 2 - targetStoryLines }

// targetStoryLines is the height of the selected target's story, its
// blank line above included.
const targetStoryLines = 5

// Update moves the selection (keys, a click, the wheel); esc and
// backspace go back.
func (t *targetsScreen) Update(msg tea.Msg) (screen, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		if key.Matches(msg, t.keys.Back) {
			return t.under, nil
		}
		t.cur, _ = t.cur.Update(msg, t.keys)
	case tea.MouseMsg:
		t.mouse(msg)
	}
	return t, nil
}

// Keys are the moves and the way back.
func (t *targetsScreen) Keys() help.KeyMap { return t.keys.forTargets() }

// Modal is false: the model's keys apply (t closes the screen).
func (t *targetsScreen) Modal() bool { return false }

// Footer is the key hints and the selected target's position.
func (t *targetsScreen) Footer(w int) string {
	right := ""
	if n := len(t.order); n > 0 {
		right = t.st.dim.on(" " + strconv.Itoa(t.cur.Pos()+1) + "/" + strconv.Itoa(n))
	}
	return t.footer(t.Keys(), "", right, w)
}

// targetCols are the widths of the list's columns but the last (why).
type targetCols struct{ state, since, name, inst, last, reconn int }

func (t *targetsScreen) cols(ts []*collector.TargetStatus) targetCols {
	c := targetCols{state: 6, since: 6, name: 8, inst: 8, last: 8, reconn: 6}
	for i := range ts {
		c.state = max(c.state, width(targetState(ts[i].State)))
		c.name = max(c.name, width(sanitize(ts[i].Name)))
		c.inst = max(c.inst, width(targetInstances(ts[i], 1<<20)))
		c.last = max(c.last, width(t.lastMessage(ts[i])))
	}
	c.name = min(c.name, max(12, t.width/4))
	c.inst = min(c.inst, 16)
	return c
}

// View renders the title, the list in sight and the selected target's
// story.
func (t *targetsScreen) View() string {
	st, s := t.st, t.snap
	lines := make([]string, 0, t.height)
	add := func(l string) { lines = append(lines, fitLine(l, t.width)) }
	up, down, conn := targetCounts(s.Targets)
	title := st.title.on("TARGETS") + "  " + strconv.Itoa(up) + "/" + strconv.Itoa(len(s.Targets)) + " up"
	if down > 0 {
		title += " · " + st.open.on(glyphOpen+" "+strconv.Itoa(down)+" down")
	}
	if conn > 0 {
		title += " · " + st.half.on(glyphConnecting+" "+strconv.Itoa(conn)+" connecting")
	}
	add(title + st.dim.on("  (t or esc closes)"))
	if len(s.Targets) == 0 {
		what := "this source dials none"
		if s.Mode == collector.ModeReplay {
			what = "replaying " + safeName(s.Source, max(8, t.width-30))
		}
		add(st.dim.on("  no targets: " + what))
		return padLines(lines, t.width, t.height)
	}
	c := t.cols(s.Targets)
	var h strings.Builder
	h.WriteString("  ")
	for _, col := range []struct {
		title string
		w     int
		right bool
	}{{"STATE", c.state, false}, {"FOR", c.since, false}, {"TARGET", c.name, false},
		{"INSTANCE", c.inst, false}, {"LAST MSG", c.last, true}, {"RECONN", c.reconn, true}} {
		if col.right {
			padLeft(&h, col.title, col.w)
		} else {
			padRight(&h, col.title, col.w)
		}
		h.WriteByte(' ')
	}
	h.WriteString(" WHY")
	add(st.bold.on(h.String()))
	from, to := t.cur.Bounds()
	for i := from; i < to; i++ {
		add(t.row(s.Targets[t.order[i]], c, i == t.cur.Pos()))
	}
	add("")
	for _, l := range t.story(s.Targets[t.order[t.cur.Pos()]]) {
		add(l)
	}
	return padLines(lines, t.width, t.height)
}

// row renders one target in the list.
func (t *targetsScreen) row(ts *collector.TargetStatus, c targetCols, selected bool) string {
	st := t.st
	var b strings.Builder
	if selected {
		b.WriteString(glyphCursor + " ")
	} else {
		b.WriteString("  ")
	}
	state := targetState(ts.State)
	st.targetPaint(ts.State).write(&b, state)
	padRight(&b, "", c.state-width(state))
	b.WriteByte(' ')
	padRight(&b, cut(t.age(stateSince(ts)), c.since), c.since)
	b.WriteByte(' ')
	padRight(&b, targetName(ts.Name, c.name), c.name)
	b.WriteByte(' ')
	padRight(&b, targetInstances(ts, c.inst), c.inst)
	b.WriteByte(' ')
	padLeft(&b, t.lastMessage(ts), c.last)
	b.WriteByte(' ')
	padLeft(&b, strconv.FormatInt(ts.Reconnects, 10), c.reconn)
	b.WriteString("  ")
	b.WriteString(sanitize(targetWhy(ts)))
	line := b.String()
	if selected && st.color {
		line = st.selected.on(fitLine(ansiStripIfColor(st, line), t.width))
	}
	return line
}

// targetInstances is what the INSTANCE column says of a target, within
// w cells: the instance its hello named, or, for one that named several
// (a re-served stream), how many ("256+" at the count's bound).
func targetInstances(ts *collector.TargetStatus, w int) string {
	switch {
	case ts.Instances >= collector.MaxTargetInstances:
		return fmt.Sprintf("%d+ instances", ts.Instances)
	case ts.Instances > 1:
		return fmt.Sprintf("%d instances", ts.Instances)
	case ts.Instance != "":
		return safeName(ts.Instance, w)
	}
	return "–"
}

// story is the selected target told in full: its state, its reconnects and
// retry, why it is down, wrapped, and what it sent.
func (t *targetsScreen) story(ts *collector.TargetStatus) []string {
	st, at := t.st, t.snap.At
	head := st.bold.on(safeName(ts.Name, max(12, t.width/2))) + "  " +
		st.targetPaint(ts.State).on(targetState(ts.State))
	if since := stateSince(ts); since > 0 {
		head += " for " + fmtAge(at-since)
	}
	if ts.State != collector.TargetUp && ts.DownSince > 0 && ts.Since > ts.DownSince {
		head += ", the latest attempt " + fmtAge(at-ts.Since) + " ago"
	}
	if ts.State == collector.TargetDown && ts.RetryAt > at {
		head += ", retry in " + fmtAge(ts.RetryAt-at)
	}
	head += " · " + strconv.FormatInt(ts.Reconnects, 10) + " " + plural(ts.Reconnects, "reconnect", "reconnects")
	switch {
	case ts.Instances > 1:
		head += " · " + targetInstances(ts, 24) + ", the latest named " + safeName(ts.Instance, 24)
	case ts.Instance != "":
		head += " · instance " + safeName(ts.Instance, 24)
	}
	out := []string{head}
	const indent = "    "
	why := targetWhy(ts)
	if why == "" {
		why = "connected"
		if ts.State != collector.TargetUp {
			why = "no error yet"
		}
	}
	for _, l := range wrap(sanitize(why), t.width-len(indent)) {
		if len(out) == targetStoryLines-2 {
			break
		}
		out = append(out, indent+l)
	}
	out = append(out, indent+st.dim.on(fmtCount(ts.Messages)+" "+plural(ts.Messages, "message", "messages")+
		" · "+fmtCount(ts.Bytes)+" bytes · "+fmtCount(ts.Rejected)+" rejected · last message "+t.lastMessage(ts)))
	return out
}

// age is how long ago a time was, "–" when it is not known.
func (t *targetsScreen) age(ms int64) string {
	if ms <= 0 {
		return "–"
	}
	return fmtAge(t.snap.At - ms)
}

// stateSince is when the target entered the state the list shows it in:
// for a target not up, when it stopped being up, however many attempts
// since (Since is the latest attempt's).
func stateSince(ts *collector.TargetStatus) int64 {
	if ts.State != collector.TargetUp && ts.DownSince > 0 {
		return ts.DownSince
	}
	return ts.Since
}

// lastMessage is how long ago the target's last message came (both times
// on the collector's clock), "–" before any.
func (t *targetsScreen) lastMessage(ts *collector.TargetStatus) string {
	if ts.LastMessageAt <= 0 {
		return "–"
	}
	return fmtAge(t.snap.At-ts.LastMessageAt) + " ago"
}

// targetWhy is the target's error, or its standing note when it has none.
func targetWhy(ts *collector.TargetStatus) string {
	if why := collector.ProblemText(ts.Problem); why != "" {
		return why
	}
	return collector.RemarkText(ts.Note)
}

// targetState is a target's state with its glyph: "✖ down".
func targetState(s collector.TargetState) string {
	if s == collector.TargetConnecting {
		return glyphConnecting + " connecting"
	}
	return stateGlyph(asBreaker(s)) + " " + s.String()
}

func (st *Styles) targetPaint(s collector.TargetState) paint { return st.statePaint(asBreaker(s)) }

// padLines fits lines to exactly h lines of w cells.
func padLines(lines []string, w, h int) string {
	for len(lines) < h {
		lines = append(lines, strings.Repeat(" ", w))
	}
	return strings.Join(lines[:h], "\n")
}
