package ui

import (
	"math"
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// cellsText draws a grid's states as text.
func cellsText(cells []core.State) string {
	var b strings.Builder
	drawStates(&b, newStyles(termenv.Ascii), cells)
	return b.String()
}

// statesOf is the cells of a breaker that starts in start, changes state
// at tr and is known from knownFrom, over g up to now.
func statesOf(g grid, start core.State, tr []collector.Transition, knownFrom, now int64, gaps ...collector.Span) []core.State {
	in := collector.InstanceDetail{Start: start, Transitions: tr, KnownFrom: knownFrom, Unreceived: gaps}
	return g.states(in.Timeline(), now)
}

// sawtooth is a breaker OPEN for 10 s and HALF_OPEN for 2 s, over and
// over, from at on.
func sawtooth(at int64, cycles int) []collector.Transition {
	var tr []collector.Transition
	for i := 0; i < cycles; i++ {
		tr = append(tr, collector.Transition{AtMs: at, From: core.HalfOpen, To: core.Open},
			collector.Transition{AtMs: at + 10_000, From: core.Open, To: core.HalfOpen})
		at += 12_000
	}
	tr[0].From = core.Closed
	return tr
}

// TestGridPastNeverChanges: as time goes on, every cell already drawn
// keeps its state; only the newest cell, still filling, may change.
func TestGridPastNeverChanges(t *testing.T) {
	tr := sawtooth(t0-200_000, 17)
	byCell := map[int64]core.State{}
	for to := t0 - 60_000; to <= t0; to += 250 {
		g := newGrid(to, 300_000, 50, 1)
		cells := statesOf(g, core.Closed, tr, t0-300_000, to)
		for i, s := range cells[:len(cells)-1] {
			k := g.first + int64(i)
			if was, ok := byCell[k]; ok && was != s {
				t.Fatalf("at %d the cell %d changed from %v to %v", to, k, was, s)
			}
			byCell[k] = s
		}
	}
}

// TestGridWorstStateWins: a cell with an OPEN spell shows OPEN though a
// HALF_OPEN fell in it too; HALF_OPEN shows only in a cell without one.
func TestGridWorstStateWins(t *testing.T) {
	tr := sawtooth(t0-120_000, 10)   // from t0-120 s: OPEN 10 s, HALF 2 s
	g := newGrid(t0, 120_000, 60, 1) // 2 s cells
	if g.step != 2000 {
		t.Fatalf("step %d", g.step)
	}
	got := cellsText(statesOf(g, core.Closed, tr, t0-120_000, t0))
	if want := strings.Repeat("█████▄", 10); got != want {
		t.Errorf("2 s cells:\n got %s\nwant %s", got, want)
	}
	g = newGrid(t0, 120_000, 20, 1) // 6 s cells: each holds some OPEN
	if got := cellsText(statesOf(g, core.Closed, tr, t0-120_000, t0)); got != strings.Repeat("█", 20) {
		t.Errorf("6 s cells: %s", got)
	}
}

// TestGridUnknownOutsideWhatIsKnown: nothing is drawn before the
// instance's breaker state is first known (InstanceDetail.KnownFrom, the
// store's rule: collector.TestKnownFromFirstDataOrFirstTransition), nor
// from when it stopped being known (KnownTo: it left), nor where no
// process ran (Absent); an instance never seen draws nothing.
func TestGridUnknownOutsideWhatIsKnown(t *testing.T) {
	in := collector.InstanceDetail{Start: core.Closed, HasBreaker: true, KnownFrom: t0 - 30_000,
		Transitions: []collector.Transition{{AtMs: t0 - 30_000, From: core.HalfOpen, To: core.Open}}}
	g := newGrid(t0, 60_000, 6, 1) // 10 s cells
	if got := cellsText(g.states(in.Timeline(), t0)); got != "···███" {
		t.Errorf("mid incident: %s", got)
	}
	in.KnownFrom, in.Transitions[0].From = t0-50_000, core.Closed
	if got := cellsText(g.states(in.Timeline(), t0)); got != "·▁▁███" {
		t.Errorf("from CLOSED: %s", got)
	}
	in.KnownTo = t0 - 20_000
	if got := cellsText(g.states(in.Timeline(), t0)); got != "·▁▁█··" {
		t.Errorf("gone 20 s ago: %s", got)
	}
	in.KnownTo, in.Absent = 0, []collector.Span{{From: t0 - 40_000, To: t0 - 20_000}}
	if got := cellsText(g.states(in.Timeline(), t0)); got != "·▁··██" {
		t.Errorf("no process for 20 s: %s", got)
	}
	in.KnownFrom, in.Transitions, in.Absent = t0-25_000, nil, nil
	if got := cellsText(g.states(in.Timeline(), t0)); got != "···▁▁▁" {
		t.Errorf("first data 25 s ago: %s", got)
	}
	in.KnownFrom = t0 + 1
	if got := cellsText(g.states(in.Timeline(), t0)); got != "······" {
		t.Errorf("never seen: %s", got)
	}
}

// TestGridPoolGapsStayGaps: a cell without data is NaN, never 0, and so is
// one that begins before the series.
func TestGridPoolGapsStayGaps(t *testing.T) {
	nan := math.NaN()
	g := newGrid(t0, 10_000, 5, 1000) // 2 s cells
	got := g.pool([]float64{nan, 3, 1, nan, nan, nan, 4, nan, 0}, t0-9000, 1000, false)
	for i, want := range []float64{nan, 3, nan, 4, 0} {
		if math.IsNaN(want) != math.IsNaN(got[i]) || (!math.IsNaN(want) && got[i] != want) {
			t.Errorf("cell %d: %v, want %v (all %v)", i, got[i], want, got)
		}
	}
}

// TestGridUnknownWhereDataNeverArrived: the cells inside a span whose data
// never arrived draw nothing; a cell it overlaps keeps a known OPEN spell,
// but not a CLOSED one (the unknown part may have been worse).
func TestGridUnknownWhereDataNeverArrived(t *testing.T) {
	g := newGrid(t0, 60_000, 6, 1) // 10 s cells
	tr := []collector.Transition{{AtMs: t0 - 55_000, From: core.Closed, To: core.Open},
		{AtMs: t0 - 15_000, From: core.HalfOpen, To: core.Closed}}
	closed := cellsText([]core.State{core.Closed})
	if got := cellsText(statesOf(g, core.Closed, tr, t0-60_000, t0)); got != "█████"+closed {
		t.Fatalf("without a gap: %s", got)
	}
	cells := statesOf(g, core.Closed, tr, t0-60_000, t0, collector.Span{From: t0 - 45_000, To: t0 - 15_000}, collector.Span{From: t0 - 2000, To: t0 - 1000})
	if got := cellsText(cells); got != "██··█·" {
		t.Errorf("with gaps: %s", got)
	}
}
