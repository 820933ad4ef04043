// The column chooser (htop's F2): the resource table's columns with on/off
// marks, over the main screen's left side while the table changes beside
// it.

package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// colSet is a set of the table's columns.
type colSet uint16

func (s colSet) has(id colID) bool      { return s&(1<<id) != 0 }
func (s colSet) toggle(id colID) colSet { return s ^ 1<<id }

// chooserColumns are the columns the chooser lists: all but the mark,
// which carries the cursor.
func chooserColumns() []column { return allColumns[colApp:] }

// SetHidden hides the columns of h (not RESOURCE nor the mark) and lays
// the others out again.
func (t resourceTable) SetHidden(h colSet) resourceTable {
	t.hidden = h &^ (1<<colMark | 1<<colResource)
	return t.layout()
}

// Hidden is the set of the columns the user hid.
func (t resourceTable) Hidden() colSet { return t.hidden }

// shown reports whether the column id is laid out.
func (t resourceTable) shown(id colID) bool {
	for _, c := range t.cols {
		if c.id == id {
			return true
		}
	}
	return false
}

// columnChooser is the list of the table's columns: space shows or hides
// the selected one, esc closes. A column shown but out of sight says why:
// no room at this width, or (APP) one app, named in the header.
type columnChooser struct {
	st   *Styles
	keys *keyMap
	cur  cursor
}

func newColumnChooser(st *Styles, keys *keyMap) columnChooser {
	c := columnChooser{st: st, keys: keys}
	c.cur = c.cur.SetCount(len(chooserColumns()))
	return c
}

// chooserW is the chooser's width, its frame included.
const chooserW = 36

// SetHeight sets how many lines the chooser may take, its frame included.
func (c columnChooser) SetHeight(h int) columnChooser {
	c.cur = c.cur.SetPage(max(1, h-2))
	return c
}

// Update moves the cursor and toggles the selected column of t; done is
// true when the chooser closes.
func (c columnChooser) Update(msg tea.KeyMsg, t resourceTable) (_ columnChooser, _ resourceTable, done bool) {
	switch {
	case msg.Type == tea.KeyEsc, key.Matches(msg, c.keys.Columns), msg.Type == tea.KeyEnter:
		return c, t, true
	case msg.Type == tea.KeySpace:
		if col := chooserColumns()[c.cur.Pos()]; col.id != colResource {
			t = t.SetHidden(t.Hidden().toggle(col.id))
		}
	default:
		c.cur, _ = c.cur.Update(msg, c.keys)
	}
	return c, t, false
}

// Overlay draws the chooser over the left of view, at most h lines of it.
func (c columnChooser) Overlay(view string, t resourceTable, w int) string {
	lines := strings.Split(view, "\n")
	box := c.lines(t, min(chooserW, w), len(lines))
	for i, b := range box {
		if i < len(lines) {
			lines[i] = b + ansi.TruncateLeft(lines[i], ansi.StringWidth(b), "")
		}
	}
	return strings.Join(lines, "\n")
}

// lines renders the framed list in w cells and at most h lines.
func (c columnChooser) lines(t resourceTable, w, h int) []string {
	st := c.st
	inner := w - 2
	cols := chooserColumns()
	from, to := c.cur.Bounds()
	to = min(to, from+max(0, h-2))
	out := make([]string, 0, to-from+2)
	out = append(out, st.bold.on(frameLine("┌", " COLUMNS ", "┐", inner)))
	for i := from; i < to; i++ {
		col := cols[i]
		mark := "[x]"
		var why string
		switch {
		case col.id == colResource:
			why = "always"
		case t.hidden.has(col.id):
			mark = "[ ]"
		case col.id == colApp && t.oneApp != "":
			why = "one app: in header"
		case !t.shown(col.id):
			why = "no room"
		}
		sel := i == c.cur.Pos()
		var b strings.Builder
		b.WriteString(strings.TrimSuffix(listMark(sel, true), " "))
		b.WriteString(mark + " ")
		padRight(&b, col.title, 9)
		if why != "" {
			b.WriteString(" " + st.dim.on(why))
		}
		line := fitLine(b.String(), inner)
		if sel {
			line = st.selected.on(ansi.Strip(line))
		}
		out = append(out, "│"+line+"│")
	}
	out = append(out, st.bold.on(frameLine("└", " space on/off · esc ", "┘", inner)))
	return out
}

// frameLine is a frame's top or bottom line with a label in it.
func frameLine(left, label, right string, inner int) string {
	label = cut(label, max(0, inner-1))
	return left + "─" + label + strings.Repeat("─", max(0, inner-1-width(label))) + right
}
