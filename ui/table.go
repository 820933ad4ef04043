package ui

import (
	"math"
	"slices"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
)

// colID names a column of the resource table.
type colID uint8

const (
	colMark colID = iota // cursor and the worst finding's severity
	colApp
	colResource
	colInstances
	colPass
	colBlock
	colSlow
	colError
	colP99
	colBreakers
	colTrend
)

type column struct {
	id    colID
	title string
	w     int
	right bool
	prio  int // columns with the lowest priority go first when narrow
	sort  sortKey
}

// allColumns in display order, with their natural widths.
var allColumns = []column{
	{id: colMark, title: " !", w: 3, prio: 100, sort: sortSeverity},
	{id: colApp, title: "APP", w: 4, prio: 90, sort: sortName},
	{id: colResource, title: "RESOURCE", w: 16, prio: 90, sort: numSortKeys},
	{id: colInstances, title: "INST", w: 4, right: true, prio: 40, sort: numSortKeys},
	{id: colPass, title: "PASS/S", w: 6, right: true, prio: 70, sort: sortPass},
	{id: colBlock, title: "BLOCK/S", w: 7, right: true, prio: 50, sort: sortBlock},
	{id: colSlow, title: "SLOW%", w: 5, right: true, prio: 55, sort: sortSlow},
	{id: colError, title: "ERR%", w: 5, right: true, prio: 45, sort: sortError},
	{id: colP99, title: "P99", w: 5, right: true, prio: 60, sort: sortP99},
	{id: colBreakers, title: "BREAKERS", w: 9, prio: 80, sort: sortBreakers},
	{id: colTrend, title: "TREND", w: 12, prio: 30, sort: numSortKeys},
}

const (
	minResourceW = 16
	maxAppW      = 16
	maxTrendW    = 30
)

// resourceTable is the main screen's list of app x resource rows. It keeps
// the snapshot's rows and an index of the visible ones (filtered, sorted);
// View renders only the rows that fit.
type resourceTable struct {
	st   *Styles
	keys *keyMap

	rows []collector.ResourceRow
	view []int // indices into rows, filtered and sorted

	sort    sortKey
	reverse bool
	filter  string // lower case
	lower   []string

	cur            cursor // over view
	selApp, selRes string // the selected row, kept across snapshots
	focused        bool

	width, height int
	cols          []column
	appW, digits  int
	empty         string // what an empty table says
}

func newResourceTable(st *Styles, keys *keyMap) resourceTable {
	return resourceTable{st: st, keys: keys, focused: true, digits: 1, empty: "no resources yet"}
}

// SetEmptyText sets what the table says when it has no row.
func (t resourceTable) SetEmptyText(s string) resourceTable { t.empty = s; return t }

// SetRows replaces the rows with a new snapshot's, keeping the selection.
func (t resourceTable) SetRows(rows []collector.ResourceRow) resourceTable {
	t.rows = rows
	t.lower = t.lower[:0]
	appW, d := 4, 1
	for i := range rows {
		r := &rows[i]
		appW = max(appW, width(sanitize(r.App)))
		d = max(d, digits(r.Breakers.Open), digits(r.Breakers.HalfOpen), digits(r.Breakers.Closed))
	}
	appW = min(appW, maxAppW)
	if appW != t.appW || d != t.digits {
		t.appW, t.digits = appW, d
		t = t.layout()
	}
	return t.rebuild()
}

// SetFilter keeps only the rows whose app or resource contains f (case
// insensitive).
func (t resourceTable) SetFilter(f string) resourceTable {
	f = strings.ToLower(f)
	if f == t.filter {
		return t
	}
	t.filter = f
	return t.rebuild()
}

// SetSort sorts by k, reversed or not.
func (t resourceTable) SetSort(k sortKey, reverse bool) resourceTable {
	t.sort, t.reverse = k%numSortKeys, reverse
	return t.rebuild()
}

// SetSize sets the table's size in cells, header line included.
func (t resourceTable) SetSize(w, h int) resourceTable {
	t.width, t.height = w, h
	t = t.layout()
	t.cur = t.cur.SetPage(max(1, h-1))
	return t
}

// Focus marks whether the table has the keyboard.
func (t resourceTable) Focus(on bool) resourceTable { t.focused = on; return t }

// Len is the number of rows shown (after the filter).
func (t resourceTable) Len() int { return len(t.view) }

