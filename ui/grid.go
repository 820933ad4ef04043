// Time on a fixed grid: cells of a whole step anchored to absolute time,
// so that a cell covers the same span of the past at every refresh and the
// past never changes shape as time goes on.

package ui

import (
	"math"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// gridSteps are the cell lengths a grid may take, in ms: each divides a
// minute, an hour or a day, so that clock marks fall on cell boundaries.
var gridSteps = []int64{
	1e3, 2e3, 3e3, 4e3, 5e3, 6e3, 10e3, 12e3, 15e3, 20e3, 30e3,
	60e3, 120e3, 180e3, 240e3, 300e3, 360e3, 600e3, 720e3, 900e3, 1200e3, 1800e3,
	3600e3, 7200e3, 10800e3, 14400e3, 21600e3, 28800e3, 43200e3,
}

// grid divides time into cells of step ms, cell k covering [k*step,
// (k+1)*step) of Unix time; a view shows n cells from the cell first.
type grid struct {
	step  int64
	first int64
	n     int
}

// newGrid is the grid of the shortest step (a multiple of unit, the data's
// own step) that shows the span ms before to in at most w cells: the cells
// from the one holding to-span to the one holding the last instant before
// to. When they are one too many, the oldest is left out.
func newGrid(to, span int64, w int, unit int64) grid {
	w = max(1, w)
	step := gridSteps[len(gridSteps)-1]
	for _, s := range gridSteps {
		if s%max(unit, 1) == 0 && (span+s-1)/s <= int64(w) {
			step = s
			break
		}
	}
	last := floorDiv(to-1, step)
	n := int(min(int64(w), max(1, last-floorDiv(to-span, step)+1)))
	return grid{step: step, first: last - int64(n) + 1, n: n}
}

// start is when cell i begins, Unix ms.
func (g grid) start(i int) int64 { return (g.first + int64(i)) * g.step }

// from is when the grid's first cell begins.
func (g grid) from() int64 { return g.start(0) }

// cell is the index of the cell holding t (outside [0, n) when t is).
func (g grid) cell(t int64) int { return int(floorDiv(t, g.step) - g.first) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// pool puts a per-step series, its first step beginning at start, on the
// grid: a cell holds the largest (or the mean) of the values of the steps
// beginning in it, NaN ones left out; NaN when none has a value, and when
// the cell begins before the series (a cell only partly known would
// change as the range moves on).
func (g grid) pool(vs []float64, start, stepMs int64, mean bool) []float64 {
	out := make([]float64, g.n)
	sum := make([]float64, g.n)
	cnt := make([]int, g.n)
	for i := range out {
		out[i] = math.NaN()
	}
	for k, v := range vs {
		i := g.cell(start + int64(k)*stepMs)
		if i < 0 || i >= g.n || math.IsNaN(v) || g.start(i) < start {
			continue
		}
		sum[i] += v
		cnt[i]++
		if math.IsNaN(out[i]) || v > out[i] {
			out[i] = v
		}
	}
	if mean {
		for i := range out {
			if cnt[i] > 0 {
				out[i] = sum[i] / float64(cnt[i])
			}
		}
	}
	return out
}

// unknownState marks a cell whose breaker state is not known.
const unknownState = triage.StateUnknown

// states is a breaker's history in each cell, by the one rule every view
// draws with (triage.Timeline.Cells), nothing known from now on.
func (g grid) states(tl triage.Timeline, now int64) []core.State {
	if tl.KnownTo == 0 || tl.KnownTo > now {
		tl.KnownTo = now
	}
	edges := make([]int64, g.n+1)
	for i := range edges {
		edges[i] = g.start(i)
	}
	return tl.Cells(edges)
}

// drawStates writes the cells' bands, painted by runs.
func drawStates(b *strings.Builder, st *Styles, cells []core.State) {
	prev := paint{}
	for _, s := range cells {
		p, g := st.statePaint(s), stateBand(s)
		if s == unknownState {
			p, g = st.dim, bandNone
		}
		if p != prev {
			b.WriteString(prev.post)
			b.WriteString(p.pre)
			prev = p
		}
		b.WriteString(g)
	}
	b.WriteString(prev.post)
}

// axis labels the grid's cells with clock times where round times begin,
// as many as fit two cells apart, in the grid's n cells: "10:02:00" or,
// on whole minutes, "10:02".
func (g grid) axis(loc *time.Location) string {
	line := []rune(strings.Repeat(" ", g.n))
	for _, every := range gridSteps {
		if every%g.step != 0 {
			continue
		}
		layout := "15:04"
		if every%60e3 != 0 {
			layout = "15:04:05"
		}
		if every/g.step < int64(len(layout)+2) {
			continue
		}
		for i := 0; i < g.n; i++ {
			at := g.start(i)
			if floorDiv(at, every)*every != at {
				continue
			}
			label := time.UnixMilli(at).In(loc).Format(layout)
			if i+len(label) <= g.n {
				copy(line[i:], []rune(label))
			}
		}
		break
	}
	return string(line)
}
