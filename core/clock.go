package core

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the only source of time in sentinel-top. Production code uses
// RealClock; replay, simulation and tests use a VirtualClock, which only moves
// when told to.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// UnixMilli returns the current time in Unix milliseconds, the unit of
	// every window, rule and wire message.
	UnixMilli() int64
	// Sleep blocks until d has passed on this clock.
	Sleep(d time.Duration)
	// AfterFunc calls f in its own goroutine once d has passed on this clock.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTicker returns a ticker that delivers the time every d on this clock.
	// Like time.Ticker, a slow receiver misses ticks rather than queueing them.
	NewTicker(d time.Duration) Ticker
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop cancels the call; it reports whether the call was still pending.
	Stop() bool
}

// Ticker delivers ticks on C until stopped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// RealClock is the wall clock. Use NewRealClock; the zero value also works,
// with a slower UnixMilli.
type RealClock struct {
	anchor atomic.Pointer[clockAnchor]
}

// clockAnchor pairs a wall-clock reading with the monotonic clock: reading
// the monotonic clock alone (time.Since) costs half of time.Now.
type clockAnchor struct {
	at     time.Time
	unixMs int64
}

// reanchorAfter bounds how long UnixMilli follows the monotonic clock alone:
// a step of the wall clock is picked up within this time.
const reanchorAfter = time.Second

var _ Clock = (*RealClock)(nil)

// NewRealClock returns the wall clock.
func NewRealClock() *RealClock {
	c := &RealClock{}
	now := time.Now()
	c.anchor.Store(&clockAnchor{at: now, unixMs: now.UnixMilli()})
	return c
}

// Now returns time.Now().
func (*RealClock) Now() time.Time { return time.Now() }

// UnixMilli returns the wall clock in Unix milliseconds. It reads only the
// monotonic clock and re-reads the wall clock once a second, so a wall-clock
// step shows within a second, as it would have to a caller of time.Now.
func (c *RealClock) UnixMilli() int64 {
	a := c.anchor.Load()
	if a == nil {
		return time.Now().UnixMilli()
	}
	elapsed := time.Since(a.at)
	if elapsed < 0 || elapsed >= reanchorAfter {
		now := time.Now()
		c.anchor.Store(&clockAnchor{at: now, unixMs: now.UnixMilli()})
		return now.UnixMilli()
	}
	return a.unixMs + int64((time.Duration(a.at.Nanosecond()%1e6)+elapsed)/time.Millisecond)
}

// Sleep calls time.Sleep.
func (*RealClock) Sleep(d time.Duration) { time.Sleep(d) }

// AfterFunc calls time.AfterFunc.
func (*RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// NewTicker wraps time.NewTicker.
func (*RealClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// VirtualClock is a Clock that moves only through Set and Advance. Timers,
// tickers and sleepers whose time has come run during Advance, in time order,
// with the clock set to the instant each one was due, so a simulation that
// advances by minutes sees every tick in between at its exact time.
//
// The zero value is not usable; create one with NewVirtualClock.
type VirtualClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	pending waitHeap
}

var _ Clock = (*VirtualClock)(nil)

// NewVirtualClock returns a virtual clock reading start.
func NewVirtualClock(start time.Time) *VirtualClock {
	return &VirtualClock{now: start}
}

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// UnixMilli returns the virtual time in Unix milliseconds.
func (c *VirtualClock) UnixMilli() int64 { return c.Now().UnixMilli() }

// Advance moves the clock forward by d, running everything due on the way.
// A negative d is ignored; use Set to move the clock backwards.
func (c *VirtualClock) Advance(d time.Duration) {
	if d < 0 {
		return
	}
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	c.advanceTo(target)
}

// Set moves the clock to t. Moving forward runs everything due on the way, as
// Advance does; moving backwards runs nothing, and pending timers keep their
// absolute due times (this is how tests model a wall clock that jumps back).
func (c *VirtualClock) Set(t time.Time) {
	c.mu.Lock()
	if !t.After(c.now) {
		c.now = t
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.advanceTo(t)
}

// advanceTo fires due waiters one at a time; the lock is released around each
// callback so that callbacks may use the clock.
func (c *VirtualClock) advanceTo(target time.Time) {
	for {
		c.mu.Lock()
		if len(c.pending) == 0 || c.pending[0].due.After(target) {
			if target.After(c.now) {
				c.now = target
			}
			c.mu.Unlock()
			return
		}
		w := heap.Pop(&c.pending).(*waiter)
		if w.due.After(c.now) {
			c.now = w.due
		}
		now := c.now
		if w.period > 0 {
			w.due = w.due.Add(w.period)
			c.seq++
			w.seq = c.seq
			heap.Push(&c.pending, w)
		}
		c.mu.Unlock()
		w.fire(now)
	}
}

// Pending reports how many timers, tickers and sleepers are waiting. Tests
// use it to wait until a goroutine has gone to sleep before advancing.
func (c *VirtualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Sleep blocks until the clock has been advanced by d.
func (c *VirtualClock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	done := make(chan struct{})
	c.schedule(d, 0, func(time.Time) { close(done) })
	<-done
}

// AfterFunc calls f in its own goroutine when the clock reaches now+d.
func (c *VirtualClock) AfterFunc(d time.Duration, f func()) Timer {
	return c.schedule(d, 0, func(time.Time) { go f() })
}

// NewTicker returns a ticker firing every d of virtual time. It panics if d
// is not positive, as time.NewTicker does.
func (c *VirtualClock) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("core: non-positive interval for VirtualClock.NewTicker")
	}
	ch := make(chan time.Time, 1)
	w := c.schedule(d, d, func(t time.Time) {
		select {
		case ch <- t:
		default: // a slow receiver misses ticks, as with time.Ticker
		}
	})
	return &virtualTicker{timer: w, ch: ch}
}

func (c *VirtualClock) schedule(d, period time.Duration, fire func(time.Time)) *virtualTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	w := &waiter{due: c.now.Add(d), period: period, seq: c.seq, fire: fire, index: -1}
	heap.Push(&c.pending, w)
	return &virtualTimer{clock: c, w: w}
}

type virtualTimer struct {
	clock *VirtualClock
	w     *waiter
}

func (t *virtualTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.w.index < 0 {
		return false
	}
	heap.Remove(&c.pending, t.w.index)
	return true
}

type virtualTicker struct {
	timer *virtualTimer
	ch    chan time.Time
}

func (t *virtualTicker) C() <-chan time.Time { return t.ch }
func (t *virtualTicker) Stop()               { t.timer.Stop() }

type waiter struct {
	due    time.Time
	period time.Duration
	seq    uint64 // FIFO among waiters due at the same instant
	fire   func(time.Time)
	index  int
}

type waitHeap []*waiter

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *waitHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.index = -1
	*h = old[:n-1]
	return w
}
