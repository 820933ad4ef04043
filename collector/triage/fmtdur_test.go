package triage

import "testing"

// TestFmtDurNeverNegative: a span whose end is before its start (a peer's
// clock went back) is worded as lasting 0 ms, not a negative time.
func TestFmtDurNeverNegative(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want string
	}{{-2500, "0 ms"}, {0, "0 ms"}, {999, "999 ms"}, {12_345, "12.3 s"}} {
		if got := fmtDur(c.ms); got != c.want {
			t.Errorf("fmtDur(%d) = %q, want %q", c.ms, got, c.want)
		}
	}
}
