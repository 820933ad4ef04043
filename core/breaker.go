package core

import (
	"math"
	"sync/atomic"
)

// ratioEpsilon is sentinel-golang's Float64Equals precision: a ratio this
// close to the threshold counts as reaching it.
const ratioEpsilon = 1e-8

// breakerCounter is one bucket of a breaker's window: completions, and how
// many of them were slow or failed (per the strategy).
type breakerCounter struct {
	total, bad atomic.Int64
}

// Reset zeroes the counter.
func (c *breakerCounter) Reset() {
	c.total.Store(0)
	c.bad.Store(0)
}

// Breaker is one circuit breaker: a rule, its statistic window and its state.
// All methods are safe for concurrent use and none allocates, except that a
// transition decided by a probe allocates its Probe for the listeners.
//
// The state machine is sentinel-golang v1.0.4's (or Java Sentinel 1.8's
// with SemanticsJava): every completion is counted, and in CLOSED a completion
// that brings the window to MinRequestAmount or more with a value at or above
// the threshold trips the breaker. OPEN becomes HALF_OPEN lazily, on the first
// request at or after the retry timeout; that request is the probe. A slow or
// failed completion in HALF_OPEN reopens the breaker; ProbeNum good ones (at
// least one) close it and forget the window.
//
// With SemanticsJava the window is always one bucket of StatIntervalMs (Java's
// breakers build a LeapArray of sample count 1), the trip comparison is
// strict, one probe decides, and a clock that went back behind the bucket
// loses its sample but is still judged; docs/SEMANTICS.md has the details.
type Breaker struct {
	rule      BreakerRule
	java      bool
	stat      *Window[breakerCounter, *breakerCounter]
	lost      breakerCounter // java: where a sample from behind the bucket goes, never read
	state     atomic.Int32
	nextRetry atomic.Int64
	probes    atomic.Uint64
	listeners []TransitionListener
	blocked   *BlockError
}

// NewBreaker validates rule and returns a CLOSED breaker for it. Every
// transition is passed to each listener, in order.
func NewBreaker(rule BreakerRule, listeners ...TransitionListener) (*Breaker, error) {
	if err := rule.Validate(); err != nil {
		return nil, err
	}
	if err := rule.enforceable(); err != nil {
		return nil, err
	}
	stat, err := NewWindow[breakerCounter](rule.BucketCount(), int64(rule.StatIntervalMs))
	if err != nil {
		return nil, err
	}
	return newBreakerWithStat(rule, stat, listeners), nil
}

func newBreakerWithStat(rule BreakerRule, stat *Window[breakerCounter, *breakerCounter], listeners []TransitionListener) *Breaker {
	b := &Breaker{
		rule:      rule,
		java:      rule.Semantics == SemanticsJava,
		stat:      stat,
		listeners: listeners,
	}
	b.blocked = &BlockError{Resource: rule.Resource, Cause: BlockedByBreaker, Breaker: &b.rule}
	return b
}

// Rule returns the breaker's rule.
func (b *Breaker) Rule() *BreakerRule { return &b.rule }

// State returns the current state. OPEN is reported until a request arrives
// after the retry timeout, as in Sentinel.
func (b *Breaker) State() State { return State(b.state.Load()) }

// NextRetryMs is the earliest time an OPEN breaker lets a probe through.
func (b *Breaker) NextRetryMs() int64 { return b.nextRetry.Load() }

// Window returns the completions and bad completions in the window at now.
func (b *Breaker) Window(now int64) WindowSnapshot {
	total, bad := b.sum(now)
	return b.snapshot(total, bad)
}

// TryPass decides whether a request may pass at now. When it moves the
// breaker from OPEN to HALF_OPEN, probe is true and the request is the probe:
// if a later check blocks it after all, the caller must call AbortProbe.
func (b *Breaker) TryPass(now int64) (pass, probe bool) {
	switch State(b.state.Load()) {
	case Closed:
		return true, false
	case Open:
		if now >= b.nextRetry.Load() && b.state.CompareAndSwap(int32(Open), int32(HalfOpen)) {
			b.notify(Transition{From: Open, To: HalfOpen, AtMs: now})
			return true, true
		}
		return false, false
	default: // HALF_OPEN: with ProbeNum > 0 everything passes while probing
		return b.rule.ProbeNum > 0 && !b.java, false
	}
}

// AbortProbe returns a HALF_OPEN breaker to OPEN because its probe was
// blocked by a later check. The retry time is not moved, so the next request
// probes again (sentinel-golang's exit handler does the same).
func (b *Breaker) AbortProbe(now int64) {
	if b.state.CompareAndSwap(int32(HalfOpen), int32(Open)) {
		b.notify(Transition{From: HalfOpen, To: Open, AtMs: now, Snapshot: WindowSnapshot{Value: 1}})
	}
}

