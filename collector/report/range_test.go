package report

import (
	"strings"
	"testing"
)

// TestRangeTextNeverNegativeAndBounded: the header's range and duration
// for a range of 8,000 years (what a year-9999 stamp made of it), one whose
// end is before its start, and an ordinary one; and Bound keeps a live
// report's range within its watch.
func TestRangeTextNeverNegativeAndBounded(t *testing.T) {
	const year9999 = 253402300799999
	for _, c := range []struct {
		from, to int64
		want     string
	}{
		{0, year9999, "1970-01-01 00:00:00.000 UTC to 9999-12-31 23:59:59.999 UTC (70389527h)"},
		{1764460810000, 1764460800000, "2025-11-30 00:00:10.000 UTC to 00:00:10.000 UTC (0s)"},
		{1764460800000, 1764460812500, "2025-11-30 00:00:00.000 UTC to 00:00:12.500 UTC (12.5s)"},
	} {
		if got := fmtRange(c.from, c.to); got != c.want {
			t.Errorf("fmtRange(%d, %d) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
	if got := fmtDur(-1500); got != "0s" || strings.Contains(fmtDur(year9999), "-") {
		t.Errorf("fmtDur(-1500) = %q, fmtDur(year 9999) = %q", got, fmtDur(year9999))
	}
	for _, c := range []struct{ from, to, lo, hi, wantFrom, wantTo int64 }{
		{0, year9999, 1000, 5000, 1000, 5000},  // stretched both ways: the watch
		{2000, 3000, 1000, 5000, 2000, 3000},   // inside: as it was
		{9000, 9500, 1000, 5000, 5000, 5000},   // wholly after: its nearer end
		{100, 200, 1000, 5000, 1000, 1000},     // wholly before
		{2000, 90_000, 1000, 5000, 2000, 5000}, // a peer ahead
		{2000, 3000, 5000, 1000, 2000, 3000},   // no watch to bound by
	} {
		r := &Report{From: c.from, To: c.to}
		r.Bound(c.lo, c.hi)
		if r.From != c.wantFrom || r.To != c.wantTo {
			t.Errorf("%d..%d bound to %d..%d: %d..%d, want %d..%d", c.from, c.to, c.lo, c.hi, r.From, r.To, c.wantFrom, c.wantTo)
		}
	}
}