// Cursor is the selected row's position among the rows shown.
func (t resourceTable) Cursor() int { return t.cur.Pos() }

// Selected returns the selected row.
func (t resourceTable) Selected() (collector.ResourceRow, bool) {
	i := t.cur.Pos()
	if i >= len(t.view) {
		return collector.ResourceRow{}, false
	}
	return t.rows[t.view[i]], true
}

// Update moves the cursor (keys and the mouse wheel).
func (t resourceTable) Update(msg tea.Msg) (resourceTable, tea.Cmd) {
	var moved bool
	if t.cur, moved = t.cur.Update(msg, t.keys); moved {
		t = t.remember()
	}
	return t, nil
}

func (t resourceTable) remember() resourceTable {
	if r, ok := t.Selected(); ok {
		t.selApp, t.selRes = r.App, r.Resource
	}
	return t
}

// rebuild filters and sorts the rows and finds the selected one again.
func (t resourceTable) rebuild() resourceTable {
	t.view = t.view[:0]
	if t.filter != "" && len(t.lower) != len(t.rows) {
		t.lower = t.lower[:0]
		for i := range t.rows {
			t.lower = append(t.lower, strings.ToLower(sanitize(t.rows[i].App)+" "+sanitize(t.rows[i].Resource)))
		}
	}
	for i := range t.rows {
		if t.filter != "" && !strings.Contains(t.lower[i], t.filter) {
			continue
		}
		t.view = append(t.view, i)
	}
	if t.sort != sortName || t.reverse {
		rows, k, rev := t.rows, t.sort, t.reverse
		slices.SortStableFunc(t.view, func(a, b int) int {
			c := compareRows(&rows[a], &rows[b], k)
			if rev {
				c = -c
			}
			if c != 0 {
				return c
			}
			return compareNames(&rows[a], &rows[b])
		})
	}
	// find the selection again
	t.cur = t.cur.SetCount(len(t.view))
	if t.selApp != "" || t.selRes != "" {
		for i, v := range t.view {
			if t.rows[v].App == t.selApp && t.rows[v].Resource == t.selRes {
				t.cur = t.cur.Select(i)
				break
			}
		}
	}
	return t.remember()
}

// layout picks the columns that fit the width.
func (t resourceTable) layout() resourceTable {
	cols := make([]column, 0, len(allColumns))
	for _, c := range allColumns {
		switch c.id {
		case colApp:
			c.w = t.appW
		case colBreakers:
			c.w = max(c.w, 3*(1+t.digits)+2)
		}
		cols = append(cols, c)
	}
	total := func() int {
		n := 0
		for _, c := range cols {
			if c.id == colResource {
				n += minResourceW
			} else {
				n += c.w
			}
		}
		return n + len(cols) - 1
	}
	for total() > t.width && len(cols) > 3 {
		low := -1
		for i, c := range cols {
			if c.prio < 90 && (low < 0 || c.prio < cols[low].prio) {
				low = i
			}
		}
		if low < 0 {
			break
		}
		cols = slices.Delete(cols, low, low+1)
	}
	// the resource column takes what is left, shared with the trend.
	spare := t.width - total()
	for i := range cols {
		if cols[i].id == colTrend && spare > 0 {
			grow := min(spare/2, maxTrendW-cols[i].w)
			cols[i].w += max(0, grow)
			spare -= max(0, grow)
		}
	}
	for i := range cols {
		if cols[i].id == colResource {
			cols[i].w = minResourceW + max(0, spare)
		}
	}
	t.cols = cols
	return t
}

// View renders the header line and the rows in sight.
func (t resourceTable) View() string {
	if t.width <= 0 || t.height <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow((t.width + 32) * t.height)
	t.header(&b)
	body := t.height - 1
	if len(t.view) == 0 && body > 0 {
		b.WriteByte('\n')
		msg := t.empty
		if t.filter != "" {
			msg = "no resource matches the filter (esc clears it)"
		}
		b.WriteString(t.st.dim.on(cut("   "+msg, t.width)))
		body--
	}
	first, sel := t.cur.Offset(), t.cur.Pos()
	end := min(len(t.view), first+body)
	for i := first; i < end; i++ {
		b.WriteByte('\n')
		t.row(&b, &t.rows[t.view[i]], i == sel)
	}
	for i := max(0, end-first); i < body; i++ {
		b.WriteByte('\n')
	}
	return b.String()
}

