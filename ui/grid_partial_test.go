package ui

import (
	"math"
	"testing"
)

// TestGridPoolPartlyKnownCellIsAGap: a cell that begins before the series
// shows nothing, though the series has a value in it (the cell would
// change as the range moves on); a series that begins with a cell fills
// it.
func TestGridPoolPartlyKnownCellIsAGap(t *testing.T) {
	nan := math.NaN()
	g := newGrid(t0, 10_000, 5, 1000) // 2 s cells, from t0-10 s
	for _, c := range []struct {
		start int64
		vs    []float64
		want  []float64
	}{
		// From the middle of cell 0: its 9 is half a cell.
		{t0 - 9000, []float64{9, 3, 1, 2, 7, 8, 4, 6, 0}, []float64{nan, 3, 7, 8, 6}},
		// From the start of cell 0: all of it.
		{t0 - 10_000, []float64{9, 3, 1, 2, 7, 8, 4, 6, 0, 5}, []float64{9, 2, 8, 6, 5}},
	} {
		got := g.pool(c.vs, c.start, 1000, false)
		for i, want := range c.want {
			if math.IsNaN(want) != math.IsNaN(got[i]) || (!math.IsNaN(want) && got[i] != want) {
				t.Errorf("from t0%+d: cell %d: %v, want %v (all %v)", c.start-t0, i, got[i], want, got)
			}
		}
	}
}
