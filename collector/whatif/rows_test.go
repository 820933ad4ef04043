package whatif

import (
	"slices"
	"strings"
	"testing"
)

func TestDetectText(t *testing.T) {
	for _, c := range []struct {
		ms   []int64
		want string
	}{
		{nil, "none"},
		{[]int64{620, 669}, "620, 669"},
		{[]int64{4, 3, 2, 1}, "4, 3, 2, 1"},
		{[]int64{505, 312, 648, 400, 500}, "median 500 over 5 (312-648)"},
		{[]int64{1, 2, 3, 4, 5, 10}, "median 3 over 6 (1-10)"},
	} {
		if got := DetectText(c.ms); got != c.want {
			t.Errorf("DetectText(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
}

// TestRows: every measure side by side, a range only where its ends differ.
func TestRows(t *testing.T) {
	r := &Result{StepMs: 500, Outages: 2,
		Current:  Metrics{Trips: 2, OutagesCaught: 2, DetectMs: []int64{620, 669}, Probes: 20, PassedDuringOutage: Range{278, 307}, BlockedHealthy: Range{664, 664}},
		Proposed: Metrics{Trips: 2, LowConfidenceTrips: 1, OutagesCaught: 1, DetectMs: []int64{620}, Probes: 7, PassedDuringOutage: Range{265, 298}}}
	want := []Row{
		{"trips", "2", "2"},
		{"trips on fewer than 20 calls", "0", "1"},
		{"outages caught", "2 of 2", "1 of 2"},
		{"detected after (ms)", "620, 669", "620"},
		{"probes", "20", "7"},
		{"calls passed during outages", "278-307", "265-298"},
		{"healthy calls blocked", "664", "0"},
	}
	if got := r.Rows(); !slices.Equal(got, want) {
		t.Fatalf("rows\n got %q\nwant %q", got, want)
	}
	if got := r.Basis(); got != "replayed in 500 ms steps" {
		t.Errorf("basis %q", got)
	}
	r.StepMs, r.Estimated = 0, true
	if got := r.Basis(); !strings.HasPrefix(got, "no traffic bucket to replay; estimated: ") {
		t.Errorf("basis %q", got)
	}
}
