package ui

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// frameRecorder runs the dashboard in a real program loop (teatest) and
// keeps the frame it drew last, as text, for a test to read whole: the
// program's output holds only the lines each frame changed.
type frameRecorder struct {
	m *Model

	mu   sync.Mutex
	last string
}

func (r *frameRecorder) Init() tea.Cmd { return r.m.Init() }

func (r *frameRecorder) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := r.m.Update(msg)
	return r, cmd
}

func (r *frameRecorder) View() string {
	v := r.m.View()
	r.mu.Lock()
	r.last = ansi.Strip(v)
	r.mu.Unlock()
	return v
}

// startRecorded starts the dashboard over src at 120x40, as startFlow does,
// with its frames recorded.
func startRecorded(t *testing.T, src flowSource) (*teatest.TestModel, *frameRecorder) {
	t.Helper()
	rec := &frameRecorder{m: newModel(src, Options{Profile: ColorNone, Location: time.UTC, TickInterval: flowTick,
		Replay: src.control()})}
	return teatest.NewTestModel(t, rec, teatest.WithInitialTermSize(120, 40)), rec
}

// waitFrame waits until a frame drawn satisfies ok, and returns it.
func (r *frameRecorder) waitFrame(t *testing.T, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		f := r.last
		r.mu.Unlock()
		if ok(f) {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("no frame %s in 5 s; the last:\n%s", what, f)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// clockOf is the status bar's clock at a snapshot.
func clockOf(s *collector.Snapshot) string { return time.UnixMilli(s.At).UTC().Format("15:04:05") }

// tableRows are the app and resource of each row of a frame's table, in
// order: the lines between the table's header and the first blank one,
// without the cursor, the mark and the values.
func tableRows(frame string) []string {
	var rows []string
	in, oneApp := false, ""
	for _, l := range strings.Split(frame, "\n") {
		switch {
		case strings.Contains(l, " APP") && strings.Contains(l, "RESOURCE"):
			in = true
		case !in && strings.Contains(l, "RESOURCE"):
			// one app: no APP column, the header names it ("RESOURCE  shop")
			if f := strings.Fields(l[strings.Index(l, "RESOURCE"):]); len(f) >= 2 {
				oneApp, in = f[1], true
			}
		case in && oneApp != "":
			if f := strings.Fields(string([]rune(l)[min(len([]rune(l)), 4):])); len(f) >= 1 && strings.TrimSpace(l) != "" {
				rows = append(rows, oneApp+" "+f[0])
				continue
			}
			return rows
		case in && strings.TrimSpace(l) == "":
			return rows
		case in:
			r := []rune(l) // the cursor and the mark: 4 cells, a rune each
			f := strings.Fields(string(r[min(len(r), 4):]))
			if len(f) >= 2 {
				rows = append(rows, f[0]+" "+f[1])
			}
		}
	}
	return rows
}

// liveOrder is the rows of s sorted by k on their live values, as a
// table re-sorted at every snapshot would show them.
func liveOrder(s *collector.Snapshot, k sortKey) []string {
	rows := slices.Clone(s.Rows)
	slices.SortStableFunc(rows, func(a, b collector.ResourceRow) int { return compareRows(&a, &b, k) })
	var out []string
	for _, r := range rows {
		out = append(out, r.App+"/"+r.Resource)
	}
	return out
}

// TestFlowRowsStayPutOnSteadyData: ten snapshots a second apart of a
// healthy fleet replayed through the real collector (the same traffic,
// with its noise: no severity changes), sorted by pass/s and by severity.
// Sorted by the live values, the rows would move (checked: two of them
// are a few percent apart); they stay put on screen across all ten.
func TestFlowRowsStayPutOnSteadyData(t *testing.T) {
	for _, c := range []struct {
		name string
		keys string
		k    sortKey
	}{{"pass/s", "ss", sortPass}, {"severity", "", sortSeverity}} {
		t.Run(c.name, func(t *testing.T) {
			fr := replayFixture(t, "healthy-baseline", 30_000)
			tm, rec := startRecorded(t, fr)
			typeKeys(tm, c.keys)
			first := rec.waitFrame(t, "sorted by "+c.name, func(f string) bool {
				return strings.Contains(f, clockOf(fr.Snapshot())) && len(tableRows(f)) == 5 &&
					(c.k != sortPass || strings.Contains(f, "▼PASS/S"))
			})
			want := tableRows(first)
			liveMoves := 0
			prevLive := liveOrder(fr.Snapshot(), c.k)
			for i := 0; i < 10; i++ {
				fr.seek(t, fr.pos()+1000)
				s := fr.Snapshot()
				for _, r := range s.Rows {
					if r.HasFinding && r.Worst >= triage.Warning {
						t.Fatalf("steady data has a warning: %+v", r)
					}
				}
				if live := liveOrder(s, c.k); !slices.Equal(live, prevLive) {
					liveMoves++
					prevLive = live
				}
				f := rec.waitFrame(t, "at "+clockOf(s), func(f string) bool { return strings.Contains(f, clockOf(s)) })
				if got := tableRows(f); !slices.Equal(got, want) {
					t.Fatalf("snapshot %d (%s): rows moved:\n%s\nwere:\n%s\n%s", i+1, clockOf(s),
						strings.Join(got, "\n"), strings.Join(want, "\n"), f)
				}
			}
			if c.k == sortPass && liveMoves == 0 {
				t.Error("the live pass/s order never changed: the data tests nothing")
			}
			t.Logf("%s: the live order changed %d times in 10 snapshots, the screen's never", c.name, liveMoves)
			typeKeys(tm, "q")
			tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
		})
	}
}

// stableSnapshot is four rows of one app: a critical one, two warnings
// whose breakers trip and probe, and a healthy one; values are per seq.
func stableSnapshot(seq uint64, edit func(rows []collector.ResourceRow)) *collector.Snapshot {
	rows := []collector.ResourceRow{
		{App: "shop", Resource: "a-cart", Instances: 4, PassQPS: 110, Completed: 10, HasBreaker: true,
			Breakers: collector.StateCounts{Closed: 4}},
		{App: "shop", Resource: "b-db", Instances: 4, PassQPS: 5, BlockQPS: 90, Completed: 10, HasBreaker: true,
			Breakers: collector.StateCounts{Open: 2, Closed: 2}, Worst: triage.Warning, HasFinding: true},
		{App: "shop", Resource: "c-pay", Instances: 4, PassQPS: 120, Completed: 10, HasBreaker: true,
			Breakers: collector.StateCounts{Closed: 4}, Worst: triage.Critical, HasFinding: true},
		{App: "shop", Resource: "d-stock", Instances: 4, PassQPS: 8, BlockQPS: 60, Completed: 10, HasBreaker: true,
			Breakers: collector.StateCounts{Open: 1, Closed: 3}, Worst: triage.Warning, HasFinding: true},
	}
	if edit != nil {
		edit(rows)
	}
	return &collector.Snapshot{At: t0 + int64(seq)*1000, Seq: seq, Mode: collector.ModeLive, Apps: 1, Instances: 4,
		Resources: 4, Messages: 100 * int64(seq), Rows: rows}
}

// TestSeverityOrderHoldsThroughTripCycles: by severity, two warnings whose
// breakers go OPEN, HALF_OPEN and back, and whose block rates swing, keep
// their places, and their marks (a HALF_OPEN breaker is still a tripped
// one); when one turns critical it moves up, and back down when it is a
// warning again; a row whose breakers all close loses its mark and moves
// down. Sorted by pass/s, a rate within a quarter of its held value does
// not move its row, and one that doubles does.
func TestSeverityOrderHoldsThroughTripCycles(t *testing.T) {
	src := newStaticSource(stableSnapshot(1, nil))
	m := newTestModel(src, 120, 30)
	order := func() string { return strings.Join(tableRows(screenText(m)), ",") }
	step := func(seq uint64, edit func(rows []collector.ResourceRow)) {
		src.set(stableSnapshot(seq, edit))
		send(m, tickMsg{})
	}
	const start = "shop c-pay,shop b-db,shop d-stock,shop a-cart"
	if got := order(); got != start {
		t.Fatalf("first order %s, want %s", got, start)
	}
	cycle := []func(rows []collector.ResourceRow){
		func(rows []collector.ResourceRow) { // b probes, d trips a second breaker and blocks more
			rows[1].Breakers = collector.StateCounts{HalfOpen: 2, Closed: 2}
			rows[1].BlockQPS = 20
			rows[3].Breakers = collector.StateCounts{Open: 3, Closed: 1}
			rows[3].BlockQPS = 200
		},
		func(rows []collector.ResourceRow) { // b's probes fail; d probes
			rows[3].Breakers = collector.StateCounts{HalfOpen: 3, Closed: 1}
			rows[3].BlockQPS = 5
		},
		func(rows []collector.ResourceRow) { // pass rates swing
			rows[0].PassQPS, rows[2].PassQPS = 140, 90
		},
	}
	for i, edit := range cycle {
		step(uint64(2+i), edit)
		if got := order(); got != start {
			t.Fatalf("step %d: order %s, want it unchanged: %s\n%s", i+1, got, start, screenText(m))
		}
	}
	if !strings.Contains(screenText(m), " !  b-db") {
		t.Errorf("b-db, its finding a warning, lost its mark:\n%s", screenText(m))
	}
	// a real severity change moves the row, both ways.
	step(10, func(rows []collector.ResourceRow) { rows[3].Worst = triage.Critical })
	// among the critical rows it takes its place by its breakers: one
	// OPEN, where c-pay has none.
	if got, want := order(), "shop d-stock,shop c-pay,shop b-db,shop a-cart"; got != want {
		t.Errorf("d-stock critical: order %s, want %s", got, want)
	}
	step(11, nil)
	if got := order(); got != start {
		t.Errorf("d-stock a warning again: order %s, want %s", got, start)
	}
	// no finding: an OPEN or HALF_OPEN breaker is a warning, all closed none.
	step(12, func(rows []collector.ResourceRow) {
		rows[1].HasFinding, rows[1].Worst, rows[1].Breakers = false, 0, collector.StateCounts{HalfOpen: 1, Closed: 3}
	})
	if got := order(); got != start || !strings.Contains(screenText(m), " !  b-db") {
		t.Errorf("b-db HALF_OPEN without a finding: order %s, want %s, and its mark:\n%s", got, start, screenText(m))
	}
	step(13, func(rows []collector.ResourceRow) {
		rows[1].HasFinding, rows[1].Worst, rows[1].Breakers = false, 0, collector.StateCounts{Closed: 4}
	})
	// among the unmarked rows it takes its place by its block rate.
	if got, want := order(), "shop c-pay,shop d-stock,shop b-db,shop a-cart"; got != want {
		t.Errorf("b-db recovered: order %s, want %s", got, want)
	}

	// by pass/s: c-pay 120, a-cart 110, d 8, b 5.
	press(m, "ss")
	const byPass = "shop c-pay,shop a-cart,shop d-stock,shop b-db"
	if got := order(); got != byPass {
		t.Fatalf("by pass/s: %s, want %s", got, byPass)
	}
	step(14, func(rows []collector.ResourceRow) { rows[0].PassQPS, rows[2].PassQPS = 125, 101 }) // inside the band
	if got := order(); got != byPass {
		t.Errorf("pass/s wobbling inside a quarter: %s, want %s", got, byPass)
	}
	step(15, func(rows []collector.ResourceRow) { rows[0].PassQPS, rows[2].PassQPS = 125, 60 }) // c-pay halves
	if got, want := order(), "shop a-cart,shop c-pay,shop d-stock,shop b-db"; got != want {
		t.Errorf("c-pay's pass/s halved: %s, want %s", got, want)
	}
	// held, d-stock (8) stays above b-db (5) while their live rates, each
	// inside its band, are the other way round; r sorts afresh by them.
	step(16, func(rows []collector.ResourceRow) {
		rows[0].PassQPS, rows[2].PassQPS, rows[3].PassQPS, rows[1].PassQPS = 125, 60, 6.0, 6.2
	})
	const held = "shop a-cart,shop c-pay,shop d-stock,shop b-db"
	if got := order(); got != held {
		t.Errorf("rates inside their bands: %s, want %s", got, held)
	}
	press(m, "r")
	if got, want := order(), "shop d-stock,shop b-db,shop c-pay,shop a-cart"; got != want {
		t.Errorf("reversed afresh: %s, want %s", got, want)
	}
}

// TestFlowCursorKeepsItsRow: the user moves to a row; rows above it move
// (one drops below it, one is new) and it keeps the cursor, at its new
// place, through snapshots and a change of sort; a row gone leaves the
// cursor where it was.
func TestFlowCursorKeepsItsRow(t *testing.T) {
	src := newStaticSource(stableSnapshot(1, nil))
	tm, rec := startRecorded(t, src)
	rec.waitFrame(t, "first", func(f string) bool { return strings.Contains(f, "▸!! c-pay") })
	typeKeys(tm, "jj") // d-stock
	rec.waitFrame(t, "on d-stock", func(f string) bool { return strings.Contains(f, "▸!  d-stock") })
	// c-pay recovers (below d-stock now), a new critical row appears above.
	next := stableSnapshot(2, func(rows []collector.ResourceRow) { rows[2].HasFinding, rows[2].Worst = false, 0 })
	next.Rows = append(next.Rows, collector.ResourceRow{App: "shop", Resource: "e-mail", Instances: 1, PassQPS: 3,
		Completed: 3, Worst: triage.Critical, HasFinding: true})
	src.set(next)
	f := rec.waitFrame(t, "with e-mail", func(f string) bool { return strings.Contains(f, "e-mail") })
	if got, want := strings.Join(tableRows(f), ","), "shop e-mail,shop b-db,shop d-stock,shop a-cart,shop c-pay"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	if !strings.Contains(f, "▸!  d-stock") || !strings.Contains(f, "rows 3/5") {
		t.Errorf("the cursor left d-stock:\n%s", f)
	}
	typeKeys(tm, "S")
	rec.waitFrame(t, "the picker", func(f string) bool { return strings.Contains(f, "SORT BY") })
	typeKeys(tm, "<down><down><enter>") // RESOURCE
	f = rec.waitFrame(t, "by resource", func(f string) bool { return strings.Contains(f, "RESOURCE▲") })
	if !strings.Contains(f, "▸!  d-stock") || !strings.Contains(f, "rows 4/5") {
		t.Errorf("sorted by resource, the cursor left d-stock:\n%s", f)
	}
	// d-stock goes: the cursor stays at its place.
	gone := stableSnapshot(3, nil)
	gone.Rows = slices.Delete(gone.Rows, 3, 4)
	src.set(gone)
	f = rec.waitFrame(t, "without d-stock", func(f string) bool { return !strings.Contains(f, "d-stock") })
	if !strings.Contains(f, "rows 3/3") {
		t.Errorf("d-stock gone, the cursor is not on the last row:\n%s", f)
	}
	typeKeys(tm, "q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// TestHeaderKeepsItsPlaceWhateverTheSort: the header line is the same
// width and its titles at the same cells whichever column is sorted, in
// either direction, at 80 and 120 columns: only the arrow's cell differs.
// sortNoteRE finds the sort said beside RESOURCE when its column is not
// on screen ("  sorted by p99 ▼", "  instances ▲").
var sortNoteRE = regexp.MustCompile(`  (sorted by )?[a-z/%0-9]+ [▼▲]`)

func TestHeaderKeepsItsPlaceWhateverTheSort(t *testing.T) {
	for _, w := range []int{80, 120, 200} {
		m := newTestModel(goldenSource(), w, 30)
		var first string
		seen := map[string]bool{}
		for k := range numSortKeys {
			for _, rev := range []bool{false, true} {
				m.main.sort, m.main.reverse = k, rev
				m.main.table = m.main.table.SetSort(k, rev)
				m.dirty = true
				h := strings.Split(screenText(m), "\n")[2]
				if ansi.StringWidth(h) != w {
					t.Errorf("%d columns, by %s: header %d cells wide", w, k, ansi.StringWidth(h))
				}
				if strings.Count(h, "▼")+strings.Count(h, "▲") > 1 {
					t.Errorf("%d columns, by %s: more than one arrow: %q", w, k, h)
				}
				seen[h] = true
				// a sort whose column is not on screen is said in the
				// RESOURCE column's room (sortNote): the titles stay.
				blank := sortNoteRE.ReplaceAllStringFunc(h, func(n string) string { return strings.Repeat(" ", width(n)) })
				blank = strings.NewReplacer("▼", " ", "▲", " ").Replace(blank)
				if first == "" {
					first = blank
				} else if blank != first {
					t.Errorf("%d columns, by %s (reversed %v): the titles moved:\n%q\n%q", w, k, rev, blank, first)
				}
			}
		}
		// every sort shown in the header has a header of its own, its
		// column's arrow or, the column left out, the RESOURCE header's
		// note.
		if len(seen) != 2*int(numSortKeys) {
			t.Errorf("%d columns: %d different headers for %d sorts", w, len(seen), 2*numSortKeys)
		}
	}
}

// TestSortPicker: F6 and S open the list of sorts on the current one,
// marked with its arrow; the moves and enter sort by another and close it;
// esc closes it changing nothing; while it is open the keys are its own.
func TestSortPicker(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	for _, open := range []string{"S", "f6"} {
		if open == "f6" {
			send(m, tea.KeyMsg{Type: tea.KeyF6})
		} else {
			press(m, open)
		}
		s := screenText(m)
		if !m.main.picker.open || !strings.Contains(s, "SORT BY") || !strings.Contains(s, "│▸ !▼ ") {
			t.Fatalf("%s: the picker is not open on severity:\n%s", open, s)
		}
		if !strings.Contains(s, "enter sort by it") {
			t.Errorf("%s: the footer does not say the picker's keys:\n%s", open, s)
		}
		press(m, "jj/a") // moves, and keys of the main screen that do nothing here
		if m.main.filtering || m.main.focus != focusTable {
			t.Errorf("%s: a key reached the main screen while the picker was open", open)
		}
		press(m, "<esc>")
		if m.main.picker.open || m.main.sort != sortSeverity || strings.Contains(screenText(m), "SORT BY") {
			t.Fatalf("%s: esc did not close the picker unchanged", open)
		}
	}
	press(m, "S<down><down><down><down><enter>") // PASS/S
	if m.main.picker.open || m.main.sort != sortPass {
		t.Fatalf("enter on PASS/S: open %v, sort %s", m.main.picker.open, m.main.sort)
	}
	s := screenText(m)
	if rows := tableRows(s); !strings.Contains(s, "▼PASS/S") || !strings.HasPrefix(rows[0], "payment POST:/pay/c") {
		t.Errorf("not sorted by pass/s:\n%s", s)
	}
	press(m, "rS")
	if s := screenText(m); !strings.Contains(s, "│▸ PASS/S▲ ") {
		t.Errorf("reversed, the picker does not mark PASS/S▲:\n%s", s)
	}
	press(m, "G<enter>") // the last: BREAKERS; r kept
	if m.main.sort != sortBreakers || !m.main.reverse || !strings.Contains(screenText(m), "BREAKERS▲") {
		t.Errorf("G enter: sort %s reversed %v:\n%s", m.main.sort, m.main.reverse, screenText(m))
	}
	press(m, "s") // s goes on cycling from the sort picked
	if m.main.sort != sortPass {
		t.Errorf("s after breakers: %s", m.main.sort)
	}
	press(m, "S")
	if _, cmd := m.update(keys("q")[0]); cmd == nil || cmd() != tea.Quit() {
		t.Error("q in the picker does not quit")
	}
}

// TestSortPickerFitsSmallTerminals: at the smallest terminal the picker's
// list scrolls inside the screen and the frame keeps its size.
func TestSortPickerFitsSmallTerminals(t *testing.T) {
	m := newTestModel(goldenSource(), MinWidth, MinHeight)
	press(m, "S")
	checkFrame(t, m.View(), MinWidth, MinHeight)
	press(m, "G")
	s := screenText(m)
	checkFrame(t, m.View(), MinWidth, MinHeight)
	if !strings.Contains(s, "│▸ BREAKERS") || !strings.Contains(s, "└─ enter sorts") {
		t.Errorf("the picker's last sort is not in sight at %dx%d:\n%s", MinWidth, MinHeight, s)
	}
}

// TestHeldOrderKeepsOnlyTheRowsShown: what the table holds to keep its
// order is one key per row of the latest snapshot: rows gone are
// forgotten, and the buffer of a larger snapshot keeps none of its names.
func TestHeldOrderKeepsOnlyTheRowsShown(t *testing.T) {
	big := bigSnapshot(2000, 1)
	var h heldOrder
	h.take(big.Rows, sortPass, false)
	small := stableSnapshot(2, nil)
	h.take(small.Rows, sortPass, false)
	h.take(small.Rows, sortPass, false)
	if len(h.rows) != len(small.Rows) || len(h.keys) != len(small.Rows) {
		t.Fatalf("held %d rows and %d keys for %d rows", len(h.rows), len(h.keys), len(small.Rows))
	}
	for _, r := range h.spare[:cap(h.spare)] {
		if strings.HasPrefix(r.app, "app-") {
			t.Fatalf("the spare buffer still holds %q", r.app+"/"+r.res)
		}
	}
}
