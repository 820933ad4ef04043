package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
	"github.com/sentinel-top/sentinel-top/sim"
)

// The demo at 20x: a websocket client dialing one of its targets gets
// hello, rules, then buckets with traffic; Close leaves no goroutine.
func TestDemoServesStreams(t *testing.T) {
	defer goleak.VerifyNone(t)
	began := time.Now()
	d, err := sim.StartDemo(context.Background(), nil, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	virtualBegan, wallBegan := d.Now(), time.Now()
	targets := d.Targets()
	if len(targets) != len(sim.DemoScenario().Instances) {
		t.Fatalf("%d targets for %d instances", len(targets), len(sim.DemoScenario().Instances))
	}
	conn, _, err := websocket.DefaultDialer.Dial(targets[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	dec := wire.NewDecoder(wire.Limits{})
	var kinds []wire.Kind
	busy := 0
	var lastStart int64
	for busy < 3 {
		_, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("after %v: %v", kinds, err)
		}
		m, err := dec.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.Kind())
		if b, ok := m.(*wire.Buckets); ok && len(b.Items) > 0 {
			if b.Instance != "gateway-1" || b.Items[0].Start <= lastStart {
				t.Fatalf("bucket %+v after start %d", b, lastStart)
			}
			lastStart = b.Items[0].Start
			busy++
		}
	}
	if len(kinds) < 5 || kinds[0] != wire.KindHello || kinds[1] != wire.KindRules {
		t.Fatalf("stream began %v", kinds)
	}
	// The virtual clock runs 20 times faster than the wall clock, never
	// faster: it catches up every tick, and a machine too busy to run the
	// fleet that fast (the race detector, a loaded CI host) slows it, which
	// is checked only without -race.
	virtual := d.Now().Sub(virtualBegan)
	if speed := float64(virtual) / float64(time.Since(began)); speed > 20.5 {
		t.Errorf("virtual clock ran %.1f times as fast as the wall clock, want at most 20", speed)
	}
	if speed := float64(virtual) / float64(time.Since(wallBegan)); !racetest.Enabled && speed < 10 {
		t.Errorf("virtual clock ran %.1f times as fast as the wall clock, want about 20", speed)
	}
	conn.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// Canceling the demo's context stops it as Close does; the client sees bye.
func TestDemoStopsWithItsContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := sim.StartDemo(ctx, sim.DemoScenario(), 50)
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := websocket.DefaultDialer.Dial(d.Targets()[5], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	dec := wire.NewDecoder(wire.Limits{})
	read := func() wire.Message {
		_, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		m, err := dec.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		return wire.Clone(m)
	}
	if m := read(); m.Kind() != wire.KindHello || m.Head().Instance != "order-2" {
		t.Fatalf("first message %+v", m)
	}
	cancel()
	select {
	case <-d.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the demo did not stop with its context")
	}
	for {
		if m := read(); m.Kind() == wire.KindBye {
			break
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
