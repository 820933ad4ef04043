// The resource table's sort: the columns it sorts by and their order.

package ui

import (
	"cmp"
	"math"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// sortKey is a column the resource table can be sorted by.
type sortKey uint8

// The sort keys, in the order s cycles through them; the first is the
// default: the worst rows first.
const (
	sortSeverity sortKey = iota
	sortBreakers
	sortPass
	sortBlock
	sortSlow
	sortError
	sortP99
	sortName
	numSortKeys
)

var sortNames = [numSortKeys]string{"severity", "breakers", "pass/s", "block/s", "slow%", "err%", "p99", "name"}

func (k sortKey) String() string { return sortNames[k] }

// compareNames orders by app, then resource.
func compareNames(a, b *collector.ResourceRow) int {
	if c := cmp.Compare(a.App, b.App); c != 0 {
		return c
	}
	return cmp.Compare(a.Resource, b.Resource)
}

// compareRows orders by k: names ascending, everything else largest first.
func compareRows(a, b *collector.ResourceRow, k sortKey) int {
	num := func(x, y float64) int { return cmp.Compare(noNaN(y), noNaN(x)) }
	switch k {
	case sortSeverity:
		// the worst mark, then the worst state, then the most blocked.
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
		if c := compareRows(a, b, sortBreakers); c != 0 {
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
	case sortSlow:
		return num(a.SlowRatio, b.SlowRatio)
	case sortError:
		return num(a.ErrorRatio, b.ErrorRatio)
	case sortP99:
		// the p99s, then the averages of the sources without one, then
		// the rows where nothing completed.
		ak, av := latencyKey(a)
		bk, bv := latencyKey(b)
		return cmp.Or(cmp.Compare(bk, ak), cmp.Compare(bv, av))
	}
	return compareNames(a, b)
}

// latencyKey is what the P99 column shows, to sort by: its kind (2 a
// p99, 1 an average, 0 nothing) and its value.
func latencyKey(r *collector.ResourceRow) (kind int, v float64) {
	switch {
	case r.Completed == 0:
		return 0, 0
	case r.HasP99:
		return 2, float64(r.P99Ms)
	}
	return 1, r.AvgRtMs
}

// rowSeverity is a row's mark: its worst finding's severity, raised to a
// warning while one of its breakers is OPEN (a breaker open is never just
// information); ok is false for a row with neither.
func rowSeverity(r *collector.ResourceRow) (sev triage.Severity, ok bool) {
	sev, ok = r.Worst, r.HasFinding
	if r.Breakers.Open > 0 && (!ok || sev < triage.Warning) {
		return triage.Warning, true
	}
	return sev, ok
}

// severityKey is what the severity order compares of a row, taken once
// per sort rather than at every comparison; compare orders as compareRows
// does for sortSeverity.
type severityKey struct {
	rank                int // a finding or a breaker OPEN first, then the severity
	open, half, unknown int
	block               float64
}

func newSeverityKey(r *collector.ResourceRow) severityKey {
	k := severityKey{open: r.Breakers.Open, half: r.Breakers.HalfOpen, unknown: r.Breakers.Unknown, block: noNaN(r.BlockQPS)}
	sev, ok := rowSeverity(r)
	k.rank = int(sev)
	if ok {
		k.rank += 1 << 16
	}
	return k
}

func (a *severityKey) compare(b *severityKey) int {
	switch {
	case a.rank != b.rank:
		return cmp.Compare(b.rank, a.rank)
	case a.open != b.open:
		return cmp.Compare(b.open, a.open)
	case a.half != b.half:
		return cmp.Compare(b.half, a.half)
	case a.unknown != b.unknown:
		return cmp.Compare(b.unknown, a.unknown)
	}
	return cmp.Compare(b.block, a.block)
}

// numericKey is the value a numeric sort (pass/s, block/s, slow%, err%)
// orders rows by, largest first, a missing one below every other; as
// compareRows orders them.
func numericKey(r *collector.ResourceRow, k sortKey) float64 {
	switch k {
	case sortPass:
		return noNaN(r.PassQPS)
	case sortBlock:
		return noNaN(r.BlockQPS)
	case sortSlow:
		return noNaN(r.SlowRatio)
	}
	return noNaN(r.ErrorRatio)
}

// noNaN puts a missing value below every other.
func noNaN(v float64) float64 {
	if math.IsNaN(v) {
		return -1
	}
	return v
}
