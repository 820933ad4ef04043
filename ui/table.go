package ui

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

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

// allColumns in display order, with their natural widths: a sorted
// column's arrow follows its title inside the column ("PASS/S▼").
var allColumns = []column{
	{id: colMark, title: " !", w: 3, prio: 100, sort: sortSeverity},
	{id: colApp, title: "APP", w: 4, prio: 90, sort: sortName},
	{id: colResource, title: "RESOURCE", w: 16, prio: 90, sort: numSortKeys},
	{id: colInstances, title: "INST", w: 4, right: true, prio: 40, sort: numSortKeys},
	{id: colPass, title: "PASS/S", w: 7, right: true, prio: 70, sort: sortPass},
	{id: colBlock, title: "BLOCK/S", w: 8, right: true, prio: 65, sort: sortBlock},
	{id: colSlow, title: "SLOW%", w: 6, right: true, prio: 55, sort: sortSlow},
	{id: colError, title: "ERR%", w: 5, right: true, prio: 45, sort: sortError},
	{id: colP99, title: "P99", w: 5, right: true, prio: 60, sort: sortP99},
	{id: colBreakers, title: "BREAKERS", w: 9, prio: 80, sort: sortBreakers},
	{id: colTrend, title: "TREND", w: 12, prio: 30, sort: numSortKeys},
}

const (
	maxAppW = 16
	// the resource column's least width: enough at 80 columns for a URL's
	// host and path tail ("member-service…/user/info").
	minResourceW, maxMinResourceW = 16, 24
)

// resourceTable is the main screen's list of app x resource rows. It keeps
// the snapshot's rows and an index of the visible ones (filtered, sorted);
// View renders only the rows that fit.
type resourceTable struct {
	st   *Styles
	keys *keyMap

	rows []collector.ResourceRow
	view []int         // indices into rows, filtered and sorted
	sev  []severityKey // rows' severity sort keys, taken once per sort
	num  []float64     // rows' values of a numeric sort, taken once per sort

	sort    sortKey
	reverse bool
	filter  string // lower case
	lower   []string

	cur            cursor // over view
	selApp, selRes string // the selected row, kept across snapshots
	moved          bool   // the user moved the cursor: until then it stays on the worst row
	focused        bool

	width, height int
	cols          []column
	appW, digits  int
	resW          int    // the widest resource name
	empty         string // what an empty table says
	marks         breakerMarks
	latW          int // the P99 column's widest cell

	trend *trends // the TREND column's data
	tg    grid    // its grid, over rng
	rng   time.Duration
}

func newResourceTable(st *Styles, keys *keyMap, tr *trends) resourceTable {
	return resourceTable{st: st, keys: keys, focused: true, digits: 1, empty: "no resources yet", trend: tr, rng: DefaultRange}
}

// SetEmptyText sets what the table says when it has no row.
func (t resourceTable) SetEmptyText(s string) resourceTable { t.empty = s; return t }

