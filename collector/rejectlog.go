package collector

import "sync"

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
