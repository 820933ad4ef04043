package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// Latency: how long a breaker transition at an agent takes to show in a
// published snapshot. The agents of one app (bench-0) guard their first
// resource with an error-ratio breaker that the ordinary traffic (one call
// in ten fails) never trips; a driver trips up to latencyTrippers of them
// in turn with a burst of failing calls, and the traffic that follows the
// retry timeout probes and closes them. Every transition is timed where it
// happens (the agent's OnTransition); a watcher reads each snapshot as it
// is published and times the first that shows the breaker in its new
// state, taken after the transition (Snapshot.At later than it).

const (
	latencyApp      = "bench-0"
	latencyTrippers = 100
	latencyRetryMs  = 1000
	latencyEvery    = 30 * time.Millisecond // a trip every 3 s per breaker with 100 of them
)

// latencyRule is the breaker of the agents of latencyApp.
func latencyRule(resource string) core.BreakerRule {
	return core.BreakerRule{Resource: resource, Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5,
		StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, RetryTimeoutMs: latencyRetryMs}
}

// latency follows the transitions still to be shown, one per instance (a
// later one replaces it: superseded), and what was measured. The agents
// run in other processes and report their transitions over a pipe, up to
// transitionsEvery late: one can arrive after the snapshots that show it
// were read, so the watcher also keeps, per instance, what the last
// shownKept snapshots showed of its breaker.
type latency struct {
	mu         sync.Mutex
	on         bool // inside the measured window
	pending    map[string]pendingTransition
	shown      map[string]*shownRing
	measured   []time.Duration
	superseded int
	// firstSeq and lastSeq are the first and the last snapshot read
	// inside the window (Snapshot.Seq): how many were published in it.
	firstSeq, lastSeq uint64
	// Why targets went down, as snapshots showed them (a target down for
	// less than a snapshot's interval can go unseen).
	downSince map[string]int64 // target -> TargetStatus.Since of the down state counted
	downWhy   map[string]int   // why (collector.ProblemText) -> times
	// targets are the last snapshot's: a status it shares with the next
	// did not change, and is not read again (the watcher runs in the
	// process whose CPU bench counts as the collector's).
	targets []*collector.TargetStatus
}

type pendingTransition struct {
	to   core.State
	atMs int64     // the agent's clock, Unix ms
	at   time.Time // when it happened, for the elapsed time
}

// shownState is what a snapshot showed of an instance's latency breaker:
// its state, the snapshot's At, and when the snapshot was read.
type shownState struct {
	state core.State
	atMs  int64
	seen  time.Time
}

// shownKept is how many snapshots' states of each breaker are kept for
// news that comes late: more than a second's (up to 10 snapshots a
// second while breakers trip), where the news is at most transitionsEvery
// late.
const shownKept = 32

// shownRing is what the last shownKept snapshots showed of a breaker.
type shownRing struct {
	s    [shownKept]shownState
	next int // where the next goes
	n    int
}

// add keeps sh, the latest, in r (a new ring when r is nil), and returns r.
func (r *shownRing) add(sh shownState) *shownRing {
	if r == nil {
		r = &shownRing{}
	}
	r.s[r.next] = sh
	r.next = (r.next + 1) % shownKept
	r.n = min(r.n+1, shownKept)
	return r
}

// first is the earliest snapshot kept that was taken after atMs and
// showed state to.
func (r *shownRing) first(atMs int64, to core.State) (shownState, bool) {
	if r == nil {
		return shownState{}, false
	}
	for k := range r.n {
		sh := r.s[(r.next-r.n+k+shownKept)%shownKept]
		if sh.atMs > atMs && sh.state == to {
			return sh, true
		}
	}
	return shownState{}, false
}

func newLatency() *latency {
	return &latency{pending: map[string]pendingTransition{}, shown: map[string]*shownRing{},
		downSince: map[string]int64{}, downWhy: map[string]int{}}
}

// transition is told every transition of the latency breakers.
func (l *latency) transition(instance string, to core.State, atMs int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Shown before the news arrived: by the first snapshot after it that
	// showed the new state (the one before may have shown it too, a state
	// left and come back to between two snapshots).
	if sh, ok := l.shown[instance].first(atMs, to); ok {
		l.measure1(sh.seen.Sub(at))
		delete(l.pending, instance)
		return
	}
	if _, ok := l.pending[instance]; ok && l.on {
		l.superseded++
	}
	l.pending[instance] = pendingTransition{to: to, atMs: atMs, at: at}
}

func (l *latency) measure1(d time.Duration) {
	if l.on {
		l.measured = append(l.measured, max(d, 0))
	}
}

// measure starts (on) or stops counting.
func (l *latency) measure(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = on
}

