package agent

import (
	"cmp"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

func pid() int { return os.Getpid() }

// shipLoop sends every closed bucket once, right after it closes, and keeps
// it in the backlog. Each wake-up is a timer set for the next bucket
// boundary, armed before shipping so that no boundary is missed however the
// clock moves meanwhile.
func (a *Agent) shipLoop(wake chan struct{}, timer core.Timer) {
	defer a.wg.Done()
	for {
		select {
		case <-a.closed:
			timer.Stop()
			return
		case <-wake:
			timer = a.armShipTimer(wake)
			a.Ship()
		}
	}
}

// Ship sends every bucket closed since the last call and keeps it in the
// backlog. The agent calls it at each bucket boundary unless
// Options.ManualShip is set.
func (a *Agent) Ship() {
	a.shipMu.Lock()
	defer a.shipMu.Unlock()
	a.nextShip = a.ship(a.nextShip)
}

// armShipTimer sets a timer for the next bucket boundary.
func (a *Agent) armShipTimer(wake chan struct{}) core.Timer {
	now := a.clock.UnixMilli()
	boundary := now - now%a.bucketMs + a.bucketMs
	return a.clock.AfterFunc(time.Duration(boundary-now)*time.Millisecond, func() {
		select {
		case wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	})
}

// ship sends the buckets from next up to the current one (excluded) and
// returns the next bucket to ship.
func (a *Agent) ship(next int64) int64 {
	defer a.recoverPanic()
	now := a.clock.UnixMilli()
	cur := now - now%a.bucketMs
	if oldest := cur - core.ResourceIntervalMs + a.bucketMs; next < oldest {
		next = oldest // older buckets have been overwritten in the ring
	}
	if next > cur {
		next = cur // the clock went backwards: resume from here
	}
	resources := a.guard.Resources()
	slices.SortFunc(resources, func(x, y *core.Resource) int { return cmp.Compare(x.Name(), y.Name()) })
	for start := next; start < cur; start += a.bucketMs {
		frames := a.collect(start, now, resources)
		a.stream.Locked(func() {
			a.backlog.add(frames)
			for _, f := range frames {
				a.stream.Broadcast(f)
			}
		})
	}
	return cur
}

// collect builds the buckets frames for the bucket starting at start: one
// item per resource with any activity in it, sorted by name, split into
// frames of at most ItemsPerFrame items; a frame with no items is a heartbeat.
func (a *Agent) collect(start, now int64, resources []*core.Resource) []*wsstream.Frame {
	var items []wire.BucketItem
	for _, r := range resources {
		inflight := r.Concurrency()
		b, ok := r.Stat().Lookup(start)
		var m core.Metrics
		if ok {
			m = b.Snapshot()
		}
		if m.Pass == 0 && m.Block == 0 && m.Complete == 0 && inflight <= 0 {
			continue
		}
		// wire v1: concurrency is what was in flight when the bucket closed.
		m.Concurrency = inflight
		items = append(items, wire.NewBucketItem(r.Name(), start, m, true))
	}
	var frames []*wsstream.Frame
	for {
		n := min(len(items), a.opts.ItemsPerFrame)
		f, err := encodeFrame(&wire.Buckets{
			Header:   wire.Header{Ts: now, Instance: a.opts.Instance},
			BucketMs: a.bucketMs,
			Items:    items[:n:n],
		})
		if err == nil {
			frames = append(frames, f)
		}
		items = items[n:]
		if len(items) == 0 {
			return frames
		}
	}
}

// backlog keeps the buckets frames of the last periods for new connections.
type backlog struct {
	mu      sync.Mutex
	periods [][]*wsstream.Frame // ring, oldest first from head
	head    int
	n       int
}

func newBacklog(periods int) *backlog {
	return &backlog{periods: make([][]*wsstream.Frame, max(periods, 1))}
}

func (b *backlog) add(frames []*wsstream.Frame) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := (b.head + b.n) % len(b.periods)
	if b.n == len(b.periods) {
		b.head = (b.head + 1) % len(b.periods)
	} else {
		b.n++
	}
	b.periods[i] = frames
}

// frames returns the held frames, oldest first, leaving out heartbeats.
func (b *backlog) frames() []*wsstream.Frame {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*wsstream.Frame
	for k := 0; k < b.n; k++ {
		for _, f := range b.periods[(b.head+k)%len(b.periods)] {
			if bm, ok := f.Msg.(*wire.Buckets); ok && len(bm.Items) == 0 {
				continue
			}
			out = append(out, f)
		}
	}
	return out
}
