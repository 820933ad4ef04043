package triage

import (
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/fleet"

	"github.com/sentinel-top/sentinel-top/core"
)

// The engine's view of one resource on one instance, and of each breaker on it.

// series is one resource on one instance. The fields every bucket reads
// or writes come first, together (a fleet's series are not in any cache
// when their next bucket comes), the healthy traffic's sums among them;
// what only transitions, findings and advice read comes after.
type series struct {
	inst     *instState
	resource string
	ar       *appRes
	res      *resState
	rr       *resRules // the instance's rules for the resource (nil: none): in.rulesOf(resource)

	hasBucket bool
	traffic   bool // some bucket passed entries
	// ratio says rr has a ratio breaker (hasRatioBreaker), and listed that
	// advice.list is set: beside what every bucket touches, so that a
	// series advice cannot judge costs it no other read (adviceDetector.changed).
	// javaRatio says rr has a ratio breaker of Java Sentinel 1.8
	// (hasJavaRatioBreaker): its buckets are kept in lowSecs.
	ratio, listed, javaRatio bool
	// winSynced: win has a window per statIntervalMs of rr (inert.go);
	// logForgot: its traffic was forgotten (tracelog.go's ForgetTraffic).
	// Here rather than in their structs, where each would take a word.
	// oneListed: the series is in the inert-rule detector's ones.
	winSynced, logForgot, oneListed bool
	lastStart                       int64
	// bucketMs is the length of its buckets (at most wire.MaxBucketMs, an
	// hour), and slowBound what its buckets' slow counts against
	// (slowBoundOf(rr), ms): 32 bits each, side by side in one word.
	bucketMs, slowBound int32
	firstAt, endAt      int64

	// offered sums pass + block over every bucket, and reportedMs the time
	// the instance reported the resource (its buckets, and the silences of
	// up to a minute between them, which are idle traffic): the QPS of
	// findings-v1 is their ratio.
	offered, reportedMs int64

	hot  *hotState   // hot-value: nil until the series blocked with hot values
	warm *warmSeries // warm-up: nil unless the series had a warm-up rule
	// lowSecs are its latest buckets, for inferred trips' windows
	// (lowjava.go): nil until it has a Java ratio breaker or such a trip.
	lowSecs *lowSeconds

	// log is the traffic log its records go to (tracelog.go): its app's
	// for the resource when the series began, kept if the instance moves
	// to another app, so that its records stay where its index names
	// them. logIdx names them there, 0 before the first; logSeq is the
	// chunk that record went to.
	log    *resLog
	logIdx uint32

	up  unprot         // unprotected-traffic (on, written by a bucket with traffic, first)
	win windows        // inert-rule: the most completions its statistic windows held
	rw  []*ruleWindows // inert-rule: each breaker rule's windows of bad calls (inertbad.go)
	si  selfStats      // self-inflicted: every completion (selfinflicted.go)
	hz  healthy        // its healthy traffic (healthy.go)

	// What a bucket does not touch.
	logSeq   int64
	advice   seriesAdvice // rule advice's last judgment (advicecache.go)
	breakers []*breaker
}

// qps is the mean offered load (pass + block per second) over the time the
// instance reported the resource; 0 before any bucket.
func (s *series) qps() float64 {
	if s.reportedMs <= 0 {
		return 0
	}
	return float64(s.offered) * 1000 / float64(s.reportedMs)
}

// open reports whether any breaker of the series is not CLOSED.
func (s *series) open() bool { return s.openBut(nil) }

// openBut reports whether a breaker of the series other than x is not
// CLOSED.
func (s *series) openBut(x *breaker) bool {
	for _, b := range s.breakers {
		if b != x && b.state() != core.Closed {
			return true
		}
	}
	return false
}

// state is the breaker's state: its track's, the fleet model's (CLOSED
// before any).
func (b *breaker) state() core.State {
	if b.track == nil {
		return core.Closed
	}
	return b.track.State
}

