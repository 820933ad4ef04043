package collector

import (
	"os"
	"runtime/debug"
	"sync"
	"time"
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

// Coarse sets the options an input of time resolution step needs (the
// Prometheus source's step): its Resolution (the kinds it cannot judge),
// and rates and liveness measured over steps rather than seconds.
func (o *Options) Coarse(step time.Duration) {
	o.Resolution = step
	o.RateWindow = max(DefaultRateWindow, 2*step)
	o.StaleAfter = max(DefaultStaleAfter, 3*step+5*time.Second)
}

// Rejected is a message an input rejected: where it was (file:line or
// target) and why.
type Rejected struct {
	Place string
	Err   error
}

// RejectLog keeps the first rejects of an input for a command to show,
// and counts those past them. Add is an Options.OnReject. Its methods are
// safe for concurrent use; its zero value keeps DefaultRejectLog.
type RejectLog struct {
	// Max is how many it keeps; 0 is DefaultRejectLog.
	Max int

	mu   sync.Mutex
	kept []Rejected
	more int
}

// DefaultRejectLog is how many rejects a RejectLog keeps by default.
const DefaultRejectLog = 20

// Add keeps a reject, or counts it past the first Max.
func (l *RejectLog) Add(place string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.Max
	if n <= 0 {
		n = DefaultRejectLog
	}
	if len(l.kept) < n {
		l.kept = append(l.kept, Rejected{Place: place, Err: err})
	} else {
		l.more++
	}
}

// Rejects returns the rejects kept, in the order they came, and how many
// more there were. Place and Err are the peer's words: sanitize them
// before printing.
func (l *RejectLog) Rejects() (kept []Rejected, more int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Rejected(nil), l.kept...), l.more
}
