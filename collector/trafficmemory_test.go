package collector

import (
	"fmt"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/fleetbench"
)

// The traffic kept to replay plans is shown apart in the snapshot and on
// /metrics (of="traffic"), within what the budget charges: it grows with
// the input, reaches its bound (an eighth of MaxMemory by default) and
// stays there as it turns over; with none kept, both are 0.
func TestTrafficKeptIsShown(t *testing.T) {
	const maxMemory = 4 << 20
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms)), MaxMemory: maxMemory})
	names := fleetbench.Names(20)
	for i := range 10 {
		benchHello(c, fmt.Sprintf("gw-%d", i), "app")
	}
	var last int64
	grew, full := false, 0
	for k := range int64(400) {
		for i := range 10 {
			c.Ingest("bench", fleetbench.Frame(fmt.Sprintf("gw-%d", i), names, t0ms+k*500))
		}
		s := c.Publish()
		if s.MemoryTrafficBound != maxMemory/8 {
			t.Fatalf("bound %d, want an eighth of %d", s.MemoryTrafficBound, maxMemory)
		}
		if s.MemoryTraffic > s.MemoryTrafficBound || s.MemoryTraffic > s.MemoryUsed {
			t.Fatalf("round %d: traffic %d over its bound %d or over what is charged %d", k, s.MemoryTraffic, s.MemoryTrafficBound, s.MemoryUsed)
		}
		grew = grew || s.MemoryTraffic > last && last > 0
		if s.MemoryTraffic >= s.MemoryTrafficBound-4096 {
			full++
		}
		if k%40 == 39 { // /metrics every 40th round: gathering a registry is slow under -race
			if got := scrape(t, c)["sentinel_top_memory_bytes{of=traffic}"]; got != float64(s.MemoryTraffic) {
				t.Fatalf("round %d: /metrics shows %v bytes of traffic, the snapshot %d", k, got, s.MemoryTraffic)
			}
		}
		last = s.MemoryTraffic
	}
	if !grew || full < 100 {
		t.Fatalf("the traffic kept grew %v, was at its bound in %d snapshots of 400: the case proves nothing", grew, full)
	}

	off := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms)), MaxMemory: maxMemory, Triage: triage.Config{TraceBytes: -1}})
	benchHello(off, "gw-0", "app")
	off.Ingest("bench", fleetbench.Frame("gw-0", names, t0ms))
	if s := off.Publish(); s.MemoryTraffic != 0 || s.MemoryTrafficBound != 0 {
		t.Fatalf("none kept: traffic %d of %d", s.MemoryTraffic, s.MemoryTrafficBound)
	}
}