// breaker follows one breaker (one resource and rule id on one instance).
type breaker struct {
	s      *series
	ruleID string
	// track is the fleet model's history of the breaker (its state), as
	// of its latest transition told.
	track *fleet.Track

	// The current run of failed probes, and the spacings and probe times of
	// its first failed probes, kept until it qualifies.
	run      int64
	runStart int64 // first OPEN of the run, 0 if not seen
	qualEnd  int64 // when its latest qualifying run ended (CLOSED, restart), 0 if none
	lastOpen int64 // latest OPEN of the run, 0 if not seen
	pending  [SawtoothRun]int64
	npending int
	pendRt   [SawtoothRun]int64
	npendRt  int

	// Qualifying runs (>= SawtoothRun failed probes).
	listed      bool
	qualFrom    int64
	qualTo      int64
	maxRun      int64
	maxRunDur   int64
	maxRunRetry uint32
	retry       uint32
	spacings    recent // OPEN->OPEN spacings of qualifying runs
	probeRts    recent // response times of their failed probes, where told

	// moved: the breaker changed state at least once.
	moved bool

	// self-inflicted: its entries into OPEN, the first and the latest,
	// and the rule in force at the latest.
	opens                   int64
	firstOpenAt, lastOpenAt int64
	openRule                *core.BreakerRule
}

func validState(s core.State) bool { return s == core.Closed || s == core.Open || s == core.HalfOpen }

func (s *series) breaker(ruleID string) *breaker {
	for _, b := range s.breakers {
		if b.ruleID == ruleID {
			return b
		}
	}
	b := &breaker{s: s, ruleID: strings.Clone(ruleID)}
	s.breakers = append(s.breakers, b)
	s.setHold() // a breaker of unknown rule is held for longest
	return b
}

// startRun starts a run of failed probes with a trip at at (0: no run).
func (b *breaker) startRun(at int64) {
	b.run, b.runStart, b.lastOpen, b.npending, b.npendRt = 0, at, at, 0, 0
}

// endRun ends the run of failed probes at at (a CLOSED, or a restart),
// remembering when a qualifying one ended.
func (b *breaker) endRun(at int64) {
	if b.run >= SawtoothRun {
		b.qualEnd = at
	}
	b.startRun(0)
}

// restart is a process restart at at: the breaker is new, and CLOSED
// (its track says so).
func (b *breaker) restart(at int64) { b.endRun(at) }

// recent keeps the last spacingLen values added.
type recent struct {
	v       [spacingLen]int64
	n, head int
}

func (r *recent) add(x int64) {
	r.v[r.head] = x
	r.head = (r.head + 1) % spacingLen
	r.n = min(r.n+1, spacingLen)
}

// appendTo appends the values kept, oldest first.
func (r *recent) appendTo(out []int64) []int64 {
	start := (r.head - r.n + spacingLen) % spacingLen
	for i := range r.n {
		out = append(out, r.v[(start+i)%spacingLen])
	}
	return out
}

// Touch reads the parts of the series a bucket writes first, and returns
// a value of them so that the reads are kept: called for a message's
// items in a loop of independent reads, before they are taken one by one,
// so that the cache misses of a fleet's series overlap instead of coming
// one after another (Collector.touchSeries). It reads a word of each of
// the struct's first nine lines (lines of 64 bytes: what a bucket
// touches, see series), the newest of the buckets healthy holds back, and
// the line of each state beside the series a bucket reads.
func (h Series) Touch() int64 {
	s := h.s
	if s == nil {
		return 0
	}
	z := &s.hz
	v := s.lastStart + s.offered + int64(s.logIdx) + s.up.passed + int64(len(s.win.ws)) + int64(s.si.complete)
	v += int64(z.held.n) + z.exFrom + z.hist[4] + z.hist[len(z.hist)-1]
	if n := len(z.held.buf); n > 0 {
		v += int64(z.held.buf[n-1])
	}
	// What a bucket reads beside the series: its log's head (where the
	// record goes), its app x resource's rule count (the unprotected
	// detector) and its resource's latest time. A fleet's 200 app x
	// resource states at 10 apps x 20 resources are out of the caches
	// again by their next item.
	if l := s.log; l != nil {
		v += int64(len(l.tail))
	}
	if s.ar != nil {
		v += int64(s.ar.ruleCount)
	}
	if s.res != nil {
		v += s.res.last
	}
	return v
}
