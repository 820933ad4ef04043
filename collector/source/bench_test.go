package source

import (
	"fmt"
	"hash/maphash"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/fleetbench"
)

// The collector's path from a connection's bytes to its store, as
// collector's BenchmarkIngestFleet drives its store alone (the fleet's
// frames built the same way).

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
			d := &dialer{sink: c, opts: DialOptions{Clock: clock}.withDefaults(), clock: clock, seed: maphash.MakeSeed()}
			names := fleetbench.Names(resources)
			streams := make([]*stream, fleet)
			insts := make([]string, fleet)
			for i := range streams {
				insts[i] = fmt.Sprintf("bench-%05d", i)
				benchHello(c, insts[i], fmt.Sprintf("app-%d", i%10))
				streams[i] = d.newStream(Target{Name: insts[i]}, &targetState{TargetRecord: &feed.TargetRecord{}}, c.Bound(insts[i]))
			}
			f := fleetbench.NewRounds(t0ms, insts, names)
			f.Drive(b, func(end int64) { clock.Set(time.UnixMilli(end)) }, func(i int) {
				if err := streams[i].message(websocket.TextMessage, f.Bufs[i]); err != nil {
					b.Fatal(err)
				}
				if (i+1)%(fleet/2) == 0 {
					c.Publish()
				}
				if i == fleet-1 && f.Round == fleetbench.WarmRounds { // the warm rounds' end
					if s := c.Publish(); s.Instances != fleet || s.Rejected != 0 {
						b.Fatalf("%d instances listed, %d messages rejected", s.Instances, s.Rejected)
					}
				}
			})
			b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N*resources), "µs/item")
		})
	}
}
