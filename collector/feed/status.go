package feed

import "sync"

// TargetState is a dialed target's connection state.
type TargetState uint8

// The target states.
const (
	TargetConnecting TargetState = iota
	TargetUp
	TargetDown
)

func (s TargetState) String() string {
	switch s {
	case TargetUp:
		return "up"
	case TargetDown:
		return "down"
	}
	return "connecting"
}

// TargetStatus is one dialed target as the UI shows it.
type TargetStatus struct {
	Name     string // as given on the command line
	State    TargetState
	Since    int64  // when it entered State, Unix ms
	Instance string // the instance its hello named, once known
	// LastError is why it is down (or the last reconnect failed).
	LastError string
	// Note is a standing remark about what this target can tell, such as
	// a Java Sentinel target whose breaker states are not exposed.
	Note     TargetRemark
	Messages int64
	Bytes    int64
	// Items counts the items of the buckets messages it sent that decoded
	// (duplicates included).
	Items      int64
	Rejected   int64
	Reconnects int64
	// Polls is how many polls of a polled target (Java Sentinel) have been
	// applied to the end: its metrics, the breaker states inferred from
	// them and, when due, its rules. 0 for a streaming target.
	Polls int64
	// LastMessageAt is when its latest message arrived (the collector's
	// clock, Unix ms; 0 before any).
	LastMessageAt int64
	// RetryAt is when the next dial happens while down, Unix ms.
	RetryAt int64
}

// TargetRemark is what a target cannot tell, standing while it is
// polled; the zero value remarks nothing. The views word it.
type TargetRemark struct {
	// StatesInferred: the target (Java Sentinel's transport API) does
	// not expose breaker states; they are inferred from the counts where
	// a resource has only degrade rules.
	StatesInferred bool
	// RulesError is why its rules could not be read ("" when they were).
	RulesError string
}

// TargetRecord is what a dialed target's connection has told of itself:
// written by the source (Update) as things happen, read by the store
// (Status) at each snapshot, under a lock of its own that nothing else
// is taken under. The zero TargetRecord holds the zero status.
type TargetRecord struct {
	mu sync.Mutex
	st TargetStatus
}

// NewTargetRecord returns a record holding st.
func NewTargetRecord(st TargetStatus) *TargetRecord { return &TargetRecord{st: st} }

// Status returns the status as last updated.
func (r *TargetRecord) Status() TargetStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// Update applies f to the status. f must not block.
func (r *TargetRecord) Update(f func(s *TargetStatus)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
}

// ReplayStatus describes a replay in progress.
type ReplayStatus struct {
	Active   bool
	Paused   bool
	Speed    float64 // 0 means as fast as possible
	From, To int64   // the fixture's time range, Unix ms
	Pos      int64   // the current replay position
	Done     bool    // the whole fixture has been fed
}