func (t resourceTable) header(b *strings.Builder) {
	var h strings.Builder
	for i, c := range t.cols {
		title := c.title
		sorted := c.sort == t.sort && c.sort != numSortKeys
		arrow := ""
		if sorted {
			arrow = "▼"
			if (t.sort == sortName) != t.reverse {
				arrow = "▲"
			}
		}
		switch {
		case c.right && sorted:
			// the arrow takes the separator's cell: "▼PASS/S".
			padLeft(&h, arrow+cut(title, c.w), c.w+1)
		case c.right:
			h.WriteByte(' ')
			padLeft(&h, cut(title, c.w), c.w)
		default:
			if i > 0 {
				h.WriteByte(' ')
			}
			padRight(&h, cut(title+arrow, c.w), c.w)
		}
	}
	b.WriteString(t.st.bold.on(fitLine(h.String(), t.width)))
}

// row renders one resource. The selected row is painted as a whole, so
// its cells carry no colour of their own.
func (t resourceTable) row(b *strings.Builder, r *collector.ResourceRow, selected bool) {
	st := t.st
	var line strings.Builder
	line.Grow(t.width + 64)
	p := func(pt paint) paint {
		if selected {
			return paint{}
		}
		return pt
	}
	used := 0
	for i, c := range t.cols {
		if i > 0 {
			line.WriteByte(' ')
			used++
		}
		switch c.id {
		case colMark:
			if selected {
				line.WriteString(glyphCursor)
			} else {
				line.WriteByte(' ')
			}
			if r.HasFinding {
				p(st.sevPaint(r.Worst)).write(&line, sevMark(r.Worst))
			} else {
				line.WriteString("  ")
			}
		case colApp:
			padRight(&line, safeName(r.App, c.w), c.w)
		case colResource:
			padRight(&line, safeName(r.Resource, c.w), c.w)
		case colInstances:
			padLeft(&line, strconv.Itoa(r.Instances), c.w)
		case colPass:
			padLeft(&line, fmtRate(r.PassQPS), c.w)
		case colBlock:
			s := fmtRate(r.BlockQPS)
			if r.BlockQPS > 0 {
				s = p(st.warn).on(s)
			}
			padLeft(&line, s, c.w)
		case colSlow:
			padLeft(&line, fmtPct(r.SlowRatio), c.w)
		case colError:
			padLeft(&line, fmtPct(r.ErrorRatio), c.w)
		case colP99:
			padLeft(&line, fmtMs(r.P99Ms), c.w)
		case colBreakers:
			t.breakers(&line, r, c.w, p)
		case colTrend:
			sparkline(&line, r.Trend, c.w)
		}
		used += c.w
	}
	s := line.String()
	if used < t.width {
		s += strings.Repeat(" ", t.width-used)
	}
	if selected && t.focused {
		s = st.selected.on(s)
	}
	b.WriteString(s)
}

// breakers renders the instance counts per state, "✖3 ◐1 ●4", with a
// blank slot for a zero count so the columns line up.
func (t resourceTable) breakers(b *strings.Builder, r *collector.ResourceRow, w int, p func(paint) paint) {
	switch {
	case r.Instances == 0:
		padRight(b, "gone", w) // every instance left: no state to count
		return
	case !r.HasBreaker:
		padRight(b, "no rule", w)
		return
	}
	slot := 1 + t.digits
	n := 0
	write := func(g string, count int, pt paint) {
		if n > 0 {
			b.WriteByte(' ')
		}
		n++
		if count == 0 {
			b.WriteString(strings.Repeat(" ", slot))
			return
		}
		s := strconv.Itoa(count)
		p(pt).write(b, g+s)
		b.WriteString(strings.Repeat(" ", slot-1-len(s)))
	}
	write(glyphOpen, r.Breakers.Open, t.st.open)
	write(glyphHalf, r.Breakers.HalfOpen, t.st.half)
	write(glyphClosed, r.Breakers.Closed, t.st.closed)
	for used := 3*slot + 2; used < w; used++ {
		b.WriteByte(' ')
	}
}

var sparks = [...]string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

// sparkline renders the newest w values of vs, right-aligned, scaled to
// their maximum; one cell per value, nothing interpolated.
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
		i := 0
		if hi > 0 && v > 0 {
			i = int(math.Ceil(v/hi*float64(len(sparks)))) - 1
			i = max(0, min(i, len(sparks)-1))
		}
		b.WriteString(sparks[i])
	}
}

func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}
