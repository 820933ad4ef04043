package ui

import (
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"github.com/sentinel-top/sentinel-top/collector"
)

// TestHeaderShowsWhatTheMemoryBudgetRefused: what the memory budget
// refused the targets is counted in the header, naming the target refused
// most, sanitized.
func TestHeaderShowsWhatTheMemoryBudgetRefused(t *testing.T) {
	sb := newStatusBar(newStyles(termenv.Ascii), nil)
	snap := &collector.Snapshot{MemoryShares: []collector.MemoryShare{
		{Target: "10.0.0.7:8720", Used: 1 << 20, Refused: 0},
		{Target: "evil:1\x1b[2J", Used: 100 << 20, Refused: 1234},
		{Target: "10.0.0.9:8720", Used: 1 << 20, Refused: 6},
	}}
	sb = sb.SetSnapshot(snap, snap, false)
	got := sb.counts()
	if !strings.Contains(got, "1,240 refused by --max-memory, 1,234 of them evil:1") {
		t.Fatalf("header %q", got)
	}
	if strings.Contains(got, "\x1b") {
		t.Fatalf("header not sanitized: %q", got)
	}
	sb = sb.SetSnapshot(&collector.Snapshot{MemoryShares: snap.MemoryShares[:1]}, snap, false)
	if got := sb.counts(); strings.Contains(got, "refused") {
		t.Fatalf("nothing refused, yet the header says %q", got)
	}
}
