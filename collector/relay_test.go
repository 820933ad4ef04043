package collector

import (
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestRelayDownHidesNotGone: the instances read through a server (the
// Prometheus source) stay listed when the server goes down and they fall
// silent, their breaker states unknown, and show again with its data;
// while the server is up, silence past StaleAfter is leaving, as for any
// instance.
func TestRelayDownHidesNotGone(t *testing.T) {
	for _, serverDown := range []bool{true, false} {
		clock := core.NewVirtualClock(time.UnixMilli(t0ms))
		c := New(Options{Clock: clock, StaleAfter: 10 * time.Second})
		const place = "prometheus http://127.0.0.1:9090"
		rec := feed.NewTargetRecord(feed.TargetStatus{Name: place, State: feed.TargetUp, Since: t0ms})
		c.AddTargets(rec)
		c.Hello(place, &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "checkout/h/1"}, App: "checkout",
			SDK: "prometheus/sentinel-golang", BucketMs: 1000}, feed.Origin{Polled: true, StatesUnknown: true, RTUnknown: true, Relayed: true})
		c.Ingest(place, &wire.State{Header: wire.Header{Ts: t0ms + 500, Instance: "checkout/h/1"}, Resource: "r",
			From: core.Closed, To: core.Open, Inferred: true})
		for k := int64(0); k < 3; k++ {
			clock.Set(time.UnixMilli(t0ms + (k+1)*1000))
			c.Ingest(place, &wire.Buckets{Header: wire.Header{Ts: t0ms + (k+1)*1000, Instance: "checkout/h/1"}, BucketMs: 1000,
				Items: []wire.BucketItem{{Resource: "r", Start: t0ms + k*1000, Metrics: core.Metrics{Pass: 5, Block: 1}}}})
		}
		if s := c.Publish(); s.Instances != 1 || len(s.Rows) != 1 || s.Rows[0].Breakers.Open != 1 {
			t.Fatalf("before: %d instances, rows %+v; want 1, OPEN", s.Instances, s.Rows)
		}
		if serverDown {
			rec.Update(func(st *feed.TargetStatus) {
				st.State, st.Since, st.DownSince = feed.TargetDown, t0ms+3500, t0ms+3500
			})
		}
		clock.Set(time.UnixMilli(t0ms + 30_000))
		s := c.Publish()
		if !serverDown {
			if s.Instances != 0 {
				t.Errorf("server up, instance silent 27 s: %d instances, want it gone", s.Instances)
			}
			continue
		}
		if s.Instances != 1 || len(s.Rows) != 1 || s.Rows[0].Instances != 1 {
			t.Fatalf("server down: %d instances, rows %+v; want the instance still listed", s.Instances, s.Rows)
		}
		if b := s.Rows[0].Breakers; b.Unknown != 1 || b.Open != 0 {
			t.Errorf("server down: breakers %+v, want the state unknown", b)
		}
		// The server back, and its data: the state known again.
		rec.Update(func(st *feed.TargetStatus) { st.State, st.Since, st.DownSince = feed.TargetUp, t0ms+30_000, 0 })
		c.Ingest(place, &wire.Buckets{Header: wire.Header{Ts: t0ms + 30_000, Instance: "checkout/h/1"}, BucketMs: 1000,
			Items: []wire.BucketItem{{Resource: "r", Start: t0ms + 29_000, Metrics: core.Metrics{Pass: 5}}}})
		if s := c.Publish(); s.Instances != 1 || s.Rows[0].Breakers.Open != 1 {
			t.Errorf("server back: %d instances, breakers %+v; want 1, OPEN", s.Instances, s.Rows[0].Breakers)
		}
	}
}
