package ui

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

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

// keepPrio is the priority of the columns that never go for want of width:
// the mark, APP (it goes only when one app is shown, named in the header
// instead) and RESOURCE.
const keepPrio = 100

// allColumns in display order, with their natural widths. A sortable
// column's title has a cell beside it for the sort arrow, blank when the
// column is not the sort, so the titles never move when the sort does: on
// the side away from the column's alignment ("▼PASS/S", "APP▲"), and
// every width leaves it room.
//
// As the width shrinks, the columns go in this order, first the first:
// TREND, INST, P99, ERR%, SLOW%, PASS/S, BLOCK/S, BREAKERS. The trend and
// the fleet's size are there at a glance on the detail screen; the
// latency explains a slow ratio; what the breakers and flow rules do
// (blocks, states) stays longest. Before them all goes SLOW% when no row
// shown can have it (Java Sentinel and metric logs count no slow calls).
// The README's dashboard section says the
// same; TestColumnsDropInPriorityOrder checks it.
var allColumns = []column{
	{id: colMark, title: " !", w: 3, prio: keepPrio, sort: sortSeverity},
	{id: colApp, title: "APP", w: 4, prio: keepPrio, sort: sortName},
	{id: colResource, title: "RESOURCE", w: 16, prio: keepPrio, sort: sortResource},
	{id: colInstances, title: "INST", w: 5, right: true, prio: 20, sort: sortInstances},
	{id: colPass, title: "PASS/S", w: 7, right: true, prio: 60, sort: sortPass},
	{id: colBlock, title: "BLOCK/S", w: 8, right: true, prio: 70, sort: sortBlock},
	{id: colSlow, title: "SLOW%", w: 6, right: true, prio: 50, sort: sortSlow},
	{id: colError, title: "ERR%", w: 5, right: true, prio: 40, sort: sortError},
	{id: colP99, title: "P99", w: 5, right: true, prio: 30, sort: sortP99},
	{id: colBreakers, title: "BREAKERS", w: 9, prio: 80, sort: sortBreakers},
	{id: colTrend, title: "TREND", w: 12, prio: 10, sort: numSortKeys},
}

