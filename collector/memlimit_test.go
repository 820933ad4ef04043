package collector

import (
	"runtime/debug"
	"testing"
)

// The runtime's soft memory limit follows the collector's budget (7/8 of
// it), is put back by restore, and is left to GOMEMLIMIT when that is set.
func TestFollowBudget(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Setenv("GOMEMLIMIT", "")
	restore := FollowBudget(1 << 30)
	if got := debug.SetMemoryLimit(-1); got != 1<<30/8*7 {
		t.Errorf("limit %d under a 1 GiB budget, want %d", got, 1<<30/8*7)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d after, want %d back", got, before)
	}
	t.Setenv("GOMEMLIMIT", "4GiB")
	restore = FollowBudget(1 << 30)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d with GOMEMLIMIT set, want %d untouched", got, before)
	}
	restore()
}
