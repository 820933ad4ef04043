package core

import "fmt"

// State is a circuit breaker's state.
type State int32

// The breaker states. The numeric values are sentinel-golang's.
const (
	Closed   State = iota // requests pass; the window is watched
	HalfOpen              // probing: the next completion decides
	Open                  // requests are blocked until the retry timeout
)

// String returns the wire name: CLOSED, HALF_OPEN or OPEN.
func (s State) String() string {
	switch s {
	case Closed:
		return "CLOSED"
	case HalfOpen:
		return "HALF_OPEN"
	case Open:
		return "OPEN"
	default:
		return fmt.Sprintf("STATE(%d)", int32(s))
	}
}

// ParseState parses a wire state name.
func ParseState(s string) (State, error) {
	switch s {
	case "CLOSED":
		return Closed, nil
	case "HALF_OPEN":
		return HalfOpen, nil
	case "OPEN":
		return Open, nil
	}
	return 0, fmt.Errorf("unknown breaker state %q", s)
}

// WindowSnapshot is what a breaker's window held when it tripped: enough for
// the triage engine to judge how much evidence the trip rested on.
type WindowSnapshot struct {
	Total int64   // completions in the window
	Bad   int64   // slow (SlowRequestRatio) or failed (ErrorRatio, ErrorCount) completions
	Value float64 // the ratio Bad/Total, or the error count for ErrorCount
}

// Probe describes the HALF_OPEN request whose completion decided a transition.
type Probe struct {
	RtMs  int64
	Error bool
}

// Transition is one breaker state change.
type Transition struct {
	Resource       string
	RuleID         string
	Strategy       Strategy
	From, To       State
	AtMs           int64          // Unix ms on the breaker's clock
	Snapshot       WindowSnapshot // set for CLOSED -> OPEN
	Probe          *Probe         // set when a probe's completion decided it (HALF_OPEN -> OPEN|CLOSED)
	Threshold      float64
	RetryTimeoutMs uint32
	// Inferred: the source could not report it, and it was derived from
	// per-second counts (wire v1 "inferred": Java Sentinel), dated to the
	// second, without a Snapshot. A breaker never sets it.
	Inferred bool
}

// TransitionListener receives every transition of the breakers it is
// registered with, synchronously, on the goroutine that caused it. It must
// not block.
type TransitionListener interface {
	OnTransition(t Transition)
}

// TransitionFunc adapts a function to TransitionListener.
type TransitionFunc func(Transition)

// OnTransition calls f(t).
func (f TransitionFunc) OnTransition(t Transition) { f(t) }
