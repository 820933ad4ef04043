package collector

import (
	"context"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// breakerToRun is a collector to Run, PublishEvery a second on the wall
// clock it returns, with one instance whose one breaker is CLOSED.
func breakerToRun() (*Collector, *core.VirtualClock) {
	wall := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms)), WallClock: wall, PublishEvery: time.Second})
	c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "gw-1"}, App: "gw", StartedAt: t0ms, BucketMs: 500})
	c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "gw-1"}, Version: "v1", Breakers: []core.BreakerRule{{
		Resource: "db", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000}}})
	c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: "gw-1"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "db", Start: t0ms, Metrics: core.Metrics{Pass: 3, Complete: 3}}}})
	return c, wall
}

// breakerRunning is breakerToRun with Run started (stopped when the test
// ends) and its first tick's snapshot, showing the breaker, published.
func breakerRunning(t *testing.T) (*Collector, *core.VirtualClock) {
	t.Helper()
	c, wall := breakerToRun()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, func() bool { return wall.Pending() == 1 }) // the ticker
	wall.Advance(time.Second)
	waitFor(t, func() bool { return c.Snapshot() != nil && len(c.Snapshot().Breakers) == 1 })
	return c, wall
}

// A breaker transition is published within PublishEvery x 2/5 of the last
// snapshot, not at the next tick: at once when that much has passed, else
// when it has.
func TestRunPublishesTransitionsSoon(t *testing.T) {
	c, wall := breakerRunning(t)
	shows := func(st core.State) bool { return c.Snapshot().Breakers[0].State == st }

	// Right after a snapshot: published once 400 ms have passed.
	c.Ingest("t", &wire.State{Header: wire.Header{Ts: t0ms + 1000, Instance: "gw-1"}, Resource: "db",
		Strategy: core.ErrorRatio, From: core.Closed, To: core.Open, Threshold: 0.5, RetryTimeoutMs: 1000})
	waitFor(t, func() bool { return wall.Pending() == 2 }) // the ticker and the wake
	wall.Advance(200 * time.Millisecond)
	// Another while the wake is armed: it waits for that wake, no other.
	c.Ingest("t", &wire.State{Header: wire.Header{Ts: t0ms + 1200, Instance: "gw-1"}, Resource: "db",
		Strategy: core.ErrorRatio, From: core.Open, To: core.HalfOpen, Threshold: 0.5, RetryTimeoutMs: 1000})
	wall.Advance(199 * time.Millisecond)
	if shows(core.Open) || shows(core.HalfOpen) || wall.Pending() != 2 {
		t.Fatalf("before 400 ms had passed: shown %v, %d wakes armed", c.Snapshot().Breakers[0].State, wall.Pending())
	}
	wall.Advance(time.Millisecond)
	waitFor(t, func() bool { return shows(core.HalfOpen) })

	// Longer after one: published at once, the clock standing still.
	wall.Advance(500 * time.Millisecond)
	c.Ingest("t", &wire.State{Header: wire.Header{Ts: t0ms + 1900, Instance: "gw-1"}, Resource: "db",
		Strategy: core.ErrorRatio, From: core.HalfOpen, To: core.Open, Threshold: 0.5, RetryTimeoutMs: 1000})
	waitFor(t, func() bool { return shows(core.Open) })
}

