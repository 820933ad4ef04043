package feed

import (
	"sync"
	"sync/atomic"
)

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

// MaxTargetInstances bounds the distinct instances a target's status
// counts: a peer naming endless instances costs a bounded set.
const MaxTargetInstances = 256

// TargetStatus is one dialed target as the UI shows it.
type TargetStatus struct {
	Name  string // as given on the command line
	State TargetState
	Since int64 // when it entered State, Unix ms
	// DownSince is when it stopped being up (or, never up, when it was
	// first dialed), Unix ms; 0 while up. Retries do not move it: a
	// target down for minutes is down for minutes, however often dialed.
	DownSince int64
	Instance  string // the instance its hello named, once known (the latest)
	// Instances is how many distinct instances its hellos named (a
	// re-served stream relays many), counted up to MaxTargetInstances:
	// at that, "that many or more".
	Instances int
	// Problem is why it is down (or its last connection failed).
	Problem Problem
	// Note is a standing remark about what this target can tell, such as
	// a Java Sentinel target whose breaker states are not exposed.
	Note TargetRemark
	// Messages, Bytes, Items and LastMessageAt are its running counts,
	// moved at every message (TargetRecord.Tally): a snapshot the
	// collector publishes on its own while live may show them as they
	// were up to a second before, the rest of the status as it is.
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

// Problem is why a target is down, or why its last connection failed, as
// a fact: the kind of failure and its particulars. The views word it
// (collector.ProblemText). The zero Problem is none.
type Problem struct {
	Kind ProblemKind
	// Where is the address that refused (ProblemRefused) or the host name
	// that did not resolve (ProblemNoHost, ProblemDNS).
	Where string
	// Status is the HTTP status a target answered instead of upgrading to
	// a stream (ProblemHTTP).
	Status int
	// Detail is the failure's own text where the kind keeps it: the
	// resolver's reason, the TLS error, a reset's, a timeout's, or the
	// whole error of a failure of no other kind. Untrusted: sanitize
	// before printing.
	Detail string
}

// ProblemKind is the kind of a target's failure.
type ProblemKind uint8

// The kinds of Problem.
const (
	ProblemNone      ProblemKind = iota
	ProblemClosed                // the peer closed the connection
	ProblemRefused               // nothing listens at Where
	ProblemNoHost                // DNS: no such host Where
	ProblemDNS                   // DNS: Where cannot be resolved (Detail)
	ProblemNotTLS                // the target does not speak TLS
	ProblemTLSHost               // the certificate is not for this host (Detail)
	ProblemTLSTrust              // the certificate is not trusted (Detail)
	ProblemReset                 // reset by the peer (Detail)
	ProblemNotStream             // not a websocket (Detail)
	ProblemTimeout               // timed out (Detail)
	ProblemHTTP                  // answered HTTP Status without upgrading
	ProblemOther                 // any other failure (Detail)
)

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
// written by the source (Update, Tally) as things happen, read by the
// store (Published) at each snapshot, under a lock of its own that only
// its watcher's (Watch) is taken under. The zero TargetRecord holds the
// zero status.
type TargetRecord struct {
	mu sync.Mutex
	st TargetStatus
	// pub is the status as last published, never written once made: a
	// snapshot taken while nothing changed shares it with the one before
	// (dirty[changedList] says something did since, dirty[talliedList]
	// that its running counts did).
	pub   *TargetStatus
	dirty [2]bool
	// watch is told of the record's updates; queued[k]: it holds the
	// record in its list k (changedList, talliedList), not taken since.
	watch  *TargetChanges
	queued [2]atomic.Bool
}

// The lists of a TargetChanges.
const (
	changedList = iota // records updated (Update)
	talliedList        // records whose running counts moved (Tally)
)

// TargetChanges gathers the records updated since they were last taken
// (TargetRecord.Watch): a snapshot of thousands of targets then reads the
// ones that changed, not each of them. The records whose running counts
// alone moved (Tally) are gathered apart, for a snapshot to take less
// often (TakeTallied).
type TargetChanges struct {
	mu    sync.Mutex
	lists [2][]*TargetRecord
}

// Take appends to buf[:0] the records updated since the last Take, each
// once, and returns it.
func (w *TargetChanges) Take(buf []*TargetRecord) []*TargetRecord {
	return w.take(changedList, buf)
}

// TakeTallied appends to buf[:0] the records tallied (Tally) since the
// last TakeTallied, each once, and returns it. A record both updated and
// tallied may be in both lists; Published makes one value of the two.
func (w *TargetChanges) TakeTallied(buf []*TargetRecord) []*TargetRecord {
	return w.take(talliedList, buf)
}

// take appends to buf[:0] the records of list k, and empties it.
func (w *TargetChanges) take(k int, buf []*TargetRecord) []*TargetRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.lists[k]
	buf = append(buf[:0], list...)
	for _, r := range list {
		r.queued[k].Store(false)
	}
	clear(list)
	w.lists[k] = list[:0]
	return buf
}

// tell queues r in list k unless it is queued there already.
func (w *TargetChanges) tell(r *TargetRecord, k int) {
	if r.queued[k].CompareAndSwap(false, true) {
		w.mu.Lock()
		w.lists[k] = append(w.lists[k], r)
		w.mu.Unlock()
	}
}

// Watch has w told of the record's updates from now on, and of the record
// itself at once.
func (r *TargetRecord) Watch(w *TargetChanges) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watch = w
	w.tell(r, changedList)
}

// NewTargetRecord returns a record holding st.
func NewTargetRecord(st TargetStatus) *TargetRecord { return &TargetRecord{st: st} }

// Status returns the status as last updated.
func (r *TargetRecord) Status() TargetStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// Published returns the status as last updated or tallied, in a value no
// one writes: the one it returned last time when nothing was updated or
// tallied since. Callers must not write through it.
func (r *TargetRecord) Published() *TargetStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pub == nil || r.dirty != [2]bool{} {
		st := r.st
		r.pub, r.dirty = &st, [2]bool{}
	}
	return r.pub
}

// Update applies f to the status. f must not block.
func (r *TargetRecord) Update(f func(s *TargetStatus)) { r.apply(f, changedList) }

// Tally applies f, which moves only the status's running counts
// (Messages, Bytes, Items, LastMessageAt), to the status. Its watcher
// gathers the record among the tallied rather than the changed: a fleet
// of thousands of targets, each counting a message several times a
// second, would otherwise have every snapshot copy every status
// (TargetChanges.TakeTallied). f must not block.
func (r *TargetRecord) Tally(f func(s *TargetStatus)) { r.apply(f, talliedList) }

// apply applies f to the status, and marks the record dirty in list k
// and tells its watcher so.
func (r *TargetRecord) apply(f func(s *TargetStatus), k int) {
	r.mu.Lock()
	f(&r.st)
	r.dirty[k] = true
	if r.watch != nil {
		r.watch.tell(r, k)
	}
	r.mu.Unlock()
}

// ReplayOrder is what a replay could not feed in its place: a replay
// feeds messages in the order of their time, and each after the hello and
// rules of its instance, within bounds.
type ReplayOrder struct {
	// Late messages were fed after a later one: what the replay holds to
	// put them in order was full. LateAt is the time of the first (Unix
	// ms).
	Late, LateAt int64
	// Unnamed lines came before their instance's hello in the input and
	// were fed without it (an instance of no app): past the instances
	// whose hello a replay keeps to feed first. UnnamedInstances counts
	// their instances; UnnamedAt is the time of the first.
	Unnamed, UnnamedInstances, UnnamedAt int64
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