// seen times the pending transitions a snapshot shows, and notes the
// targets it shows down.
func (l *latency) seen(s *collector.Snapshot, resource string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		if l.firstSeq == 0 {
			l.firstSeq = s.Seq
		}
		l.lastSeq = s.Seq
	}
	for _, b := range s.Breakers {
		if b.Resource != resource {
			continue
		}
		sh := shownState{state: b.State, atMs: s.At, seen: now}
		if r := l.shown[b.Instance]; r != nil {
			r.add(sh) // one lookup of the name a snapshot, not two
		} else {
			l.shown[b.Instance] = r.add(sh)
		}
		p, ok := l.pending[b.Instance]
		if !ok || b.State != p.to || s.At <= p.atMs {
			continue
		}
		l.measure1(now.Sub(p.at))
		delete(l.pending, b.Instance)
	}
	for i, t := range s.Targets {
		if i < len(l.targets) && l.targets[i] == t {
			continue
		}
		if t.State == collector.TargetDown && l.downSince[t.Name] != t.Since {
			l.downSince[t.Name] = t.Since
			l.downWhy[collector.ProblemText(t.Problem)]++
		}
	}
	l.targets = s.Targets
}

// watch reads every snapshot c publishes until ctx ends, woken by each
// (a reader polling every few milliseconds would cost the collector's
// process CPU that bench counts as the collector's).
func (l *latency) watch(ctx context.Context, c *collector.Collector, resource string) {
	var seq uint64
	for {
		next := c.Published()
		if s := c.Snapshot(); s != nil && s.Seq != seq {
			seq = s.Seq
			l.seen(s, resource, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-next:
		}
	}
}

// quantiles are the measured p50 and p99, and how many were measured.
func (l *latency) quantiles() (p50, p99 time.Duration, n, superseded int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := slices.Clone(l.measured)
	slices.Sort(m)
	if len(m) == 0 {
		return 0, 0, 0, l.superseded
	}
	at := func(q float64) time.Duration { return m[min(len(m)-1, int(q*float64(len(m))))] }
	return at(0.5), at(0.99), len(m), l.superseded
}

// print writes the latency line, and how many snapshots the window of
// length window had: by their sequence numbers, those the watcher did not
// read (a later one published before it woke) counted too.
func (l *latency) print(w io.Writer, window time.Duration) {
	p50, p99, n, sup := l.quantiles()
	l.mu.Lock()
	var snaps uint64
	if l.firstSeq > 0 {
		snaps = l.lastSeq - l.firstSeq + 1
	}
	l.mu.Unlock()
	if n == 0 {
		fmt.Fprintf(w, "latency:    no breaker transition measured (%d superseded)\n", sup)
	} else {
		fmt.Fprintf(w, "latency:    breaker transition at an agent to the first snapshot showing it: p50 %d ms, p99 %d ms (%d transitions; %d superseded before a snapshot)\n",
			p50.Milliseconds(), p99.Milliseconds(), n, sup)
	}
	if window > 0 {
		fmt.Fprintf(w, "            %d snapshots published, %.1f a second\n", snaps, float64(snaps)/window.Seconds())
	}
}

// trip trips the latency breakers in turn until ctx ends: failing calls
// until the breaker refuses one. Its admitted calls are counted in
// tripped (read once it has returned).
func (f *childFleet) trip(ctx context.Context) {
	if len(f.trippers) == 0 {
		return
	}
	tk := time.NewTicker(f.tripEvery)
	defer tk.Stop()
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		i := f.trippers[k%len(f.trippers)]
		for range 20 {
			e, err := f.agents[i].Entry(f.resources[0])
			if err != nil {
				break // open
			}
			f.tripped[i]++
			e.Exit(errFailedCall)
		}
	}
}

// downReason is why targets went down, and how often.
type downReason struct {
	why string
	n   int
	// alike counts the other texts merged into it (groupReasons): they
	// differ from why in their numbers only.
	alike int
}

// downReasons lists why targets went down, most frequent first, errors
// that differ only in numbers (addresses, ports) as one (groupReasons).
func (l *latency) downReasons() []downReason {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []downReason
	for why, n := range l.downWhy {
		out = append(out, downReason{why: why, n: n})
	}
	// In text order first, so that each group's example is the same
	// whatever the map's order.
	slices.SortFunc(out, func(a, b downReason) int { return strings.Compare(a.why, b.why) })
	return groupReasons(out)
}

var digitRuns = regexp.MustCompile(`[0-9]+`)

// groupReasons merges reasons whose texts differ only in their numbers
// (ports, addresses), keeping the first of each group as its example, and
// sorts them most frequent first (stable: ties in their first order).
func groupReasons(in []downReason) []downReason {
	at := map[string]int{}
	var out []downReason
	for _, r := range in {
		key := digitRuns.ReplaceAllLiteralString(r.why, "#")
		if i, ok := at[key]; ok {
			out[i].n += r.n
			out[i].alike += 1 + r.alike
			continue
		}
		at[key] = len(out)
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b downReason) int { return cmp.Compare(b.n, a.n) })
	return out
}
