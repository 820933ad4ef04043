package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/core"
)

// helpScreen is the help: every key binding, generated from the keymap,
// and what the glyphs mean. It covers the screen it was opened from, which
// keeps its footer, and goes back to it on ?, esc or backspace.
type helpScreen struct {
	*common
	under screen

	width, height int
}

var _ screen = (*helpScreen)(nil)

func newHelpScreen(c *common) *helpScreen { return &helpScreen{common: c} }

// Open shows the help over under.
func (h *helpScreen) Open(under screen) screen {
	h.under = under
	return h
}

// SetSize sets the screen area of the help.
func (h *helpScreen) SetSize(w, hh int) { h.width, h.height = w, hh }

// Update quits on q and goes back on ?, esc or backspace; the mouse wheel
// still reaches the screen underneath.
func (h *helpScreen) Update(msg tea.Msg) (screen, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, h.keys.Quit):
			return h, tea.Quit
		case key.Matches(msg, h.keys.Help), msg.Type == tea.KeyEsc, msg.Type == tea.KeyBackspace:
			return h.under, nil
		}
	case tea.MouseMsg:
		var cmd tea.Cmd
		h.under, cmd = h.under.Update(msg)
		return h, cmd
	}
	return h, nil
}

// Keys are every screen's bindings, with the hints of the screen under.
func (h *helpScreen) Keys() help.KeyMap {
	return helpKeys{hints: h.under.Keys(), groups: h.keys.forHelp(h.replayKeys)}
}

// Modal is true: the help takes every key.
func (h *helpScreen) Modal() bool { return true }

// Footer is the hints of the screen under the help.
func (h *helpScreen) Footer(w int) string { return h.footer(h.Keys(), "", "", w) }

// View lays out the keymap's groups in as many columns as fit, then the
// legend of glyphs.
func (h *helpScreen) View() string {
	st := h.st
	groups := h.Keys().FullHelp()
	hm := h.hints
	hm.Width = h.width
	names := []string{"MOVE", "VIEWS", "DATA", "REPLAY"}
	var blocks []string
	for i, g := range groups {
		var enabled []key.Binding
		for _, b := range g {
			if b.Enabled() {
				enabled = append(enabled, b)
			}
		}
		if len(enabled) == 0 {
			continue
		}
		blocks = append(blocks, st.title.on(names[i])+"\n"+hm.FullHelpView([][]key.Binding{enabled}))
	}
	var b strings.Builder
	b.WriteString(st.title.on("sentinel-top keys") + st.dim.on("  (? or esc closes)"))
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
	b.WriteString(st.title.on("GLYPHS") + "\n")
	b.WriteString("breakers  " + st.state(core.Closed) + "  " + st.state(core.HalfOpen) + "  " + st.state(core.Open) + "\n")
	b.WriteString("timeline  " + stateLegend(st) + "  a cell shows the worst state in it\n")
	b.WriteString("findings  " + st.crit.on("!! critical") + "  " + st.warning.on("!  warning") + "  " +
		st.info.on("i  info") + "\n")
	b.WriteString("rules     " + st.drift.on(glyphDrift+" differs from most instances of the app"))
	lines := strings.Split(b.String(), "\n")
	for i := range lines {
		lines[i] = fitLine(lines[i], h.width)
	}
	for len(lines) < h.height {
		lines = append(lines, strings.Repeat(" ", h.width))
	}
	if len(lines) > h.height {
		lines = lines[:h.height]
	}
	return strings.Join(lines, "\n")
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
