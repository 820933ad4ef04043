package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/sim"
)

// layoutSizes are the terminals the main screen's layout is shown in:
// the classic, a split pane, a laptop's and a wide one.
var layoutSizes = [][2]int{{80, 24}, {100, 30}, {120, 40}, {200, 50}}

// demoMessages is the demo fleet (sim.DemoScenario) recorded over its
// first demoDurationMs: the same messages every time.
func demoMessages(t testing.TB) []wire.Message {
	t.Helper()
	s := sim.DemoScenario()
	s.Duration = demoDurationMs * time.Millisecond
	var msgs []wire.Message
	if err := sim.Run(context.Background(), s, func(m wire.Message) error {
		msgs = append(msgs, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// The demo is shown 95 s in: the price service tripped, the rule push
// reached half the gateways, the VIP customer throttled.
const demoDurationMs, demoOffsetMs = 120_000, 95_000

// TestGoldenDemo is the demo's main screen at the four sizes: which
// columns each keeps, how wide the names are, whether the width is filled.
func TestGoldenDemo(t *testing.T) {
	msgs := demoMessages(t)
	for _, size := range layoutSizes {
		t.Run(fmt.Sprintf("main_%dx%d", size[0], size[1]), func(t *testing.T) {
			fr := replayMessages(t, "demo", msgs, demoOffsetMs)
			m := newTestModel(fr, size[0], size[1])
			checkFrame(t, m.View(), size[0], size[1])
			text := screenText(m)
			header := strings.Split(text, "\n")[2]
			if size[0] >= 100 && !strings.Contains(header, "ERR%") {
				t.Errorf("ERR%% dropped at %d columns:\n%s", size[0], header)
			}
			if size[0] >= 100 && !strings.Contains(text, "order-query/queryOrder") {
				t.Errorf("an alert's app and resource cut at %d columns though they fit:\n%s", size[0], text)
			}
			if size[0] >= 120 && !strings.Contains(text, "GET:http://member-service/api/user/info") {
				t.Errorf("a name cut at %d columns though it fits:\n%s", size[0], text)
			}
			golden.RequireEqual(t, []byte(text))
		})
	}
}

// layoutSnapshot has a row per name, of app app (of apps[i%len] when
// several), with every figure measured.
func layoutSnapshot(names []string, apps ...string) *collector.Snapshot {
	s := &collector.Snapshot{At: t0, Seq: 1, Apps: len(apps), Instances: 2, Resources: len(names), Messages: 10}
	for i, n := range names {
		s.Rows = append(s.Rows, collector.ResourceRow{App: apps[i%len(apps)], Resource: n, Instances: 2, PassQPS: 50,
			Completed: 100, AvgRtMs: 20, P99Ms: 40, HasP99: true, HasBreaker: true, Breakers: collector.StateCounts{Closed: 2}})
	}
	return s
}

// tableLines are the main screen's table lines: the header, then the rows.
func tableLines(m *Model) []string {
	lines := strings.Split(screenText(m), "\n")
	end := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "ALERTS") })
	return lines[2:end]
}

// TestNamesKeepDistinguishingPart: at 80 columns, names longer than their
// column keep the part that tells them apart. Rows sharing a prefix leave
// it out, said once in the header; rows sharing none keep their last part
// whole after the ellipsis.
func TestNamesKeepDistinguishingPart(t *testing.T) {
	cases := []struct {
		name   string
		names  []string
		apps   []string
		header string   // in the header
		want   []string // in each row, in name order
	}{
		{"shared prefix", []string{
			"gateway/priceService/v2/region/eu-west/queryPrice",
			"gateway/priceService/v2/region/eu-west/listPrice",
			"gateway/priceService/v2/region/eu-west/updatePriceRules",
		}, []string{"gateway"}, "RESOURCE  gateway", []string{"…queryPrice", "…listPrice", "…updatePriceRules"}},
		{"no shared prefix", []string{
			"com.shop.price.PriceService:queryPriceByRegion",
			"com.shop.price.PriceService:listPricesForCatalogue",
			"risk-check",
		}, []string{"price", "risk-service"}, "APP", []string{":queryPriceByRegion", ":listPricesForCatalogue", "risk-check"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestModel(newStaticSource(layoutSnapshot(c.names, c.apps...)), 80, 24)
			lines := tableLines(m)
			if !strings.Contains(lines[0], c.header) {
				t.Errorf("the header does not say %q:\n%s", c.header, strings.Join(lines, "\n"))
			}
			for _, w := range c.want {
				if !slices.ContainsFunc(lines[1:], func(l string) bool { return strings.Contains(l, w) }) {
					t.Errorf("no row keeps %q:\n%s", w, strings.Join(lines, "\n"))
				}
			}
		})
	}
}

// TestAppColumnGoesWithOneApp: the APP column goes when the rows shown are
// all of one app, named in the header instead, and comes back with a
// second app: from a new snapshot, and from clearing a filter.
func TestAppColumnGoesWithOneApp(t *testing.T) {
	names := []string{"GET:/member/info", "POST:/order/create"}
	src := newStaticSource(layoutSnapshot(names, "order"))
	m := newTestModel(src, 100, 30)
	appShown := func() (bool, string) {
		lines := tableLines(m)
		return strings.Contains(lines[0], " APP "), strings.Join(lines[:3], "\n")
	}
	if on, table := appShown(); on || !strings.Contains(table, "RESOURCE  order") || !strings.Contains(table, "▸   GET:/member/info") {
		t.Errorf("one app: the APP column is shown or the header does not name it:\n%s", table)
	}
	two := layoutSnapshot(append(names, "GET:/pay/status"), "order", "order", "payment")
	two.Rows[2].App = "payment"
	two.Seq = 2
	src.set(two)
	send(m, tickMsg{})
	if on, table := appShown(); !on || strings.Contains(table, "RESOURCE  order") {
		t.Errorf("two apps: no APP column, or the header still names one app:\n%s", table)
	}
	press(m, "/pay<enter>")
	if on, table := appShown(); on || !strings.Contains(table, "RESOURCE  payment") {
		t.Errorf("filtered to one app: the APP column is shown:\n%s", table)
	}
	press(m, "<esc>")
	if on, table := appShown(); !on {
		t.Errorf("the filter cleared: no APP column:\n%s", table)
	}
}

// TestColumnsDropInPriorityOrder: as the width shrinks the columns go in
// the documented order (allColumns), never come back narrower, and the
// columns shown always fill the width.
func TestColumnsDropInPriorityOrder(t *testing.T) {
	snap := layoutSnapshot([]string{"GET:/member/info", "POST:/order/create", "GET:/pay/status"}, "order", "payment")
	want := []string{"TREND", "INST", "P99", "ERR%", "SLOW%", "PASS/S", "BLOCK/S", "BREAKERS"}
	var tr trends
	tb := newResourceTable(newStyles(termenv.Ascii), newKeyMap(), &tr).SetRows(snap)
	var dropped []string
	prev := map[string]bool{}
	for w := 220; w >= 30; w-- {
		tb = tb.SetSize(w, 10)
		shown := map[string]bool{}
		used := len(tb.cols) - 1
		for _, c := range tb.cols {
			shown[c.title] = true
			used += c.w
		}
		if used != w && w >= 60 {
			t.Errorf("at %d columns the columns take %d", w, used)
		}
		for _, keep := range []string{" !", "APP", "RESOURCE"} {
			if !shown[keep] {
				t.Fatalf("at %d columns %s is gone", w, keep)
			}
		}
		for title := range prev {
			if !shown[title] {
				dropped = append(dropped, title)
			}
		}
		for title := range shown {
			if len(prev) > 0 && !prev[title] {
				t.Errorf("%s came back at %d columns", title, w)
			}
		}
		prev = shown
	}
	if !slices.Equal(dropped, want) {
		t.Errorf("columns dropped in the order %v, want %v", dropped, want)
	}
}

// TestBlankColumnsGoFirst: SLOW% goes before the others when no row's
// source counts slow calls, and keeps its place when one does.
func TestBlankColumnsGoFirst(t *testing.T) {
	snap := layoutSnapshot([]string{"queryPrice", "listPrices"}, "price", "stock")
	for i := range snap.Rows {
		snap.Rows[i].SlowUnknown = true
	}
	var tr trends
	tb := newResourceTable(newStyles(termenv.Ascii), newKeyMap(), &tr).SetRows(snap).SetSize(80, 10)
	if tb.shown(colSlow) || !tb.shown(colInstances) {
		t.Errorf("at 80 columns SLOW%% (all –) is shown or INST is not: %v", tb.cols)
	}
	snap.Rows[1].SlowUnknown = false
	if tb = tb.SetRows(snap); !tb.shown(colSlow) || tb.shown(colInstances) {
		t.Errorf("a row with slow calls counted: SLOW%% is not shown, or INST is: %v", tb.cols)
	}
}

// TestLayoutHostileNames: names a peer chooses to defeat the layout (only
// separators, a prefix that is all but one byte, wide characters between
// separators, escapes, empty, past the sanitizing bound) lay out in every
// width without a panic, each line within the width, nothing raw.
func TestLayoutHostileNames(t *testing.T) {
	long := strings.Repeat("a/", 400)
	names := []string{
		strings.Repeat("/", 600), long + "x", long + "y", "", strings.Repeat("订/", 300),
		"\x1b[2J/::..##/\x1b]0;x\x07", "a", strings.Repeat("é", 700) + "/tail",
	}
	for _, apps := range [][]string{{"order"}, {"order", strings.Repeat("订单", 40)}} {
		src := newStaticSource(layoutSnapshot(names, apps...))
		for w := MinWidth; w <= 230; w += 17 {
			m := newTestModel(src, w, 30)
			for _, keys := range []string{"", "/a/<enter>", "<esc>c<down><down> <esc>"} {
				press(m, keys)
				f := m.View()
				checkFrame(t, f, w, 30)
				if rest := sgrOnly.ReplaceAllString(f, ""); strings.ContainsRune(rest, '\x1b') {
					t.Fatalf("at %d columns a raw escape: %q", w, rest)
				}
			}
		}
	}
}

// FuzzFitName: a name fitted into w cells takes exactly min(w, its width)
// cells, and the prefix names share leaves each of them something.
func FuzzFitName(f *testing.F) {
	f.Add("gateway/priceService/queryPrice", "gateway/priceService/listPrice", 12)
	f.Add("订单/查询", "订单/按用户", 5)
	f.Add("/", "//", 1)
	f.Fuzz(func(t *testing.T, a, b string, w int) {
		w = w%300 + 1
		if w < 1 {
			w = -w + 1
		}
		for _, s := range []string{sanitize(a), sanitize(b)} {
			if got := elideKeepTail(s, w); width(got) != min(w, width(s)) {
				t.Errorf("elideKeepTail(%q, %d) = %q: %d cells", s, w, got, width(got))
			}
			if got := resourceName(s, w); width(got) > w {
				t.Errorf("resourceName(%q, %d) = %q: %d cells", s, w, got, width(got))
			}
		}
		names := []string{sanitize(a), sanitize(b)}
		p := commonPrefix(names)
		for _, n := range names {
			if !strings.HasPrefix(n, p) || len(p) >= len(n) && p != "" {
				t.Errorf("commonPrefix(%q) = %q", names, p)
			}
		}
	})
}
