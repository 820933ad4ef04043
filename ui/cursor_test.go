package ui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// at is a cursor's position and first item in sight.
type at struct{ pos, offset int }

func where(c cursor) at { return at{c.Pos(), c.Offset()} }

// cursorStep is a change to a cursor and where it leaves it.
type cursorStep struct {
	name string
	move func(cursor) cursor
	want at
}

func checkSteps(t *testing.T, c cursor, steps []cursorStep) {
	t.Helper()
	for _, s := range steps {
		c = s.move(c)
		if got := where(c); got != s.want {
			t.Fatalf("%s: at %+v, want %+v", s.name, got, s.want)
		}
	}
}

func TestCursorMoves(t *testing.T) {
	checkSteps(t, cursor{}.SetPage(5).SetCount(20), []cursorStep{
		{"start", func(c cursor) cursor { return c }, at{0, 0}},
		{"up at the top", func(c cursor) cursor { return c.Move(-1) }, at{0, 0}},
		{"down in sight", func(c cursor) cursor { return c.Move(4) }, at{4, 0}},
		{"down past the page", func(c cursor) cursor { return c.Move(1) }, at{5, 1}},
		{"page down", func(c cursor) cursor { return c.PageDown() }, at{10, 6}},
		{"page up stays in sight", func(c cursor) cursor { return c.PageUp() }, at{5, 5}},
		{"bottom", func(c cursor) cursor { return c.Bottom() }, at{19, 15}},
		{"down at the bottom", func(c cursor) cursor { return c.Move(1) }, at{19, 15}},
		{"page down at the bottom", func(c cursor) cursor { return c.PageDown() }, at{19, 15}},
		{"up in sight", func(c cursor) cursor { return c.Move(-4) }, at{15, 15}},
		{"up past the page", func(c cursor) cursor { return c.Move(-1) }, at{14, 14}},
		{"top", func(c cursor) cursor { return c.Top() }, at{0, 0}},
		{"select", func(c cursor) cursor { return c.Select(12) }, at{12, 8}},
		{"select past the end", func(c cursor) cursor { return c.Select(99) }, at{19, 15}},
		{"select before the start", func(c cursor) cursor { return c.Select(-3) }, at{0, 0}},
	})
}

func TestCursorListChanges(t *testing.T) {
	count := func(n int) func(cursor) cursor { return func(c cursor) cursor { return c.SetCount(n) } }
	checkSteps(t, cursor{}.SetPage(5).SetCount(20), []cursorStep{
		{"near the end", func(c cursor) cursor { return c.Select(17) }, at{17, 13}},
		// the list shrinks under the cursor: it stays on the last item, a
		// full page in sight.
		{"shrunk to 10", count(10), at{9, 5}},
		{"shorter than a page", count(3), at{2, 0}},
		{"emptied", count(0), at{0, 0}},
		// growing keeps the position; a smaller page scrolls to keep it in
		// sight.
		{"grown to 30", func(c cursor) cursor { return c.SetCount(30).Select(12) }, at{12, 8}},
		{"grown to 40", count(40), at{12, 8}},
		{"page of 2", func(c cursor) cursor { return c.SetPage(2) }, at{12, 11}},
	})
	if from, to := (cursor{}).SetPage(5).Bounds(); from != 0 || to != 0 {
		t.Errorf("empty list: items %d-%d in sight", from, to)
	}
	if from, to := (cursor{}).SetPage(2).SetCount(40).Select(12).Bounds(); from != 11 || to != 13 {
		t.Errorf("page of 2: items %d-%d in sight, want 11-13", from, to)
	}
}

// TestCursorWholeList: a page of 0 has every item in sight, and pages
// move by the whole list.
func TestCursorWholeList(t *testing.T) {
	c := cursor{}.SetCount(8).Bottom()
	if got, want := where(c), (at{7, 0}); got != want {
		t.Errorf("at %+v, want %+v", got, want)
	}
	if from, to := c.Bounds(); from != 0 || to != 8 {
		t.Errorf("items %d-%d in sight, want 0-8", from, to)
	}
	if got := c.PageUp().Pos(); got != 0 {
		t.Errorf("page up from the bottom: at %d", got)
	}
}

// TestCursorNewest: a list that shows its newest items is a cursor at
// its bottom.
func TestCursorNewest(t *testing.T) {
	for _, c := range []struct{ n, page, from, to int }{{20, 12, 8, 20}, {5, 12, 0, 5}, {0, 12, 0, 0}} {
		from, to := cursor{}.SetPage(c.page).SetCount(c.n).Bottom().Bounds()
		if from != c.from || to != c.to {
			t.Errorf("%d items, a page of %d: %d-%d in sight, want %d-%d", c.n, c.page, from, to, c.from, c.to)
		}
	}
}

func TestCursorKeys(t *testing.T) {
	k := newKeyMap()
	c := cursor{}.SetPage(4).SetCount(10)
	for _, s := range []struct {
		msg   tea.Msg
		pos   int
		moved bool
	}{
		{keys("j")[0], 1, true},
		{namedKey("down"), 2, true},
		{keys("k")[0], 1, true},
		{keys("G")[0], 9, true},
		{keys("g")[0], 0, true},
		{namedKey("pgdown"), 4, true},
		{namedKey("pgup"), 0, true},
		{tea.MouseMsg{Button: tea.MouseButtonWheelDown}, 3, true},
		{tea.MouseMsg{Button: tea.MouseButtonWheelUp}, 0, true},
		{tea.MouseMsg{Button: tea.MouseButtonLeft}, 0, false},
		{keys("x")[0], 0, false},
		{tickMsg{}, 0, false},
	} {
		var moved bool
		c, moved = c.Update(s.msg, k)
		if c.Pos() != s.pos || moved != s.moved {
			t.Errorf("%v: at %d moved %v, want %d %v", s.msg, c.Pos(), moved, s.pos, s.moved)
		}
	}
}

func TestWindow(t *testing.T) {
	w := window{}.Resize(30, 10)
	steps := []struct {
		name string
		move func(window) window
		want int
	}{
		{"scroll down", func(w window) window { return w.ScrollBy(9) }, 9},
		{"scroll past the end", func(w window) window { return w.ScrollBy(50) }, 20},
		{"scroll past the start", func(w window) window { return w.ScrollBy(-50) }, 0},
		{"reveal below", func(w window) window { return w.Reveal(12, 14) }, 5},
		{"reveal in sight", func(w window) window { return w.Reveal(8, 9) }, 5},
		{"reveal above", func(w window) window { return w.Reveal(2, 3) }, 2},
		{"reveal a span longer than the window", func(w window) window { return w.Reveal(15, 27) }, 15},
		{"reveal near the end", func(w window) window { return w.Reveal(28, 29) }, 20},
		{"shrink", func(w window) window { return w.Resize(25, 10) }, 15},
		{"taller", func(w window) window { return w.Resize(25, 30) }, 0},
	}
	for _, s := range steps {
		w = s.move(w)
		if got := w.Offset(); got != s.want {
			t.Fatalf("%s: offset %d, want %d", s.name, got, s.want)
		}
	}
	if w.Len() != 25 {
		t.Errorf("length %d, want 25", w.Len())
	}
}
