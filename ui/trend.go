// The TREND column: each row's pass/s over the time range, on a grid
// anchored to absolute time, from Details fetched for the rows in sight.

package ui

import (
	"math"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// rowKey names a row: app and resource.
type rowKey struct{ app, res string }

// trendSeries is a row's pass/s per step, NaN where the resource saw no
// traffic at all; the first step begins at start.
type trendSeries struct {
	start, stepMs int64
	pass          []float64
}

// trendMsg carries the series a command fetched, and what for.
type trendMsg struct {
	series map[rowKey]trendSeries
}

// trends fetches and keeps the TREND column's data: a Detail for each row
// in sight over the trend's grid, fetched one batch at a time and again
// only when the rows, the grid or the second of data changed.
type trends struct {
	series map[rowKey]trendSeries
	unit   int64 // the data's step, which cells are a multiple of
	busy   bool
	wanted bool     // fetch again when the batch under way arrives
	last   trendKey // what the last batch was fetched for
	// inSight is the rows in sight, asked again at every message into
	// the same array: an unchanged screen costs no allocation.
	inSight []rowKey
}

// trendKey is what a batch is fetched for: the grid, the second of data
// and the rows. The zero trendKey is no batch.
type trendKey struct {
	from, step, sec int64
	rows            []rowKey
}

func (k trendKey) equal(o trendKey) bool {
	return k.from == o.from && k.step == o.step && k.sec == o.sec && slices.Equal(k.rows, o.rows)
}

func newTrends() trends { return trends{series: map[rowKey]trendSeries{}, unit: 1000} }

// grid is the TREND's grid in w cells for data up to `to` over rng.
func (tr *trends) grid(to int64, rng time.Duration, w int) grid {
	return newGrid(to, rng.Milliseconds(), w, tr.unit)
}

// fetch returns the command fetching the rows' series over g up to `to`,
// nil when that is what the last batch fetched, or when a batch is under
// way (then it is fetched when that one arrives).
func (tr *trends) fetch(src Source, rows []rowKey, g grid, to int64) tea.Cmd {
	if len(rows) == 0 {
		return nil
	}
	k := trendKey{from: g.from(), step: g.step, sec: to / 1000, rows: rows}
	if k.equal(tr.last) {
		return nil
	}
	if tr.busy {
		tr.wanted = true
		return nil
	}
	rows = slices.Clone(rows) // the command reads them after rows' array is reused
	k.rows = rows
	tr.busy, tr.wanted, tr.last = true, false, k
	from := g.from()
	return func() tea.Msg {
		out := make(map[rowKey]trendSeries, len(rows))
		for _, r := range rows {
			d := src.Detail(r.app, r.res, from, to)
			if d == nil || d.StepMs <= 0 {
				continue
			}
			pass, _ := traffic(d)
			out[r] = trendSeries{start: floorDiv(d.From, d.StepMs) * d.StepMs, stepMs: d.StepMs, pass: pass}
		}
		return trendMsg{series: out}
	}
}

// receive keeps a fetched batch; again is set when another is wanted (the
// rows changed meanwhile, or the data's step is coarser than the grid's
// unit, so the grid must change).
func (tr *trends) receive(msg trendMsg) (again bool) {
	tr.busy = false
	for k, s := range msg.series {
		tr.series[k] = s
		if s.stepMs > tr.unit {
			tr.unit, tr.wanted = s.stepMs, true
		}
	}
	again, tr.wanted = tr.wanted, false
	if again {
		tr.last = trendKey{}
	}
	return again
}

// cells are a row's pass/s per cell of g: the mean of its steps with
// traffic, NaN without any or before the data.
func (tr *trends) cells(k rowKey, g grid) []float64 {
	s, ok := tr.series[k]
	if !ok {
		out := make([]float64, g.n)
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	return g.pool(s.pass, s.start, s.stepMs, true)
}

var sparks = [...]string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

// sparkline renders values right-aligned in w cells, scaled to their
// largest: a cell without traffic is blank, one where nothing passed ▁,
// the others ▂ to █.
func sparkline(b *strings.Builder, vs []float64, w int) {
	if len(vs) > w {
		vs = vs[len(vs)-w:]
	}
	for i := len(vs); i < w; i++ {
		b.WriteByte(' ')
	}
	hi := 0.0
	for _, v := range vs {
		if v > hi {
			hi = v
		}
	}
	for _, v := range vs {
		switch {
		case math.IsNaN(v):
			b.WriteByte(' ')
		case v <= 0 || hi <= 0:
			b.WriteString(sparks[0])
		default:
			i := int(math.Ceil(v / hi * float64(len(sparks)-1)))
			b.WriteString(sparks[max(1, min(i, len(sparks)-1))])
		}
	}
}