// waitFor waits up to 10 s in real time for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// A snapshot is published again only when it could differ: a message, or
// a target's status changing alone (its connection dropped, the clock and
// the input standing still), makes the signature differ; nothing does not.
func TestSignatureSeesWhatChanged(t *testing.T) {
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms))})
	rec := feed.NewTargetRecord(feed.TargetStatus{Name: "gw", State: feed.TargetUp})
	c.AddTargets(rec)
	var last [5]int64
	settle := func() {
		for range 3 { // a signature made in a hurry differs once more
			last = c.signature(last)
		}
	}
	settle()
	if sig := c.signature(last); sig != last {
		t.Fatalf("nothing changed, the signature did: %v -> %v", last, sig)
	}
	rec.Update(func(s *feed.TargetStatus) { s.State, s.Reconnects = feed.TargetDown, 1 })
	if sig := c.signature(last); sig == last {
		t.Fatal("a target went down alone: the signature is the same")
	}
	settle()
	c.Ingest("gw", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "gw-1"}, App: "gw", StartedAt: t0ms, BucketMs: 500})
	if sig := c.signature(last); sig == last {
		t.Fatal("a message came: the signature is the same")
	}
	settle()
	if sig := c.signature(last); sig != last {
		t.Fatalf("nothing changed since, the signature did: %v -> %v", last, sig)
	}
}

// A Run stopped while a wake was armed for a transition leaves the next
// Run told of transitions: one published within the gap, not at its tick.
func TestRunAfterARunStoppedWithAWakeArmed(t *testing.T) {
	c, wall := breakerToRun()
	state := func(at int64, from, to core.State) *wire.State {
		return &wire.State{Header: wire.Header{Ts: at, Instance: "gw-1"}, Resource: "db",
			Strategy: core.ErrorRatio, From: from, To: to, Threshold: 0.5, RetryTimeoutMs: 1000}
	}
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}
	stop := run()
	waitFor(t, func() bool { return wall.Pending() == 1 }) // the ticker
	wall.Advance(time.Second)
	waitFor(t, func() bool { return len(c.Snapshot().Breakers) == 1 })
	c.Ingest("t", state(t0ms+1000, core.Closed, core.Open))
	waitFor(t, func() bool { return wall.Pending() == 2 }) // the ticker and the wake
	stop()

	stop = run()
	defer stop()
	waitFor(t, func() bool { return wall.Pending() == 1 }) // the new Run's ticker
	c.Ingest("t", state(t0ms+1100, core.Open, core.HalfOpen))
	waitFor(t, func() bool { return wall.Pending() == 2 || c.Snapshot().Breakers[0].State == core.HalfOpen })
	wall.Advance(400 * time.Millisecond)
	waitFor(t, func() bool { return c.Snapshot().Breakers[0].State == core.HalfOpen })
}

// A tick less than half a period after a transition's snapshot is let go,
// and the next one publishes: a transition is still shown within the gap.
func TestRunLetsGoATickRightAfterASnapshot(t *testing.T) {
	c, wall := breakerRunning(t)
	seq := c.Snapshot().Seq

	// 600 ms after the tick's snapshot: the transition's is made at once.
	wall.Advance(600 * time.Millisecond)
	c.Ingest("t", &wire.State{Header: wire.Header{Ts: t0ms + 1600, Instance: "gw-1"}, Resource: "db",
		Strategy: core.ErrorRatio, From: core.Closed, To: core.Open, Threshold: 0.5, RetryTimeoutMs: 1000})
	waitFor(t, func() bool { return c.Snapshot().Seq == seq+1 })
	if st := c.Snapshot().Breakers[0].State; st != core.Open {
		t.Fatalf("the transition's snapshot shows %v", st)
	}
	// A bucket comes; the tick 400 ms after that snapshot is let go.
	c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 1700, Instance: "gw-1"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "db", Start: t0ms + 1000, Metrics: core.Metrics{Block: 4}}}})
	wall.Advance(400 * time.Millisecond)
	waitFor(t, func() bool { return wall.Pending() == 1 })
	time.Sleep(20 * time.Millisecond) // room for a snapshot that should not come
	if got := c.Snapshot().Seq; got != seq+1 {
		t.Fatalf("a tick 400 ms after a snapshot (period 1 s) published: %d snapshots since, not 1", got-seq)
	}
	// The next tick, 1.4 s after it, publishes the bucket.
	wall.Advance(time.Second)
	waitFor(t, func() bool { return c.Snapshot().Seq == seq+2 })
}
