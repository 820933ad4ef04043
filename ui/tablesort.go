// The resource table's sort: the columns it sorts by, their order, and
// the hysteresis that holds the rows still while their values only wobble.

package ui

import (
	"cmp"
	"math"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// sortKey is a column the resource table can be sorted by.
type sortKey uint8

// The sort keys, in the order s cycles through them; the first is the
// default: the worst rows first. The resource and instance sorts came
// last, after the cycle users knew.
const (
	sortSeverity sortKey = iota
	sortBreakers
	sortPass
	sortBlock
	sortSlow
	sortError
	sortP99
	sortName
	sortResource
	sortInstances
	numSortKeys
)

var sortNames = [numSortKeys]string{"severity", "breakers", "pass/s", "block/s", "slow%", "err%", "p99", "name",
	"resource", "instances"}

func (k sortKey) String() string { return sortNames[k] }

// ascending reports whether k sorts smallest first (the names), rather
// than largest (worst) first.
func (k sortKey) ascending() bool { return k == sortName || k == sortResource }

// compareNames orders by app, then resource: the snapshot's order.
func compareNames(a, b *collector.ResourceRow) int {
	if c := cmp.Compare(a.App, b.App); c != 0 {
		return c
	}
	return cmp.Compare(a.Resource, b.Resource)
}

// compareResources orders by resource, then app.
func compareResources(a, b *collector.ResourceRow) int {
	if c := cmp.Compare(a.Resource, b.Resource); c != 0 {
		return c
	}
	return cmp.Compare(a.App, b.App)
}

// compareRows orders by k, on the live values: names ascending,
// everything else largest first. It is the order the table takes when
// it sorts afresh; between two snapshots the table compares held keys
// (orderKey) instead, which order as compareRows does.
func compareRows(a, b *collector.ResourceRow, k sortKey) int {
	num := func(x, y float64) int { return cmp.Compare(noNaN(y), noNaN(x)) }
	switch k {
	case sortSeverity:
		// the worst mark, then the most breakers not CLOSED (OPEN or
		// probing: a trip cycle keeps its count), then the states not
		// known, then the most blocked.
		as, aok := rowSeverity(a)
		bs, bok := rowSeverity(b)
		if aok != bok {
			if aok {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(bs, as); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Breakers.Open+b.Breakers.HalfOpen, a.Breakers.Open+a.Breakers.HalfOpen); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Breakers.Unknown, a.Breakers.Unknown); c != 0 {
			return c
		}
		return num(a.BlockQPS, b.BlockQPS)
	case sortBreakers:
		// then the states not known: any of them may be OPEN.
		return cmp.Or(cmp.Compare(b.Breakers.Open, a.Breakers.Open), cmp.Compare(b.Breakers.HalfOpen, a.Breakers.HalfOpen),
			cmp.Compare(b.Breakers.Unknown, a.Breakers.Unknown))
	case sortPass:
		return num(a.PassQPS, b.PassQPS)
	case sortBlock:
		return num(a.BlockQPS, b.BlockQPS)
	case sortSlow, sortError:
		// the ratios shown, then the rows showing "–" (nothing completed,
		// or slow calls not counted).
		ak, av := ratioKey(a, k)
		bk, bv := ratioKey(b, k)
		return cmp.Or(cmp.Compare(bk, ak), cmp.Compare(bv, av))
	case sortP99:
		// the p99s, then the averages of the sources without one, then
		// the rows where nothing completed.
		ak, av := latencyKey(a)
		bk, bv := latencyKey(b)
		return cmp.Or(cmp.Compare(bk, ak), cmp.Compare(bv, av))
	case sortInstances:
		return cmp.Compare(b.Instances, a.Instances)
	case sortResource:
		return compareResources(a, b)
	}
	return compareNames(a, b)
}

// latencyKey is what the P99 column shows, to sort by: its kind (2 a
// p99, 1 an average, 0 nothing) and its value.
func latencyKey(r *collector.ResourceRow) (kind int, v float64) {
	switch {
	case r.Completed == 0, r.RTUnknown:
		return 0, 0
	case r.HasP99:
		return 2, float64(r.P99Ms)
	}
	return 1, r.AvgRtMs
}

// ratioKey is what the SLOW% (k sortSlow) or ERR% column shows, to sort
// by: whether it shows a ratio (1) or "–" (0: nothing completed, or the
// source counts no slow calls), and the ratio.
func ratioKey(r *collector.ResourceRow, k sortKey) (kind int, v float64) {
	v = r.ErrorRatio
	if k == sortSlow {
		if r.SlowUnknown {
			return 0, 0
		}
		v = r.SlowRatio
	}
	if r.Completed == 0 {
		return 0, 0
	}
	return 1, noNaN(v)
}

// rowSeverity is a row's mark: its worst finding's severity, raised to a
// warning while one of its breakers is OPEN or HALF_OPEN (a breaker that
// tripped is never just information, and its probe is not a recovery:
// the mark holds through a trip cycle rather than blinking at each
// probe); ok is false for a row with neither.
func rowSeverity(r *collector.ResourceRow) (sev triage.Severity, ok bool) {
	sev, ok = r.Worst, r.HasFinding
	if r.Breakers.Open+r.Breakers.HalfOpen > 0 && (!ok || sev < triage.Warning) {
		return triage.Warning, true
	}
	return sev, ok
}

// noNaN puts a missing value below every other.
func noNaN(v float64) float64 {
	if math.IsNaN(v) {
		return -1
	}
	return v
}

// Stable rows. A table re-sorted on every snapshot by live values moves
// rows whose values only wobble: two rows at 110 and 116 pass/s swap at
// every second of noise, and a row's place among rows of one severity
// follows its breakers through every trip and probe. So the table orders
// rows by a key it holds for each row (orderKey): the exact part of the
// sort (a mark, counts of breakers or instances, the kind of a latency)
// and a value (a rate, a ratio, a latency). A row's held key is taken
// again from its live values only when they really change:
//
//   - by severity, when the row's mark changes (a finding's severity, a
//     breaker tripping with no finding); within a mark, rows keep their
//     places, placed by the breakers not CLOSED, then unknown, then the
//     block rate when they take the mark;
//   - by the other columns, when an exact part changes (a breaker count,
//     an instance count, a p99 where there was an average), or a value
//     leaves the band around the held one (holdBand): more than a quarter
//     of it, and at least 1/s for rates, 5 points for ratios, 5 ms for
//     latencies.
//
// Rows whose held keys are equal keep their name order. A new row takes
// its live key. Choosing a sort (s, r, the picker) sorts afresh by the
// live values. A row's values are always shown live: only its place waits
// for a real change. README's "Sorting and stable rows" says it for users.

// orderKey is what the table's order compares of a row for one sort:
// exact integers first, then a value held within a band; largest first.
type orderKey struct {
	n [3]int
	v float64
}

// compare orders a before b (-1) when a is the larger; values are never
// NaN (noNaN), so plain comparisons do, and the sort of every snapshot
// spends most of its time here.
func (a *orderKey) compare(b *orderKey) int {
	var x, y int
	switch {
	case a.n[0] != b.n[0]:
		x, y = a.n[0], b.n[0]
	case a.n[1] != b.n[1]:
		x, y = a.n[1], b.n[1]
	case a.n[2] != b.n[2]:
		x, y = a.n[2], b.n[2]
	case a.v > b.v:
		return -1
	case a.v < b.v:
		return 1
	default:
		return 0
	}
	if x > y {
		return -1
	}
	return 1
}

// newOrderKey is r's live key for k; the name sorts have none (zero).
func newOrderKey(r *collector.ResourceRow, k sortKey) orderKey {
	var o orderKey
	switch k {
	case sortSeverity:
		sev, ok := rowSeverity(r)
		o.n[0] = int(sev)
		if ok {
			o.n[0] += 1 << 16
		}
		o.n[1], o.n[2], o.v = r.Breakers.Open+r.Breakers.HalfOpen, r.Breakers.Unknown, noNaN(r.BlockQPS)
	case sortBreakers:
		o.n = [3]int{r.Breakers.Open, r.Breakers.HalfOpen, r.Breakers.Unknown}
	case sortPass:
		o.v = noNaN(r.PassQPS)
	case sortBlock:
		o.v = noNaN(r.BlockQPS)
	case sortSlow, sortError:
		o.n[0], o.v = ratioKey(r, k)
	case sortP99:
		o.n[0], o.v = latencyKey(r)
	case sortInstances:
		o.n[0] = r.Instances
	}
	return o
}

// holdBand is how far a value may move from its held one before it
// counts as a change, for sort k: the larger of a floor and a share of
// the held value.
func holdBand(k sortKey, held float64) float64 {
	const share = 0.25
	floor := 1.0 // rates: 1/s
	switch k {
	case sortSlow, sortError:
		floor = 0.05 // ratios: 5 points
	case sortP99:
		floor = 5 // ms
	}
	return max(floor, share*math.Abs(held))
}

// holds reports whether live is no real change from held for sort k: the
// same mark by severity; else the same exact part and a value inside the
// band.
func (held *orderKey) holds(live *orderKey, k sortKey) bool {
	if k == sortSeverity {
		return held.n[0] == live.n[0]
	}
	return held.n == live.n && math.Abs(live.v-held.v) <= holdBand(k, held.v)
}

// heldRow is a row's held key, by name.
type heldRow struct {
	app, res string
	key      orderKey
}

// heldOrder is the keys the table orders its rows by: for each row of
// the latest snapshot, its held key. It keeps the rows of that snapshot
// only (a row gone is forgotten), in name order, as the snapshot has them.
type heldOrder struct {
	sort  sortKey
	rows  []heldRow  // the latest snapshot's, in name order
	spare []heldRow  // the buffer of the previous rows, reused
	keys  []orderKey // by index of the rows given: the keys to sort by
}

// take sets the keys of rows (in name order) for sort k: a row keeps its
// held key while its live one holds it, and takes its live one if it is
// new, changed for real, or fresh is set (a sort chosen by the user).
func (h *heldOrder) take(rows []collector.ResourceRow, k sortKey, fresh bool) {
	old := h.rows
	if fresh || k != h.sort {
		old = old[:0]
	}
	h.sort = k
	next := h.spare[:0]
	h.keys = h.keys[:0]
	j := 0
	for i := range rows {
		r := &rows[i]
		key := newOrderKey(r, k)
		// both lists are in name order: walk the old one along, each
		// name compared once a step.
		c := -1
		for ; j < len(old); j++ {
			if c = strings.Compare(old[j].app, r.App); c == 0 {
				c = strings.Compare(old[j].res, r.Resource)
			}
			if c >= 0 {
				break
			}
		}
		if c == 0 && old[j].key.holds(&key, k) {
			key = old[j].key
		}
		h.keys = append(h.keys, key)
		next = append(next, heldRow{app: r.App, res: r.Resource, key: key})
	}
	// the old buffer, now spare, lets the names it held go.
	clear(h.rows[:cap(h.rows)])
	h.spare, h.rows = h.rows[:0], next
}
