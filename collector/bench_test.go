package collector

import (
	"fmt"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/fleetbench"
)

func benchHello(c *Collector, instance, app string) {
	c.Ingest("bench", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: instance}, App: app, StartedAt: t0ms, BucketMs: 500})
	c.Ingest("bench", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: instance}, Version: "v1",
		Breakers: []core.BreakerRule{{Resource: "GET:http://svc-0/api/resource/0", Strategy: core.SlowRequestRatio,
			RetryTimeoutMs: 10000, StatIntervalMs: 1000, MaxAllowedRtMs: 200, Threshold: 0.5, MinRequestAmount: 20}}})
}

// BenchmarkIngest measures the collector's whole ingest path: decoding a
// buckets frame of 100 items, deduplication, aggregation per instance and
// per app, and the triage engine's incremental update. items/s is per core
// (the benchmark runs on one goroutine).
func BenchmarkIngest(b *testing.B) {
	c := New(Options{})
	const instances = 20
	names := fleetbench.Names(100)
	for i := 0; i < instances; i++ {
		benchHello(c, fmt.Sprintf("gateway-%d", i), "gateway")
	}
	dec := wire.NewDecoder(wire.Limits{})
	frame := fleetbench.Frame("", names, 0)
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		frame.Instance = fmt.Sprintf("gateway-%d", i%instances)
		start := t0ms + int64(i/instances)*500
		frame.Ts = start + 500
		for k := range frame.Items {
			frame.Items[k].Start = start
		}
		buf = wire.AppendBuckets(buf[:0], frame)
		b.StartTimer()
		m, err := dec.Decode(buf)
		if err != nil {
			b.Fatal(err)
		}
		c.Ingest("bench", m)
	}
	b.ReportMetric(float64(b.N*len(names))/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkPublish measures one snapshot of a fleet of instances x 20
// resources (every resource under a breaker), as Run makes 4 a second. The
// scale goal: 200,000 series in 50 ms. "idle" publishes with nothing new
// since the last snapshot; "live" as a live fleet does: between two
// snapshots (250 ms apart) half the instances send their next 500 ms
// bucket of every resource, so every series changes every other snapshot
// (and moves its data end to the next second every fourth). The ingest
// between snapshots is outside the time measured; live reports it apart
// (ingest-ms/op), so that work moved from a snapshot to ingest shows.
func BenchmarkPublish(b *testing.B) {
	for _, instances := range []int{500, 2500, 10000} {
		c, names := publishFleet(instances)
		b.Run(fmt.Sprintf("series=%d/idle", instances*20), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Publish()
			}
		})
		// The rounds go on from one call of the function to the next (its
		// calibration and -count run it again on the same collector):
		// buckets sent again would be duplicates, and cost nothing.
		round := 0
		b.Run(fmt.Sprintf("series=%d/live", instances*20), func(b *testing.B) {
			b.ReportAllocs()
			frames := make([]*wire.Buckets, instances)
			for i := range frames {
				frames[i] = fleetbench.Frame(fmt.Sprintf("gw-%d", i), names, 0)
			}
			var ingest time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				// Each instance sends its next bucket every other snapshot.
				i := round
				round++
				start := t0ms + int64(20+i/2)*500
				began := time.Now()
				for j := i % 2; j < instances; j += 2 {
					f := frames[j]
					f.Ts = start + 500
					for n := range f.Items {
						f.Items[n].Start = start
					}
					c.Ingest("bench", f)
				}
				ingest += time.Since(began)
				b.StartTimer()
				c.Publish()
			}
			b.ReportMetric(float64(ingest)/1e6/float64(b.N), "ingest-ms/op")
		})
	}
}

// BenchmarkPublishTargets is a snapshot of a dialed fleet as bench runs
// it: 2,000 targets, each streaming one instance of 20 resources, their
// status records updated between snapshots as their connections do.
func BenchmarkPublishTargets(b *testing.B) {
	const instances = 2000
	c, _ := publishFleet(instances)
	records := make([]*feed.TargetRecord, instances)
	for i := range records {
		records[i] = feed.NewTargetRecord(feed.TargetStatus{Name: fmt.Sprintf("10.0.%d.%d:8719", i/250, i%250),
			State: feed.TargetUp, Instance: fmt.Sprintf("gw-%d", i)})
	}
	c.AddTargets(records...)
	// Every target sends between two snapshots (4 a second, each target
	// 2 messages a second), or a fifth of them (10 snapshots a second, as
	// while breakers trip).
	for _, every := range []int{1, 5} {
		b.Run(fmt.Sprintf("changed=1/%d", every), func(b *testing.B) {
			b.ReportAllocs()
			round := 0
			for b.Loop() {
				for i := round % every; i < len(records); i += every {
					records[i].Tally(func(s *feed.TargetStatus) { s.Messages++; s.Bytes += 400; s.Items += 20 })
				}
				round++
				c.publish(true) // as Run makes them
			}
		})
	}
}

// publishFleet is a collector holding instances x 20 series, every
// resource under a breaker, with 10 s of data.
func publishFleet(instances int) (*Collector, []string) {
	c := New(Options{MaxMemory: 4 << 30})
	names := fleetbench.Names(20)
	var rules []core.BreakerRule
	for _, n := range names {
		rules = append(rules, core.BreakerRule{Resource: n, Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000,
			StatIntervalMs: 1000, MaxAllowedRtMs: 200, Threshold: 0.5, MinRequestAmount: 20})
	}
	for i := range instances {
		name := fmt.Sprintf("gw-%d", i)
		benchHello(c, name, fmt.Sprintf("app-%d", i%50))
		c.Ingest("bench", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: name}, Version: "v2", Breakers: rules})
	}
	for k := int64(0); k < 20; k++ {
		for i := range instances {
			c.Ingest("bench", fleetbench.Frame(fmt.Sprintf("gw-%d", i), names, t0ms+k*500))
		}
	}
	return c, names
}

// BenchmarkIngestFleet is BenchmarkIngest as a fleet's collector sees it:
// 2,000 instances x 20 resources (in 10 apps, as bench runs them), each
// instance's buckets frame in turn and every instance's next bucket every
// round, so that a series' state (40,000 of them, about 120 MB with
// triage's) has left the core's caches when its next item comes. An op is
// one frame of 20 items, decoded and ingested; items/s is per core. Each
// round's frames are encoded before it, outside the time measured.
func BenchmarkIngestFleet(b *testing.B) {
	const instances, resources = 2000, 20
	c := New(Options{MaxMemory: 4 << 30})
	names := fleetbench.Names(resources)
	insts := make([]string, instances)
	for i := range insts {
		insts[i] = fmt.Sprintf("gw-%d", i)
		benchHello(c, insts[i], fmt.Sprintf("app-%d", i%10))
	}
	dec := wire.NewDecoder(wire.Limits{})
	f := fleetbench.NewRounds(t0ms, insts, names)
	f.Drive(b, nil, func(i int) {
		m, err := dec.Decode(f.Bufs[i])
		if err != nil {
			b.Fatal(err)
		}
		if !c.Ingest("bench", m) {
			b.Fatal("frame refused")
		}
	})
	b.ReportMetric(float64(b.N*resources)/b.Elapsed().Seconds(), "items/s")
}
