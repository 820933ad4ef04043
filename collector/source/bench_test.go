package source

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The collector's path from a connection's bytes to its store, as
// collector's BenchmarkIngestFleet drives its store alone (the fleet's
// frames built the same way).

// benchFrame builds a buckets frame of n resources for instance at start.
func benchFrame(instance string, names []string, start int64) *wire.Buckets {
	b := &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: instance}, BucketMs: 500}
	for i, name := range names {
		var h [core.HistogramSlots]int64
		h[4], h[5], h[7] = 5, 4, 1+int64(i%3)
		b.Items = append(b.Items, wire.BucketItem{Resource: name, Start: start, Metrics: core.Metrics{Pass: 10 + int64(i%3), Block: int64(i % 2), Complete: 10 + int64(i%3), Error: int64(i % 4), Slow: 1 + int64(i%3), RtSum: 600, RtMin: 11, RtMax: 180, Concurrency: 2, Hist: h}, HasHist: true})
	}
	return b
}

func benchNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("GET:http://svc-%d/api/resource/%d", i%17, i)
	}
	return names
}

func benchHello(c *collector.Collector, instance, app string) {
	c.Ingest("bench", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: instance}, App: app, StartedAt: t0ms, BucketMs: 500})
	c.Ingest("bench", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: instance}, Version: "v1",
		Breakers: []core.BreakerRule{{Resource: "GET:http://svc-0/api/resource/0", Strategy: core.SlowRequestRatio,
			RetryTimeoutMs: 10000, StatIntervalMs: 1000, MaxAllowedRtMs: 200, Threshold: 0.5, MinRequestAmount: 20}}})
}

// BenchmarkFleetPath is the collector's side of `sentinel-top bench` in one
// goroutine, without its sockets or scheduler: each connection of a fleet
// (a stream with its own Decoder on the collector's name pool, its rate
// limit and its target's status) takes its instance's next buckets frame
// of 20 items in turn, in 10 apps, one resource under a breaker, and a
// snapshot is published every fleet/2 frames: 4 a second for a fleet
// sending 2 frames a second each, as the dashboard publishes. The
// collector's clock moves 500 ms a round of the fleet. An op is one frame
// (20 items) through message, decoding, ingest and its share of the
// snapshots; the frames are encoded outside the time measured, into one
// buffer each as a read leaves them in a poller's.
func BenchmarkFleetPath(b *testing.B) {
	for _, fleet := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("instances=%d", fleet), func(b *testing.B) {
			const resources = 20
			clock := core.NewVirtualClock(time.UnixMilli(t0ms))
			c := collector.New(collector.Options{MaxMemory: 4 << 30, Clock: clock})
			d := &dialer{sink: c, opts: DialOptions{Clock: clock}.withDefaults(), clock: clock}
			names := benchNames(resources)
			streams := make([]*stream, fleet)
			insts := make([]string, fleet)
			for i := range streams {
				insts[i] = fmt.Sprintf("bench-%05d", i)
				benchHello(c, insts[i], fmt.Sprintf("app-%d", i%10))
				streams[i] = d.newStream(Target{Name: insts[i]}, &targetState{TargetRecord: &feed.TargetRecord{}}, c.Bound(insts[i]))
			}
			f := newFleetRounds(insts, names)
			f.drive(b, func(end int64) { clock.Set(time.UnixMilli(end)) }, func(i int) {
				if err := streams[i].message(websocket.TextMessage, f.bufs[i]); err != nil {
					b.Fatal(err)
				}
				if (i+1)%(fleet/2) == 0 {
					c.Publish()
				}
				if i == fleet-1 && f.round == warmRounds { // the warm rounds' end
					if s := c.Publish(); s.Instances != fleet || s.Rejected != 0 {
						b.Fatalf("%d instances listed, %d messages rejected", s.Instances, s.Rejected)
					}
				}
			})
			b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N*resources), "µs/item")
		})
	}
}

// fleetRounds encodes a fleet's buckets frames a round at a time: each
// instance's next 500 ms bucket of the same items, into a buffer of its
// own (as a read leaves a frame in a poller's).
type fleetRounds struct {
	insts []string
	frame *wire.Buckets
	bufs  [][]byte
	round int64
}

func newFleetRounds(insts, names []string) *fleetRounds {
	return &fleetRounds{insts: insts, frame: benchFrame("", names, 0), bufs: make([][]byte, len(insts))}
}

// next encodes the next round and returns its end, Unix ms.
func (f *fleetRounds) next() int64 {
	start := t0ms + f.round*500
	f.frame.Ts = start + 500
	for k := range f.frame.Items {
		f.frame.Items[k].Start = start
	}
	for i, name := range f.insts {
		f.frame.Instance = name
		f.bufs[i] = wire.AppendBuckets(f.bufs[i][:0], f.frame)
	}
	f.round++
	return start + 500
}

// warmRounds is the minute of rounds drive sends first: every ring has
// wrapped, and triage holds what it holds at steady state.
const warmRounds = 120

// drive sends warmRounds rounds, then one frame an op, each instance's in
// turn; a round is encoded outside the time measured, and tick (when set)
// told of its end first.
func (f *fleetRounds) drive(b *testing.B, tick func(end int64), send func(i int)) {
	round := func() {
		if end := f.next(); tick != nil {
			tick(end)
		}
	}
	for range warmRounds {
		round()
		for i := range f.insts {
			send(i)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % len(f.insts)
		if k == 0 {
			b.StopTimer()
			round()
			b.StartTimer()
		}
		send(k)
	}
}