// SetRows shows a snapshot's rows, keeping the selection; its breakers
// tell which states were inferred.
func (t resourceTable) SetRows(snap *collector.Snapshot) resourceTable {
	rows := snap.Rows
	t.rows = rows
	t.lower = t.lower[:0]
	appW, d, resW, latW := 4, 1, 0, 0
	marks := newBreakerMarks(snap.Breakers)
	noDataW := width(noData)
	for i := range rows {
		r := &rows[i]
		appW = max(appW, width(sanitize(r.App)))
		resW = max(resW, width(sanitize(r.Resource)))
		d = max(d, digits(r.Breakers.Open), digits(r.Breakers.HalfOpen), digits(r.Breakers.Closed), digits(r.Breakers.Unknown))
		marks.note(r)
		if r.Completed == 0 {
			latW = max(latW, noDataW)
		} else {
			latW = max(latW, len(latencyCell(r))) // digits and a unit: ASCII
		}
	}
	appW = min(appW, maxAppW)
	if appW != t.appW || d != t.digits || resW != t.resW || latW != t.latW || !marks.sameLayout(t.marks) {
		t.appW, t.digits, t.resW, t.latW = appW, d, resW, latW
		t.marks = marks
		t = t.layout()
	}
	t.marks = marks
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

// SetTrend sets the TREND's range and the time its grid ends at.
func (t resourceTable) SetTrend(rng time.Duration, to int64) resourceTable {
	t.rng = rng
	for _, c := range t.cols {
		if c.id == colTrend {
			t.tg = t.trend.grid(to, rng, c.w)
		}
	}
	return t
}

// TrendGrid is the TREND's grid; ok is false when the column is not shown.
func (t resourceTable) TrendGrid() (grid, bool) {
	for _, c := range t.cols {
		if c.id == colTrend {
			return t.tg, true
		}
	}
	return grid{}, false
}

// AppendInSight appends the rows in sight to dst.
func (t resourceTable) AppendInSight(dst []rowKey) []rowKey {
	from := t.cur.Offset()
	to := min(len(t.view), from+max(0, t.height-1))
	for _, v := range t.view[from:to] {
		dst = append(dst, rowKey{t.rows[v].App, t.rows[v].Resource})
	}
	return dst
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
		t.moved = true
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
		// The names break every tie (a row is one app x resource), so the
		// order is total and needs no stable sort; the snapshot's rows come
		// in name order, so a row's index is its place by name.
		rows, k, rev := t.rows, t.sort, t.reverse
		cmpRows := func(a, b int) int { return compareRows(&rows[a], &rows[b], k) }
		switch k {
		case sortSeverity:
			t.sev = t.sev[:0]
			for i := range rows {
				t.sev = append(t.sev, newSeverityKey(&rows[i]))
			}
			sev := t.sev
			cmpRows = func(a, b int) int { return sev[a].compare(&sev[b]) }
		case sortPass, sortBlock, sortSlow, sortError:
			t.num = t.num[:0]
			for i := range rows {
				t.num = append(t.num, numericKey(&rows[i], k))
			}
			num := t.num
			cmpRows = func(a, b int) int { return cmp.Compare(num[b], num[a]) }
		}
		slices.SortFunc(t.view, func(a, b int) int {
			c := cmpRows(a, b)
			if rev {
				c = -c
			}
			if c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
	}
	// find the selection again, or stay on the first (worst) row until the
	// user moves.
	t.cur = t.cur.SetCount(len(t.view))
	if !t.moved {
		t.cur = t.cur.Top()
	} else if t.selApp != "" || t.selRes != "" {
		for i, v := range t.view {
			if t.rows[v].App == t.selApp && t.rows[v].Resource == t.selRes {
				t.cur = t.cur.Select(i)
				break
			}
		}
	}
	return t.remember()
}

// layout picks the columns that fit the width, dropping the least
// important first; the resource column gets up to its widest name, and the
// TREND what is left.
func (t resourceTable) layout() resourceTable {
	minRes := max(minResourceW, min(maxMinResourceW, t.width*3/10))
	cols := make([]column, 0, len(allColumns))
	for _, c := range allColumns {
		switch c.id {
		case colApp:
			c.w = t.appW
		case colResource:
			c.w = minRes
		case colBreakers:
			c.w = max(c.w, t.breakersWidth())
		case colP99:
			c.w = max(c.w, t.latW)
		}
		cols = append(cols, c)
	}
	total := func() int {
		n := len(cols) - 1
		for _, c := range cols {
			n += c.w
		}
		return n
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
	spare := max(0, t.width-total())
	for i := range cols {
		if cols[i].id == colResource {
			// up to its widest name, and a third of the width: the rest
			// goes to the TREND.
			grow := min(spare, max(0, min(t.resW, t.width/3)-cols[i].w))
			cols[i].w += grow
			spare -= grow
		}
	}
	for i := range cols {
		if cols[i].id == colTrend {
			cols[i].w += spare
			spare = 0
		}
	}
	for i := range cols {
		if cols[i].id == colResource {
			cols[i].w += spare // no TREND: the names take the rest
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
		if i > 0 {
			h.WriteByte(' ')
		}
		title := c.title
		switch {
		case c.id == colTrend:
			title += " " + fmtSpan(t.rng)
			if c.w >= width(title)+len(" pass/s") {
				title += " pass/s"
			}
		case c.sort == t.sort:
			if (t.sort == sortName) != t.reverse {
				title += "▲"
			} else {
				title += "▼"
			}
		}
		title = cut(title, c.w)
		if c.right {
			padLeft(&h, title, c.w)
		} else {
			padRight(&h, title, c.w)
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
			line.WriteString(strings.TrimSuffix(listMark(selected, t.focused), " "))
			if sev, ok := rowSeverity(r); ok {
				p(st.sevPaint(sev)).write(&line, sevMark(sev))
			} else {
				line.WriteString("  ")
			}
		case colApp:
			padRight(&line, safeName(r.App, c.w), c.w)
		case colResource:
			padRight(&line, resourceName(r.Resource, c.w), c.w)
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
			slow := ifCompleted(r, fmtPct(r.SlowRatio))
			if r.SlowUnknown {
				slow = "–" // the source counts no slow calls
			}
			padLeft(&line, slow, c.w)
		case colError:
			padLeft(&line, ifCompleted(r, fmtPct(r.ErrorRatio)), c.w)
		case colP99:
			padLeft(&line, latencyCell(r), c.w)
		case colBreakers:
			t.breakers(&line, r, c.w, p)
		case colTrend:
			sparkline(&line, t.trend.cells(rowKey{r.App, r.Resource}, t.tg), c.w)
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
