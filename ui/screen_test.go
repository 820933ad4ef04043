package ui

import (
	"strings"
	"testing"
)

// footerOf is the frame's last line.
func footerOf(m *Model) string {
	l := strings.Split(screenText(m), "\n")
	return l[len(l)-1]
}

// TestHelpGoesBackWhereItWasOpened: the help covers the screen it was
// opened from, keeps its footer, and goes back to it.
func TestHelpGoesBackWhereItWasOpened(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	press(m, "<enter>j")
	detail := screenText(m)
	press(m, "?")
	if m.active != m.help || !strings.Contains(screenText(m), "GLYPHS") {
		t.Fatalf("? did not open the help:\n%s", screenText(m))
	}
	if got := footerOf(m); !strings.HasPrefix(got, "? help · q quit · esc back · t targets · tab panel") {
		t.Errorf("the help's footer %q is not the detail's", got)
	}
	press(m, "jjj+") // the help takes every key but its own
	press(m, "<esc>")
	if m.active != m.detail || screenText(m) != detail {
		t.Errorf("esc from the help did not go back to the detail as it was:\n%s", screenText(m))
	}
	press(m, "<esc>")
	if m.active != m.main {
		t.Errorf("esc from the detail did not go back to the main screen")
	}
}

// TestDetailUnderTheHelpStaysCurrent: a Detail fetched while the help
// covers the detail screen is shown when the help closes.
func TestDetailUnderTheHelpStaysCurrent(t *testing.T) {
	src := goldenSource()
	m := newTestModel(src, 120, 40)
	press(m, "<enter>?")
	d := testDetail()
	d.Instances[0].Instance = "order-renamed"
	src.details[d.App+"\x00"+d.Resource] = d
	next := testSnapshot()
	next.Seq++
	src.set(next)
	send(m, tickMsg{})
	press(m, "?")
	if s := screenText(m); !strings.Contains(s, "order-renamed") {
		t.Errorf("the detail under the help was not refreshed:\n%s", s)
	}
}

// TestAlertsKeyFromDetail: a on the detail screen goes back to the main
// screen's alerts.
func TestAlertsKeyFromDetail(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	press(m, "<enter>a")
	if m.active != m.main || m.main.focus != focusAlerts {
		t.Fatalf("a on the detail: screen %T, focus %d", m.active, m.main.focus)
	}
	if !strings.Contains(screenText(m), glyphCursor+" ALERTS") {
		t.Errorf("the alerts do not have the keyboard:\n%s", screenText(m))
	}
}

// TestFooterOffersClearingAKeptFilter: once a filter is kept, the footer
// says esc clears it; once cleared, it does not.
func TestFooterOffersClearingAKeptFilter(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	if strings.Contains(footerOf(m), "clear filter") {
		t.Errorf("no filter, yet the footer offers to clear it: %q", footerOf(m))
	}
	press(m, "/pay<enter>")
	if f := footerOf(m); !strings.Contains(f, "esc clear filter") || !strings.HasPrefix(f, "/pay ") {
		t.Errorf("kept filter: footer %q", f)
	}
	press(m, "<esc>")
	if f := footerOf(m); strings.Contains(f, "clear filter") || strings.HasPrefix(f, "/pay") {
		t.Errorf("cleared filter: footer %q", f)
	}
}
