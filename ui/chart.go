package ui

import (
	"math"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/guptarohit/asciigraph"
)

// series is one line of a chart.
type series struct {
	name   string
	values []float64
	glyph  string // drawn with this character instead of box lines ("" = lines)
	color  asciigraph.AnsiColor
}

// chart plots series over the detail's time range with asciigraph, one
// column per cell of a grid anchored to absolute time (grid.go), with the
// clock under it. A cell holds the largest value of its steps (spikes
// survive); a cell without data is a gap, never 0; nothing is stretched or
// interpolated. A horizontal line marks the threshold when there is one.
type chart struct {
	st     *Styles
	title  string
	series []series
	// limit draws a horizontal line at this value (when hasLimit).
	hasLimit  bool
	limit     float64
	limitName string
	// format labels the y axis.
	format func(float64) string
	// floor is the least top of the y axis (a flat zero line gets some room).
	floor float64
	// empty is what the chart says without data ("" for "no data in range").
	empty string
	// g is the chart's grid, its columns; the series' steps are stepMs long,
	// the first beginning at start.
	g             grid
	start, stepMs int64
	loc           *time.Location
	width, height int
}

// labelW is the width of the y axis labels.
const labelW = 6

// SetSize sets the chart's size: width in cells, height in lines with the
// title and the legend.
func (c chart) SetSize(w, h int) chart { c.width, c.height = w, h; return c }

// Update does nothing: a chart has no state of its own.
func (c chart) Update(tea.Msg) (chart, tea.Cmd) { return c, nil }

// chartPoints is how many columns a chart of w cells plots.
func chartPoints(w int) int { return w - labelW - 3 }

// View renders the title, the plot, the clock and the legend.
func (c chart) View() string {
	st := c.st
	fullH := max(2, c.height-3)
	plotH := fullH
	points := chartPoints(c.width)
	var b strings.Builder
	title := c.title
	if c.g.step > c.stepMs {
		title += st.dim.on("  (max per " + fmtMs(c.g.step) + ")")
	}
	b.WriteString(fitLine(st.title.on(title), c.width))
	data := make([][]float64, 0, len(c.series)+1)
	var opts []asciigraph.Option
	var colors []asciigraph.AnsiColor
	var chars []asciigraph.CharSet
	hi := c.floor
	hasData := false
	inexact := false // the limit's line is drawn on the nearest step
	// the first series is the main one: drawn last, on top of the others.
	for i := len(c.series) - 1; i >= 0; i-- {
		s := c.series[i]
		v := c.g.pool(s.values, c.start, c.stepMs, false)
		for _, x := range v {
			if !math.IsNaN(x) {
				hasData = true
				hi = max(hi, x)
			}
		}
		data = append(data, v)
		colors = append(colors, s.color)
		if s.glyph != "" {
			chars = append(chars, asciigraph.CreateCharSet(s.glyph))
		} else {
			chars = append(chars, asciigraph.DefaultCharSet)
		}
	}
	if points < 4 || !hasData {
		msg := "no data in range"
		switch {
		case points < 4:
			msg = "too narrow to plot"
		case c.empty != "":
			msg = c.empty
		}
		lines := wrap(msg, c.width-labelW-2)
		for i := 1; i < c.height; i++ {
			b.WriteByte('\n')
			if i <= len(lines) {
				b.WriteString(fitLine(st.dim.on(strings.Repeat(" ", labelW)+"  "+lines[i-1]), c.width))
			}
		}
		return b.String()
	}
	if c.hasLimit {
		// drawn first, so the data is drawn over it.
		lim := make([]float64, len(data[0]))
		for i := range lim {
			lim[i] = c.limit
		}
		data = append([][]float64{lim}, data...)
		colors = append([]asciigraph.AnsiColor{asciigraph.Red}, colors...)
		chars = append([]asciigraph.CharSet{asciigraph.CreateCharSet("┄")}, chars...)
		var rows int
		hi, rows = limitTop(c.limit, hi, plotH-1)
		plotH = rows + 1
		if step := hi / float64(rows); math.Abs(c.limit/step-math.Round(c.limit/step)) > 0.01 {
			inexact = true
		}
	}
	opts = append(opts,
		asciigraph.Height(plotH-1),
		asciigraph.Offset(2),
		asciigraph.LowerBound(0),
		asciigraph.UpperBound(hi),
		asciigraph.SeriesChars(chars...),
		asciigraph.YAxisValueFormatter(func(v float64) string {
			if math.Abs(v) < 1e-9 {
				v = 0
			}
			s := c.format(v)
			if len(s) < labelW {
				s = strings.Repeat(" ", labelW-len(s)) + s
			}
			return s
		}),
	)
	if st.color {
		opts = append(opts, asciigraph.SeriesColors(colors...))
	}
	plot := asciigraph.PlotMany(data, opts...)
	lines := strings.Split(plot, "\n")
	for i, l := range lines {
		if i >= plotH {
			break
		}
		b.WriteByte('\n')
		b.WriteString(fitLine(l, c.width))
	}
	for i := min(len(lines), plotH); i < fullH; i++ {
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(st.dim.on(fitLine(strings.Repeat(" ", labelW+2)+c.g.axis(c.loc), c.width)))
	// the legend: glyphs, never colour alone.
	var lg strings.Builder
	lg.WriteString(strings.Repeat(" ", labelW+2))
	for i, s := range c.series {
		if i > 0 {
			lg.WriteString("   ")
		}
		g := s.glyph
		if g == "" {
			g = "─"
		}
		lg.WriteString(g + " " + s.name)
	}
	if c.hasLimit {
		lg.WriteString("   ")
		name := "┄ " + c.limitName
		if inexact {
			name += " (nearest step)"
		}
		lg.WriteString(st.threshold.on(name))
	}
	b.WriteByte('\n')
	b.WriteString(fitLine(lg.String(), c.width))
	return b.String()
}

// limitTop picks the top of a y axis, and its number of steps (at most
// rows), that put limit exactly on a step, so its label reads the limit,
// with room above for need: the lowest such top wins.
func limitTop(limit, need float64, rows int) (float64, int) {
	need = max(need, limit*1.2)
	if limit <= 0 || rows < 1 {
		return need, max(rows, 1)
	}
	bestTop, bestRows := math.Inf(1), rows
	for r := rows; r >= max(1, rows-2); r-- {
		for k := r; k >= 1; k-- {
			top := limit * float64(r) / float64(k)
			if top >= need*0.999 {
				if top < bestTop*0.999 {
					bestTop, bestRows = top, r
				}
				break
			}
		}
	}
	if math.IsInf(bestTop, 1) {
		// the limit is too far below the data to sit exactly on a step.
		return need, rows
	}
	return bestTop, bestRows
}

// Label formats of the charts' y axes.
func fmtRateLabel(v float64) string { return fmtRate(v) }
func fmtPctLabel(v float64) string {
	return strconv.FormatFloat(v*100, 'f', 0, 64) + "%"
}
func fmtMsLabel(v float64) string { return fmtMs(int64(math.Round(v))) }
