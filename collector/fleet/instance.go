package fleet

import "slices"

// Instance is one emitting process as the fleet model knows it. The store
// writes it under its lock; readers read it under the same lock (the
// triage engine is fed under it). A name taken by another process (another
// app after a hello) gets a new Instance; a restart of the same process
// keeps its Instance with a later StartedAt.
type Instance struct {
	// Name is the wire's instance; App the app it is counted in (its
	// hello's, the name itself until a hello names one).
	Name, App string
	// StartedAt is the latest start its hellos told (Unix ms, its clock;
	// 0: none told).
	StartedAt int64
	// Gone is the one liveness rule: set from when it said bye or was
	// silent past the stale period, cleared by its next message. LeftAt
	// is when it left, on its own clock: its bye's time, or its last
	// message's plus the stale period.
	Gone   bool
	LeftAt int64
	// Unreceived are its latest spans whose data is known never to have
	// arrived, and Absent those in which no process ran under its name
	// (between a process's last data and its restart's start), [From, To)
	// on its clock, oldest first, at most MaxSpans each.
	Unreceived, Absent []Span
	// Rules are its latest complete rule set (nil: none told yet; a
	// process that takes the name begins with none).
	Rules *Rules
}

// Span is the time [From, To), Unix ms.
type Span struct{ From, To int64 }

// MaxSpans bounds Instance.Unreceived and Instance.Absent; the oldest
// spans are forgotten first.
const MaxSpans = 8

// AddSpan adds sp to spans, forgetting the oldest past MaxSpans.
func AddSpan(spans []Span, sp Span) []Span {
	if len(spans) == MaxSpans {
		spans = slices.Delete(spans, 0, 1)
	}
	return append(spans, sp)
}

// Overlaps reports whether [from, to) overlaps one of spans.
func Overlaps(spans []Span, from, to int64) bool {
	for _, sp := range spans {
		if from < sp.To && sp.From < to {
			return true
		}
	}
	return false
}

// Alive reports whether the instance still counts as present at now (its
// clock): not gone, or gone no longer than stale ago.
func (in *Instance) Alive(now, stale int64) bool {
	return !in.Gone || now-in.LeftAt <= stale
}

// End is when the instance's evidence stops: now, or when it left.
func (in *Instance) End(now int64) int64 {
	if in.Gone && in.LeftAt < now {
		return in.LeftAt
	}
	return now
}
