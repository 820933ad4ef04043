package ui

import (
	"strings"
	"testing"

	"github.com/muesli/termenv"
)

// TestSortShownWhenColumnIsNot: sorted by a column hidden in the column
// chooser, or left out for want of width, the RESOURCE header says the
// sort and its direction; when the column is on screen its own arrow says
// it and the header says nothing more.
func TestSortShownWhenColumnIsNot(t *testing.T) {
	snap := layoutSnapshot([]string{"GET:/member/info", "POST:/order/create", "GET:/pay/status"}, "order", "payment")
	var tr trends
	header := func(tb resourceTable) string { return strings.SplitN(tb.View(), "\n", 2)[0] }
	base := newResourceTable(newStyles(termenv.Ascii), newKeyMap(), &tr).SetRows(snap)

	// on screen: its own arrow, no note.
	tb := base.SetSort(sortSlow, false).SetSize(160, 10)
	if h := header(tb); !strings.Contains(h, "▼SLOW%") || strings.Contains(h, "slow% ▼") {
		t.Errorf("SLOW%% on screen and the sort: header %q", h)
	}
	// hidden in the chooser.
	tb = base.SetHidden(colSet(0).toggle(colSlow)).SetSort(sortSlow, false).SetSize(160, 10)
	if tb.shown(colSlow) {
		t.Fatalf("SLOW%% hidden but shown: %v", tb.cols)
	}
	if h := header(tb); !strings.Contains(h, "RESOURCE  slow% ▼") {
		t.Errorf("sorted by a hidden SLOW%%: header %q says nothing of it", h)
	}
	// reversed, the arrow turns.
	tb = tb.SetSort(sortSlow, true)
	if h := header(tb); !strings.Contains(h, "RESOURCE  slow% ▲") {
		t.Errorf("sorted by a hidden SLOW%% reversed: header %q", h)
	}
	// left out for want of width: P99 goes early.
	for _, w := range []int{60, 80} {
		tb = base.SetSort(sortP99, false).SetSize(w, 10)
		if tb.shown(colP99) {
			t.Fatalf("at %d columns P99 is shown: %v", w, tb.cols)
		}
		h := header(tb)
		if !strings.Contains(h, "RESOURCE  p99 ▼") && !strings.Contains(h, "RESOURCE  sorted by p99 ▼") {
			t.Errorf("at %d columns sorted by P99 (not shown): header %q", w, h)
		}
		if width(h) > w {
			t.Errorf("at %d columns the header %q is %d cells", w, h, width(h))
		}
	}
}
