package ui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// window is the part of a list in sight: page items from offset, out of n.
// A page of 0 or less has the whole list in sight. The detail screen
// scrolls its lines with a window; a cursor keeps its item inside one.
type window struct {
	offset, n, page int
}

// size is how many items the window can show.
func (w window) size() int {
	if w.page <= 0 {
		return w.n
	}
	return w.page
}

// Resize sets the list's length and the page, keeping the offset where it
// can.
func (w window) Resize(n, page int) window {
	w.n, w.page = max(0, n), page
	return w.clamp()
}

// ScrollBy moves the window d items down (up when negative).
func (w window) ScrollBy(d int) window {
	w.offset += d
	return w.clamp()
}

// Reveal scrolls the least that brings items first..last in sight; a span
// longer than the window is shown from its first item.
func (w window) Reveal(first, last int) window {
	size := w.size()
	switch {
	case last-first+1 >= size || first < w.offset:
		w.offset = first
	case last >= w.offset+size:
		w.offset = last - size + 1
	}
	return w.clamp()
}

// Offset is the first item in sight.
func (w window) Offset() int { return w.offset }

// Len is the number of items.
func (w window) Len() int { return w.n }

// Bounds are the items in sight, [from, to).
func (w window) Bounds() (from, to int) { return w.offset, min(w.n, w.offset+w.size()) }

// clamp keeps the window on the list: no blank page below its end.
func (w window) clamp() window {
	w.offset = max(0, min(w.offset, w.n-w.size()))
	return w
}

// cursor is the selected item of a list, kept in sight in a window of a
// page of items: the table's row, the alerts' finding, the detail screen's
// instance and finding. It stays on an item when the list shrinks (at 0
// when it is empty); following an item by identity across snapshots is
// the list's business, done with Select.
type cursor struct {
	win window
	pos int
}

// SetCount sets the number of items.
func (c cursor) SetCount(n int) cursor {
	c.win.n = max(0, n)
	return c.follow()
}

// SetPage sets how many items are in sight (0: all of them).
func (c cursor) SetPage(page int) cursor {
	c.win.page = page
	return c.follow()
}

// Select moves to item i, or to the nearest end.
func (c cursor) Select(i int) cursor {
	c.pos = i
	return c.follow()
}

// Move moves d items down (up when negative).
func (c cursor) Move(d int) cursor { return c.Select(c.pos + d) }

// Top moves to the first item.
func (c cursor) Top() cursor { return c.Select(0) }

// Bottom moves to the last item.
func (c cursor) Bottom() cursor { return c.Select(c.win.n - 1) }

// PageUp moves a page up.
func (c cursor) PageUp() cursor { return c.Move(-max(1, c.win.size())) }

// PageDown moves a page down.
func (c cursor) PageDown() cursor { return c.Move(max(1, c.win.size())) }

// Pos is the selected item's index (0 in an empty list).
func (c cursor) Pos() int { return c.pos }

// Offset is the first item in sight.
func (c cursor) Offset() int { return c.win.offset }

// Len is the number of items.
func (c cursor) Len() int { return c.win.n }

// Bounds are the items in sight, [from, to).
func (c cursor) Bounds() (from, to int) { return c.win.Bounds() }

// wheelStep is how many items a turn of the mouse wheel moves.
const wheelStep = 3

// Update moves the cursor for the keymap's moves (up, down, top, bottom,
// page up and down) and the mouse wheel; moved is false for any other
// message.
func (c cursor) Update(msg tea.Msg, k *keyMap) (_ cursor, moved bool) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, k.Up):
			return c.Move(-1), true
		case key.Matches(msg, k.Down):
			return c.Move(1), true
		case key.Matches(msg, k.Top):
			return c.Top(), true
		case key.Matches(msg, k.Bottom):
			return c.Bottom(), true
		case key.Matches(msg, k.PgUp):
			return c.PageUp(), true
		case key.Matches(msg, k.PgDn):
			return c.PageDown(), true
		}
	case tea.MouseMsg:
		switch msg.Button {
		case tea.MouseButtonWheelUp:
			return c.Move(-wheelStep), true
		case tea.MouseButtonWheelDown:
			return c.Move(wheelStep), true
		}
	}
	return c, false
}

// follow keeps the position on an item and the item in sight.
func (c cursor) follow() cursor {
	c.pos = max(0, min(c.pos, c.win.n-1))
	c.win = c.win.Reveal(c.pos, c.pos)
	return c
}
