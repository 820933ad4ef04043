package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// headerLine is the table's header as text.
func headerLine(m *Model) string { return tableLines(m)[0] }

// TestColumnChooser: F2 opens the list of columns with their marks; space
// hides the selected column and shows it again; esc closes; a hidden
// column stays hidden across snapshots; RESOURCE cannot be hidden.
func TestColumnChooser(t *testing.T) {
	src := goldenSource()
	m := newTestModel(src, 120, 40)
	if !strings.Contains(headerLine(m), "INST") {
		t.Fatalf("no INST column to start with:\n%s", screenText(m))
	}
	press(m, "<f2>")
	s := screenText(m)
	for _, want := range []string{"COLUMNS", "▸[x] APP", "[x] RESOURCE  always", "[x] INST", "[x] TREND", "space show/hide"} {
		if !strings.Contains(s, want) {
			t.Errorf("the chooser does not show %q:\n%s", want, s)
		}
	}
	press(m, "jj ") // APP, RESOURCE, INST: hide INST
	if s := screenText(m); !strings.Contains(s, "▸[ ] INST") || m.main.table.shown(colInstances) {
		t.Errorf("space did not hide INST:\n%s", s)
	}
	press(m, "k ") // RESOURCE stays
	if s := screenText(m); !strings.Contains(s, "[x] RESOURCE") || !m.main.table.shown(colResource) {
		t.Errorf("RESOURCE was hidden:\n%s", s)
	}
	press(m, "<esc>")
	if s := screenText(m); strings.Contains(s, "COLUMNS") || strings.Contains(headerLine(m), "INST") {
		t.Errorf("esc did not close the chooser, or INST came back:\n%s", s)
	}
	// a new snapshot: INST stays hidden; space is freeze again.
	snap := testSnapshot()
	snap.Seq++
	src.set(snap)
	send(m, tickMsg{})
	if h := headerLine(m); strings.Contains(h, "INST") || !strings.Contains(h, "PASS/S") {
		t.Errorf("INST came back with a new snapshot: %s", h)
	}
	press(m, " ")
	if !m.frozen {
		t.Error("space does not freeze once the chooser is closed")
	}
	// c opens it too, on the same column; space shows INST again.
	press(m, "cj ")
	if s := screenText(m); !strings.Contains(s, "▸[x] INST") || !m.main.table.shown(colInstances) {
		t.Errorf("c and space did not show INST again:\n%s", s)
	}
	if m.frozen != true {
		t.Error("space in the chooser toggled the freeze")
	}
	press(m, "c")
	if strings.Contains(screenText(m), "COLUMNS") {
		t.Error("c did not close the chooser")
	}
}

// TestColumnChooserSaysWhy: a column shown but out of sight says why: no
// room at this width, or APP with one app; a hidden column gives its
// width to the others.
func TestColumnChooserSaysWhy(t *testing.T) {
	src := newStaticSource(layoutSnapshot([]string{"GET:/member/info", "POST:/order/create"}, "order"))
	m := newTestModel(src, 80, 24)
	press(m, "c")
	s := screenText(m)
	for _, want := range []string{"[x] APP       one app: in header", "[x] TREND     no room"} {
		if !strings.Contains(s, want) {
			t.Errorf("the chooser does not say %q:\n%s", want, s)
		}
	}
	before := strings.Index(headerLine(m), "BREAKERS")
	press(m, "jj ") // hide INST: the others move right, the names take its width
	if after := strings.Index(headerLine(m), "BREAKERS"); after != before {
		t.Errorf("BREAKERS moved from %d to %d: the width is not filled", before, after)
	}
	press(m, "<esc>")
	if h := headerLine(m); strings.Contains(h, "INST") || !strings.HasSuffix(h, "BREAKERS ") {
		t.Errorf("INST shown, or the header does not fill the width: %q", h)
	}
}

// TestColumnChooserSmall: in the smallest terminal the list scrolls with
// the cursor and every frame fits; q quits from the chooser.
func TestColumnChooserSmall(t *testing.T) {
	m := newTestModel(goldenSource(), MinWidth, MinHeight)
	press(m, "<f2>")
	for i := 0; i < len(chooserColumns()); i++ {
		checkFrame(t, m.View(), MinWidth, MinHeight)
		if i == len(chooserColumns())-1 && !strings.Contains(screenText(m), "▸[x] TREND") {
			t.Errorf("the last column is not in sight:\n%s", screenText(m))
		}
		press(m, "j")
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'q'}})
	if cmd == nil {
		t.Fatal("q does nothing in the chooser")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q does not quit from the chooser")
	}
}
