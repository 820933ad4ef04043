// The resource table's sort: the columns it sorts by and their order.

package ui

import (
	"cmp"
	"math"

	"github.com/sentinel-top/sentinel-top/collector"
)

// sortKey is a column the resource table can be sorted by.
type sortKey uint8

// The sort keys, in the order s cycles through them.
const (
	sortName sortKey = iota
	sortSeverity
	sortBreakers
	sortPass
	sortBlock
	sortSlow
	sortError
	sortP99
	numSortKeys
)

var sortNames = [numSortKeys]string{"name", "severity", "breakers", "pass/s", "block/s", "slow%", "err%", "p99"}

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
		if a.HasFinding != b.HasFinding {
			if a.HasFinding {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.Worst, a.Worst)
	case sortBreakers:
		if c := cmp.Compare(b.Breakers.Open, a.Breakers.Open); c != 0 {
			return c
		}
		return cmp.Compare(b.Breakers.HalfOpen, a.Breakers.HalfOpen)
	case sortPass:
		return num(a.PassQPS, b.PassQPS)
	case sortBlock:
		return num(a.BlockQPS, b.BlockQPS)
	case sortSlow:
		return num(a.SlowRatio, b.SlowRatio)
	case sortError:
		return num(a.ErrorRatio, b.ErrorRatio)
	case sortP99:
		return cmp.Compare(b.P99Ms, a.P99Ms)
	}
	return compareNames(a, b)
}

// noNaN puts a missing value below every other.
func noNaN(v float64) float64 {
	if math.IsNaN(v) {
		return -1
	}
	return v
}
