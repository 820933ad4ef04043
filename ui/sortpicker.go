// The sort picker: htop's F6, a list of the columns the table sorts by.

package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// pickerItems are the sorts the picker lists, in the table's column order,
// each under its column's title.
var pickerItems = [...]struct {
	k           sortKey
	title, desc string
}{
	{sortSeverity, "!", "severity, worst first"},
	{sortName, "APP", "app, then resource"},
	{sortResource, "RESOURCE", "resource, then app"},
	{sortInstances, "INST", "instances"},
	{sortPass, "PASS/S", "passed a second"},
	{sortBlock, "BLOCK/S", "blocked a second"},
	{sortSlow, "SLOW%", "slow share"},
	{sortError, "ERR%", "error share"},
	{sortP99, "P99", "p99, then averages"},
	{sortBreakers, "BREAKERS", "OPEN, HALF_OPEN, unknown"},
}

// sortPicker is the list F6 or S opens over the table: the moves choose a
// sort, enter sorts by it, esc (or F6, S) closes it; the current sort is
// marked with its arrow. It takes every key while open.
type sortPicker struct {
	st   *Styles
	keys *keyMap
	open bool
	cur  cursor // over pickerItems
}

func newSortPicker(st *Styles, keys *keyMap) sortPicker {
	p := sortPicker{st: st, keys: keys}
	p.cur = p.cur.SetCount(len(pickerItems))
	return p
}

// Open opens the picker on the current sort.
func (p sortPicker) Open(current sortKey) sortPicker {
	p.open = true
	for i, it := range pickerItems {
		if it.k == current {
			p.cur = p.cur.Select(i)
		}
	}
	return p
}

// Update handles a key while the picker is open: chosen is true when
// enter chose k; the picker closes then, on esc, F6 or S. On q it quits,
// as the help does.
func (p sortPicker) Update(msg tea.KeyMsg) (_ sortPicker, k sortKey, chosen bool, cmd tea.Cmd) {
	switch {
	case key.Matches(msg, p.keys.Open):
		p.open = false
		return p, pickerItems[p.cur.Pos()].k, true, nil
	case msg.Type == tea.KeyEsc, key.Matches(msg, p.keys.SortPick):
		p.open = false
	case key.Matches(msg, p.keys.Quit):
		return p, 0, false, tea.Quit
	default:
		p.cur, _ = p.cur.Update(msg, p.keys)
	}
	return p, 0, false, nil
}

// pickerTitleW is the widest title's width, and the arrow's cell.
const pickerTitleW = len("RESOURCE") + 1

// Lines renders the picker's box in at most h lines: a line for each
// sort in sight, between a top border saying what it is and a bottom one
// saying the keys. current and reverse are the table's sort.
func (p sortPicker) Lines(current sortKey, reverse bool, h int) []string {
	st := p.st
	descW := 0
	for _, it := range pickerItems {
		descW = max(descW, width(it.desc))
	}
	inner := 2 + pickerTitleW + 1 + descW + 1 // cursor, title and arrow, desc
	border := func(left, text, right string) string {
		return left + "─ " + text + " " + strings.Repeat("─", max(0, inner-width(text)-3)) + right
	}
	p.cur = p.cur.SetPage(max(1, h-2))
	lines := []string{st.bold.on(border("┌", "SORT BY", "┐"))}
	from, to := p.cur.Bounds()
	for i := from; i < to; i++ {
		it := pickerItems[i]
		var b strings.Builder
		selected := i == p.cur.Pos()
		b.WriteString(listMark(selected, true))
		title := it.title
		if it.k == current {
			if it.k.ascending() != reverse {
				title += "▲"
			} else {
				title += "▼"
			}
		}
		padRight(&b, title, pickerTitleW)
		b.WriteByte(' ')
		padRight(&b, it.desc, descW+1)
		line := b.String()
		if selected {
			line = st.selected.on(line)
		}
		lines = append(lines, "│"+line+"│")
	}
	return append(lines, st.dim.on(border("└", "enter sorts · esc closes", "┘")))
}

// overlay draws box over the top left of the lines of base, from line
// top: each of the box's lines replaces as many cells of the line under.
func overlay(base string, box []string, top int) string {
	lines := strings.Split(base, "\n")
	for i, l := range box {
		at := top + i
		if at >= len(lines) {
			break
		}
		lines[at] = l + ansi.TruncateLeft(lines[at], width(l), "")
	}
	return strings.Join(lines, "\n")
}
