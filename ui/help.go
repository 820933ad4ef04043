package ui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// helpScreen is the help: every key binding, generated from the keymap,
// and what the glyphs mean. It covers the screen it was opened from, which
// keeps its footer, and goes back to it on ?, esc or backspace.
type helpScreen struct {
	*common
	under screen

	scroll        window // over the lines, when they do not all fit
	width, height int
}

var _ screen = (*helpScreen)(nil)

func newHelpScreen(c *common) *helpScreen { return &helpScreen{common: c} }

// Open shows the help over under.
func (h *helpScreen) Open(under screen) screen {
	h.under = under
	h.scroll = window{}
	return h
}

// SetSize sets the screen area of the help.
func (h *helpScreen) SetSize(w, hh int) { h.width, h.height = w, hh }

// Update quits on q, goes back on ?, esc or backspace, and scrolls with
// the moves and the mouse wheel when the help does not fit.
func (h *helpScreen) Update(msg tea.Msg) (screen, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		k := h.keys
		h.scroll = h.window()
		switch {
		case key.Matches(msg, k.Quit):
			return h, tea.Quit
		case key.Matches(msg, k.Help), msg.Type == tea.KeyEsc, msg.Type == tea.KeyBackspace:
			return h.under, nil
		case key.Matches(msg, k.Up):
			h.scroll = h.scroll.ScrollBy(-1)
		case key.Matches(msg, k.Down):
			h.scroll = h.scroll.ScrollBy(1)
		case key.Matches(msg, k.PgUp), key.Matches(msg, k.Top):
			h.scroll = h.scroll.ScrollBy(-h.scroll.Len())
		case key.Matches(msg, k.PgDn), key.Matches(msg, k.Bottom):
			h.scroll = h.scroll.ScrollBy(h.scroll.Len())
		}
	case tea.MouseMsg:
		h.scroll = h.window()
		switch msg.Button {
		case tea.MouseButtonWheelUp:
			h.scroll = h.scroll.ScrollBy(-wheelStep)
		case tea.MouseButtonWheelDown:
			h.scroll = h.scroll.ScrollBy(wheelStep)
		}
	}
	return h, nil
}

// Keys are every screen's bindings, with the hints of the screen under.
func (h *helpScreen) Keys() help.KeyMap {
	return helpKeys{hints: h.under.Keys(), groups: h.keys.forHelp(h.replayKeys)}
}

// Modal is true: the help takes every key.
func (h *helpScreen) Modal() bool { return true }

// Footer is the hints of the screen under the help, and the lines in
// sight when they do not all fit.
func (h *helpScreen) Footer(w int) string {
	right := ""
	if win := h.window(); win.Len() > h.height {
		from, to := win.Bounds()
		right = h.st.dim.on(" " + strconv.Itoa(from+1) + "-" + strconv.Itoa(to) + "/" + strconv.Itoa(win.Len()))
	}
	return h.footer(h.Keys(), "", right, w)
}

// window is the scroll over the help's lines as they are now.
func (h *helpScreen) window() window { return h.scroll.Resize(len(h.lines()), h.height) }

// View renders the lines in sight.
func (h *helpScreen) View() string {
	lines := h.lines()
	from, to := h.scroll.Resize(len(lines), h.height).Bounds()
	lines = lines[from:to]
	for i := range lines {
		lines[i] = fitLine(lines[i], h.width)
	}
	return padLines(lines, h.width, h.height)
}