// OnComplete records a completion at now that took rtMs and failed or not,
// and moves the breaker if it decides anything.
func (b *Breaker) OnComplete(now, rtMs int64, failed bool) {
	var c *breakerCounter
	if b.java {
		c = b.javaCurrent(now)
	} else if c = b.stat.Current(now); c == nil {
		return // the clock went backwards past this bucket: dropped, as sentinel-golang does
	}
	bad := failed
	if b.rule.Strategy == SlowRequestRatio {
		bad = rtMs > int64(b.rule.MaxAllowedRtMs)
	}
	if bad {
		c.bad.Add(1)
	}
	c.total.Add(1)

	switch State(b.state.Load()) {
	case Open:
		return
	case HalfOpen:
		probe := &Probe{RtMs: rtMs, Error: failed}
		if bad {
			if b.state.CompareAndSwap(int32(HalfOpen), int32(Open)) {
				b.probes.Store(0)
				b.nextRetry.Store(now + int64(b.rule.RetryTimeoutMs))
				b.notify(Transition{From: HalfOpen, To: Open, AtMs: now, Probe: probe, Snapshot: WindowSnapshot{Value: 1}})
			}
			return
		}
		n := b.probes.Add(1)
		if b.java || b.rule.ProbeNum == 0 || n >= b.rule.ProbeNum {
			if b.state.CompareAndSwap(int32(HalfOpen), int32(Closed)) {
				b.probes.Store(0)
				if b.java {
					// Java resets currentWindow(), its one bucket (or the
					// fresh one a clock behind it gets), then notifies.
					b.javaCurrent(now).Reset()
					b.notify(Transition{From: HalfOpen, To: Closed, AtMs: now, Probe: probe})
				} else {
					b.notify(Transition{From: HalfOpen, To: Closed, AtMs: now, Probe: probe})
					b.stat.Reset(now)
				}
			}
		}
		return
	}

	total, badTotal := b.sum(now)
	if total < int64(b.rule.MinRequestAmount) || !b.exceeds(total, badTotal) {
		return
	}
	if b.state.CompareAndSwap(int32(Closed), int32(Open)) {
		b.nextRetry.Store(now + int64(b.rule.RetryTimeoutMs))
		b.notify(Transition{From: Closed, To: Open, AtMs: now, Snapshot: b.snapshot(total, badTotal)})
	}
}

func (b *Breaker) sum(now int64) (total, bad int64) {
	if b.java {
		return b.javaSum(now)
	}
	for i := 0; i < b.stat.SampleCount(); i++ {
		if _, c, ok := b.stat.At(now, i); ok {
			total += c.total.Load()
			bad += c.bad.Load()
		}
	}
	return total, bad
}

// javaCurrent is Java's LeapArray.currentWindow for a breaker's single
// bucket: when the bucket already starts after now's (the clock went back),
// Java counts into a fresh bucket it never stores, so the sample is lost.
func (b *Breaker) javaCurrent(now int64) *breakerCounter {
	if start, _, _ := b.stat.At(now, 0); start > b.stat.BucketStart(now) {
		return &b.lost
	}
	return b.stat.Current(now)
}

// javaSum is Java's LeapArray.values(now) summed: the bucket counts unless it
// started more than statIntervalMs before now, so a bucket ahead of a clock
// that went back still counts.
func (b *Breaker) javaSum(now int64) (total, bad int64) {
	start, _, _ := b.stat.At(now, 0)
	if start <= slotResetting || now-start > b.stat.IntervalMs() {
		return 0, 0
	}
	if c, ok := b.stat.Lookup(start); ok {
		return c.total.Load(), c.bad.Load()
	}
	return 0, 0
}

// exceeds applies the trip comparison to the window's totals.
func (b *Breaker) exceeds(total, bad int64) bool {
	t := b.rule.Threshold
	if b.rule.Strategy == ErrorCount {
		if b.java {
			return float64(bad) > t
		}
		return uint64(bad) >= uint64(t) // sentinel-golang truncates the threshold
	}
	ratio := float64(bad) / float64(total)
	if b.java {
		// Java trips above the threshold, and at it only for a slow ratio of 1.
		return ratio > t || (b.rule.Strategy == SlowRequestRatio && t == 1 && ratio == 1)
	}
	return ratio > t || math.Abs(ratio-t) < ratioEpsilon
}

func (b *Breaker) snapshot(total, bad int64) WindowSnapshot {
	s := WindowSnapshot{Total: total, Bad: bad}
	switch {
	case b.rule.Strategy == ErrorCount:
		s.Value = float64(bad)
	case total > 0:
		s.Value = float64(bad) / float64(total)
	}
	return s
}

func (b *Breaker) notify(t Transition) {
	if len(b.listeners) == 0 {
		return
	}
	t.Resource = b.rule.Resource
	t.RuleID = b.rule.ID
	t.Strategy = b.rule.Strategy
	t.Threshold = b.rule.Threshold
	t.RetryTimeoutMs = b.rule.RetryTimeoutMs
	for _, l := range b.listeners {
		l.OnTransition(t)
	}
}
