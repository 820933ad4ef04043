package fleet

import "github.com/sentinel-top/sentinel-top/core"

// Track is one breaker's history on one instance (a resource, and a rule
// id when the resource has several breakers): its state now and its
// steps, the one history the detail's bands, the findings' timelines and
// triage's detectors all read. The store writes it.
type Track struct {
	RuleID string
	// State is the breaker's state after its latest step in time order,
	// since Since (a step older than the latest, received late, takes its
	// place among Steps and changes neither).
	State core.State
	Since int64
	// Steps are its transitions in time order, bounded: the oldest are
	// dropped first.
	Steps []Transition
}

// Transition is one breaker state change as the fleet model keeps it.
type Transition struct {
	AtMs     int64
	From, To core.State
	RuleID   string
	// Inferred is set for a transition derived from counts (wire v1
	// "inferred"): accurate to the second, no Snapshot.
	Inferred bool
	// Restart marks the step to CLOSED of a breaker whose process
	// restarted (a new process's breakers start CLOSED, and say nothing):
	// a step of its history, counted as no transition.
	Restart bool
	// Snapshot is set for CLOSED -> OPEN, Probe for HALF_OPEN -> OPEN|CLOSED.
	Snapshot *core.WindowSnapshot
	Probe    *core.Probe
}

// Holds reports whether the track holds tr already (the same time, from
// and to), looking back from its latest step to tr's time.
func (t *Track) Holds(tr Transition) bool {
	for i := len(t.Steps) - 1; i >= 0 && t.Steps[i].AtMs >= tr.AtMs; i-- {
		if st := &t.Steps[i]; st.AtMs == tr.AtMs && st.From == tr.From && st.To == tr.To {
			return true
		}
	}
	return false
}