// lines lays out the keymap's groups in as many columns as fit, then the
// legend of glyphs.
func (h *helpScreen) lines() []string {
	st := h.st
	groups := h.Keys().FullHelp()
	hm := h.hints
	hm.Width = h.width
	var blocks []string
	for i, g := range groups {
		var enabled []key.Binding
		for _, b := range g {
			if b.Enabled() {
				// every key of the binding, where the footer has one.
				enabled = append(enabled, key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(keyNames(b), b.Help().Desc)))
			}
		}
		if len(enabled) == 0 {
			continue
		}
		blocks = append(blocks, st.title.on(helpGroupName(i))+"\n"+hm.FullHelpView([][]key.Binding{enabled}))
	}
	var b strings.Builder
	b.WriteString(st.title.on("sentinel-top keys") + st.dim.on("  (? or esc closes · j/k scroll)"))
	b.WriteString("\n\n")
	// greedy columns: as many blocks side by side as the width allows.
	const gap = 4
	for i := 0; i < len(blocks); {
		row := []string{blocks[i]}
		w := blockWidth(blocks[i])
		j := i + 1
		for ; j < len(blocks); j++ {
			bw := blockWidth(blocks[j])
			if w+gap+bw > h.width {
				break
			}
			row = append(row, blocks[j])
			w += gap + bw
		}
		b.WriteString(joinColumns(row, gap))
		b.WriteString("\n\n")
		i = j
	}
	b.WriteString(st.title.on("MOUSE") + "  " + st.dim.on(mouseSwitch) + "\n")
	for _, l := range mouseHelp() {
		b.WriteString(l[0] + "  " + l[1] + "\n")
	}
	b.WriteString("\n")
	b.WriteString(st.title.on("GLYPHS") + "\n")
	b.WriteString("breakers  " + st.state(core.Closed) + "  " + st.state(core.HalfOpen) + "  " + st.state(core.Open) +
		"  " + st.open.on(glyphOpen+"1") + " " + st.closed.on(glyphClosed+"2") + ": instances per state\n")
	b.WriteString("          " + st.stateOf(core.Closed, collector.ProvenanceUnknown) + " " + st.dim.on(glyphUnknown+"2") +
		": Java Sentinel and metric logs do not report states\n")
	b.WriteString("          " + st.stateOf(core.Open, collector.ProvenanceInferred) + " " + st.open.on(glyphOpen+"1"+markInferred) +
		": inferred from counts, ±1 s (Prometheus: within its step)\n")
	b.WriteString("          no breaker, what guards it: " + ruleWord(true, false, false) + ", " + ruleWord(false, true, false) +
		" (hot-parameter rules), " + ruleWord(true, true, false) + " (both)\n")
	b.WriteString("          " + ruleWord(false, false, false) + ": every instance's rules read, none names it\n")
	b.WriteString("          " + ruleWord(false, false, true) + ": some instance's rules never read (a metric log, a\n")
	b.WriteString("          failed /getRules)\n")
	b.WriteString("timeline  " + stateLegend(st, true, true) + "\n")
	b.WriteString("          a cell shows the worst state it held\n")
	b.WriteString("p99       avg 35ms: no p99, the source has averages only  " + noData + ": none completed\n")
	b.WriteString("findings  " + st.crit.on("!! critical") + "  " + st.warning.on("!  warning") + "  " +
		st.info.on("i  info") + "\n")
	b.WriteString("          a breaker OPEN or HALF_OPEN marks its row " + st.warning.on("!") + " at least\n")
	b.WriteString("sort      " + st.key.on("▼") + " the sorted column; a row moves only when its mark or its\n")
	b.WriteString("          value changes by a quarter (s, r and F6 sort afresh); sorted by a\n")
	b.WriteString("          column not shown, RESOURCE says so (" + sortNames[sortP99] + " ▼)\n")
	b.WriteString("plans     " + st.closed.on(glyphPlan+" plan") + ": a rule change replayed on the input and found safe\n")
	b.WriteString("rules     " + st.drift.on(glyphDrift+" differs from most instances of the app") + "\n")
	b.WriteString("trend     " + sparks[1] + "…" + sparks[len(sparks)-1] + " pass/s  " + sparks[0] +
		" none passed  blank: no traffic\n")
	b.WriteString("targets   " + st.closed.on(glyphClosed+" up") + "  " + st.half.on(glyphConnecting+" connecting") +
		"  " + st.open.on(glyphOpen+" down"))
	return strings.Split(b.String(), "\n")
}

// mouseSwitch says how the mouse is turned on; mouseHelp is what it does
// then. The help screen and the README say both.
const mouseSwitch = "turned on with --mouse or m (off by default, so that the terminal still selects text)"

func mouseHelp() [][2]string {
	return [][2]string{
		{"click ", "a row, an alert or a target selects it (and focuses its panel); a click on the selected one opens it"},
		{"wheel ", "moves through the list under the pointer, scrolls the detail and the help"},
		{"header", "a click on the targets' count lists them"},
	}
}

func blockWidth(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, width(l))
	}
	return w
}

// joinColumns puts blocks of lines side by side.
func joinColumns(blocks []string, gap int) string {
	cols := make([][]string, len(blocks))
	ws := make([]int, len(blocks))
	rows := 0
	for i, b := range blocks {
		cols[i] = strings.Split(b, "\n")
		ws[i] = blockWidth(b)
		rows = max(rows, len(cols[i]))
	}
	var b strings.Builder
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte('\n')
		}
		for i := range cols {
			cell := ""
			if r < len(cols[i]) {
				cell = cols[i][r]
			}
			if i == len(cols)-1 {
				b.WriteString(cell)
				continue
			}
			padRight(&b, cell, ws[i])
			b.WriteString(strings.Repeat(" ", gap))
		}
	}
	return strings.TrimRight(b.String(), " ")
}