const (
	// the APP column's width before and after it takes spare width.
	maxAppW, maxWideAppW = 16, 32
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
	view []int     // indices into rows, filtered and sorted
	held heldOrder // the keys the rows are sorted by, held across snapshots

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
	empty         string // what an empty table says
	marks         breakerMarks
	latW          int // the P99 column's widest cell

	hidden colSet // the columns the user hid (the column chooser)
	blank  colSet // the columns no row shown can fill ("–"): they go first
	// the names of the rows shown: the widest, whether they are all of
	// one app (oneApp, the APP column then goes and the header names it),
	// the prefix they share and the widest without it ("…" and the rest).
	resW, stripW int
	oneApp       string
	prefix       string
	strip        bool     // the names are shown without the prefix
	names        []string // scratch: the sanitized names shown

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
	d, latW := 1, 0
	marks := newBreakerMarks(snap.Breakers)
	noDataW := width(noData)
	for i := range rows {
		r := &rows[i]
		d = max(d, digits(r.Breakers.Open), digits(r.Breakers.HalfOpen), digits(r.Breakers.Closed), digits(r.Breakers.Unknown))
		marks.note(r)
		if r.Completed == 0 {
			latW = max(latW, noDataW)
		} else {
			latW = max(latW, len(latencyCell(r))) // digits and a unit: ASCII
		}
	}
	if d != t.digits || latW != t.latW || !marks.sameLayout(t.marks) {
		t.digits, t.latW = d, latW
		t.marks = marks
		t = t.layout()
	}
	t.marks = marks
	t.held.take(rows, t.sort, false)
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

// SetSort sorts by k, reversed or not, afresh: by the rows' live values,
// whatever the keys held.
func (t resourceTable) SetSort(k sortKey, reverse bool) resourceTable {
	t.sort, t.reverse = k%numSortKeys, reverse
	t.held.take(t.rows, t.sort, true)
	return t.rebuild()
}

// Sort is the column the rows are sorted by, and whether reversed.
func (t resourceTable) Sort() (sortKey, bool) { return t.sort, t.reverse }

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
			t.lower = append(t.lower, filterKey(t.rows[i].App, t.rows[i].Resource))
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
		// in name order, so a row's index is its place by name. Every
		// other order compares the keys held (tablesort.go).
		rows, keys, rev := t.rows, t.held.keys, t.reverse
		cmpRows := func(a, b int) int { return keys[a].compare(&keys[b]) }
		switch t.sort {
		case sortName:
			cmpRows = func(a, b int) int { return cmp.Compare(a, b) }
		case sortResource:
			cmpRows = func(a, b int) int { return compareResources(&rows[a], &rows[b]) }
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
	t = t.measure()
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

// measure takes the measures of the rows shown that the layout follows:
// the widest app and name, whether the rows are all of one app, the prefix
// their names share and the widest name without it; it lays the columns
// out again when one changed.
func (t resourceTable) measure() resourceTable {
	appW, resW, stripW, oneApp := 4, 0, 0, ""
	// SLOW% is blank when no source of the rows counts slow calls: what
	// a source cannot tell does not come and go with the traffic, so the
	// column does not either (ERR% and P99, blank while nothing completes,
	// keep their place).
	blank := colSet(1 << colSlow)
	t.names = t.names[:0]
	for k, v := range t.view {
		r := &t.rows[v]
		if !r.SlowUnknown {
			blank = 0
		}
		appW = max(appW, width(sanitize(r.App)))
		switch {
		case k == 0:
			oneApp = r.App
		case r.App != oneApp:
			oneApp = ""
		}
		n := sanitize(r.Resource)
		resW = max(resW, width(n))
		t.names = append(t.names, n)
	}
	if len(t.view) == 0 {
		oneApp, blank = "", 0
	}
	prefix := commonPrefix(t.names)
	if prefix != "" {
		for _, n := range t.names {
			stripW = max(stripW, 1+width(n[len(prefix):]))
		}
	}
	if appW != t.appW || resW != t.resW || stripW != t.stripW || oneApp != t.oneApp || prefix != t.prefix || blank != t.blank {
		t.appW, t.resW, t.stripW, t.oneApp, t.prefix, t.blank = appW, resW, stripW, oneApp, prefix, blank
		t = t.layout()
	}
	return t
}

// layout picks the columns that fit the width, dropping the least
// important first (allColumns tells the order) and those the user hid;
// the APP column goes when the rows shown are all of one app. The spare
// width goes to the names up to the widest (without the prefix the rows
// share when they do not fit whole), then to the TREND, then to the
// names again: every line fills the width.
func (t resourceTable) layout() resourceTable {
	minRes := max(minResourceW, min(maxMinResourceW, t.width*3/10))
	cols := make([]column, 0, len(allColumns))
	for _, c := range allColumns {
		if c.prio < keepPrio && t.hidden.has(c.id) || c.id == colApp && (t.oneApp != "" || t.hidden.has(c.id)) {
			continue
		}
		if t.blank.has(c.id) {
			c.prio = 0 // nothing to say: the first to go
		}
		switch c.id {
		case colApp:
			c.w = min(t.appW, maxAppW)
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
	for total() > t.width {
		low := -1
		for i, c := range cols {
			if c.prio < keepPrio && (low < 0 || c.prio < cols[low].prio) {
				low = i
			}
		}
		if low < 0 {
			break
		}
		cols = slices.Delete(cols, low, low+1)
	}
	spare := max(0, t.width-total())
	trend := slices.ContainsFunc(cols, func(c column) bool { return c.id == colTrend })
	t.strip = false
	for i := range cols {
		if cols[i].id == colResource {
			// beside a TREND, up to half the width
			// the names whole if they fit, else without their shared
			// prefix if that makes them fit, else each elided.
			most := cols[i].w + spare
			if trend {
				most = max(cols[i].w, min(most, t.width/2))
			}
			need := max(t.resW, t.titleW(false))
			if need > most && t.prefix != "" && t.stripW <= most {
				need = t.stripW
			}
			grow := min(spare, max(0, min(need, most)-cols[i].w))
			cols[i].w += grow
			spare -= grow
			t.strip = cols[i].w < t.resW && t.prefix != "" && cols[i].w >= t.stripW
		}
	}
	for i := range cols {
		if cols[i].id == colApp { // after the names
			grow := min(spare, max(0, min(t.appW, maxWideAppW)-cols[i].w))
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

// titleW is the width the RESOURCE column's header takes with its
// context (stripped: with the prefix the rows leave out).
func (t resourceTable) titleW(stripped bool) int {
	w := width(allColumns[colResource].title)
	if t.oneApp != "" {
		w += 2 + width(sanitize(t.oneApp))
	}
	if stripped {
		w += 2 + width(t.prefix) + 1 // "  priceService:…"
		if t.oneApp != "" {
			w++ // "  order · priceService:…"
		}
	}
	return w
}

// resourceTitle is the RESOURCE column's title in w cells with what it
// says of all the rows: the one app they belong to, and the prefix their
// names share when the rows leave it out ("RESOURCE  order · priceService:…"),
// the prefix first to go when they do not fit.
func (t resourceTable) resourceTitle(title string, w int) string {
	if note := t.sortNote(); note != "" {
		// the sort's column is not on screen: said here, first
		long := "sorted by " + note
		if width(title)+2+width(long) <= w {
			note = long
		}
		title += "  " + note
	}
	app := ""
	if t.oneApp != "" {
		app = "  " + sanitize(t.oneApp)
	}
	if t.strip {
		sep := "  "
		if app != "" {
			sep = " · "
		}
		s := title + app + sep
		if room := w - width(s) - 1; room >= min(8, width(t.prefix)) {
			return s + elide(t.prefix, room) + "…"
		}
	}
	return title + app
}

// sortNote is the sort and its arrow ("slow% ▼") when no column on
// screen shows them: the sort's column hidden in the column chooser, left
// out for want of width, or too narrow for its arrow; "" when the arrow
// is on screen.
func (t resourceTable) sortNote() string {
	for _, c := range t.cols {
		if c.id != colTrend && c.sort == t.sort && width(c.title) < c.w {
			return ""
		}
	}
	arrow := "▼"
	if t.sort.ascending() != t.reverse {
		arrow = "▲"
	}
	return t.sort.String() + " " + arrow
}

// resourceCell is a row's name in w cells: when the names do not fit
// whole, what follows the prefix they share whole, after as much of the
// prefix's head as fits ("gateway/pri…queryPrice"); else its
// distinguishing end kept (resourceName).
func (t resourceTable) resourceCell(name string, w int) string {
	if t.strip {
		if s := sanitize(name); strings.HasPrefix(s, t.prefix) && width(s) > w {
			rest := s[len(t.prefix):]
			if headW := w - 1 - width(rest); headW > 0 {
				return padCells(ansi.Truncate(t.prefix, headW, "")+"…"+rest, w)
			}
			return elideKeepTail("…"+rest, w)
		}
	}
	return resourceName(name, w)
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
		case c.sort < numSortKeys && width(title) < c.w:
			// the title and the arrow's cell, written in place: no
			// string made per column and frame.
			arrow := " "
			switch {
			case c.sort != t.sort:
			case t.sort.ascending() != t.reverse:
				arrow = "▲"
			default:
				arrow = "▼"
			}
			if c.right {
				padLeft(&h, "", c.w-width(title)-1)
				h.WriteString(arrow)
				h.WriteString(title)
			} else {
				rest := ""
				if c.id == colResource { // the app and the prefix the names share
					// its first blank is the arrow's cell
					rest = strings.TrimPrefix(t.resourceTitle(title, c.w)[len(title):], " ")
				}
				h.WriteString(title)
				h.WriteString(arrow)
				if rest != "" {
					rest = cut(rest, c.w-width(title)-1)
					h.WriteString(rest)
				}
				padRight(&h, "", c.w-width(title)-1-width(rest))
			}
			continue
		}
		if c.id == colResource {
			title = t.resourceTitle(title, c.w)
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
			padRight(&line, t.resourceCell(r.Resource, c.w), c.w)
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
