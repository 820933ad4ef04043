package ui

import (
	"strings"
	"testing"
)

// TestSpanTextNeverNegative: the status bar's replay position and length
// for a recording stamped from 1970 to the year 9999, and a position
// before the start, print no negative or overflowed span.
func TestSpanTextNeverNegative(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want string
	}{{-1500, "0s"}, {0, "0s"}, {72_000, "1m12s"}, {5_400_000, "1h30m"}} {
		if got := fmtSpanMs(c.ms); got != c.want {
			t.Errorf("fmtSpanMs(%d) = %q, want %q", c.ms, got, c.want)
		}
	}
	if got := fmtSpanMs(253402300799999); strings.HasPrefix(got, "-") || !strings.HasPrefix(got, "2562047h") {
		t.Errorf("fmtSpanMs(year 9999) = %q, want the longest span a time.Duration holds, 2562047h...", got)
	}
}
