package collector

import (
	"os"
	"runtime/debug"
)

// FollowBudget sets the Go runtime's soft memory limit to 7/8 of a
// collector's memory budget (Options.MaxMemory), unless GOMEMLIMIT sets
// it, and returns what puts the limit back. The budget bounds the live
// data peers make the collector keep; without the limit, the collector's
// garbage could double the process's size. The limit is the process's:
// a command calls it once, for the collector it runs.
func FollowBudget(budget int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(budget / 8 * 7)
	return func() { debug.SetMemoryLimit(prev) }
}
