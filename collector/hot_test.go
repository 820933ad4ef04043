package collector

import (
	"context"
	"errors"
	"fmt"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"math"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestHotValuesFromAnAgent: an agent with a hot-parameter rule, dialed over
// a loopback websocket: the detail gives the rule and the hottest values
// with their rates per second and the rule that limits each.
func TestHotValuesFromAnAgent(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	fa := startFleetAgent(t, clock, "order-1")
	a := fa.a
	rule := core.HotParamRule{Resource: "query-order", MetricType: core.HotParamQPS, Threshold: 200, DurationInSec: 1,
		SpecificItems: map[string]int64{"vip-9": 1000}}
	if err := a.LoadRules(nil, nil, rule); err != nil {
		t.Fatal(err)
	}
	c := New(Options{RateWindow: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	go func() {
		dial(ctx, c, []source.Target{{Name: fa.addr, URL: "ws://" + fa.addr + agent.StreamPath}}, source.DialOptions{Seed: 1})
		close(dialed)
	}()
	defer func() { cancel(); <-dialed }()
	eventually(t, "connected", func() error {
		if a.Stats().Readers == 0 {
			return errors.New("no reader")
		}
		return nil
	})

	// 6 s of: vip-123 at 250 a second over its 200, vip-9 at 300 under its
	// own 1000, and 30 customers at 1 a second each, in 500 ms buckets.
	call := func(v string) {
		if e, err := a.Entry("query-order", v); err == nil {
			e.Exit(nil)
		} else if !errors.Is(err, core.ErrHotParam) {
			t.Fatal(err)
		}
	}
	for range 12 {
		for i := range 150 {
			if i < 125 {
				call("vip-123")
			}
			call("vip-9")
			if i < 15 {
				call(fmt.Sprintf("c-%02d", i+15*(int(clock.UnixMilli()/500)%2)))
			}
		}
		clock.Advance(500 * time.Millisecond)
		a.Ship()
	}
	var d *Detail
	eventually(t, "hot values in the detail", func() error {
		now := clock.UnixMilli()
		if tp, _ := c.Totals("order-1", "query-order"); tp.Pass+tp.Block != 12*(125+150+15) {
			return fmt.Errorf("%d entries", tp.Pass+tp.Block)
		}
		d = c.Detail("gateway", "query-order", now-60000, now)
		return nil
	})
	if len(d.Hot) != wire.MaxHotValues+1 || len(d.HotRules) != 1 || !d.HotRules[0].Equal(&rule) || len(d.Instances) != 1 || len(d.Instances[0].Params) != 1 || d.HotUnknown != "" {
		t.Fatalf("hot %+v, rules %+v, instances %+v, unknown %q", d.Hot, d.HotRules, d.Instances, d.HotUnknown)
	}
	near := func(x, want float64) bool { return math.Abs(x-want) < 1e-9 }
	vip9, vip123, other := d.Hot[0], d.Hot[1], d.Hot[wire.MaxHotValues]
	if vip9.Value != "vip-9" || !near(vip9.PassQPS, 300) || vip9.BlockQPS != 0 || vip9.Rule != 0 || vip9.Limit != 1000 || !vip9.Specific {
		t.Fatalf("vip-9: %+v", vip9)
	}
	// Each of its 250 entries a second is counted, some of them blocked
	// (sentinel-golang's token bucket refills per elapsed time: 145 pass).
	if vip123.Value != "vip-123" || !near(vip123.PassQPS+vip123.BlockQPS, 250) || vip123.BlockQPS < 50 || vip123.Rule != 0 ||
		vip123.Limit != 200 || vip123.Specific {
		t.Fatalf("vip-123: %+v", vip123)
	}
	// 30 customers at 1 a second: 6 listed (by value, as their counts tie)
	// and the other 24 summed.
	if c0 := d.Hot[2]; c0.Value != "c-00" || !near(c0.PassQPS, 1) || other.Value != wire.HotOther || !near(other.PassQPS, 24) || other.Rule != 0 {
		t.Fatalf("customers %+v, other %+v", c0, other)
	}
}

// TestHotValuesChargedToTheBudget: a series' hot values are kept only
// within the memory budget; refused, they are counted, and the series'
// counts go on.
func TestHotValuesChargedToTheBudget(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	// No traffic log for plans: the budget is set to the byte below.
	c := New(Options{Clock: clock, Triage: triage.Config{TraceBytes: -1}})
	c.Ingest("a", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "i"}, App: "x", BucketMs: 500})
	c.Ingest("a", bucketsAt("i", t0ms, t0ms-500, 1))
	c.mu.Lock()
	// The model's budget (ModelShare quarters of MaxMemory) 1 to 3 bytes
	// short of the ring.
	c.opts.MaxMemory = (c.memUsed + c.streamShare + c.hotRingBytes() - 1) / ModelShare * 4
	c.mu.Unlock()
	hot := func(ts, start int64) *wire.Buckets {
		b := bucketsAt("i", ts, start, 3)
		b.Items[0].Hot = []wire.HotItem{{Value: "v", Pass: 3}}
		return b
	}
	c.Ingest("a", hot(t0ms+500, t0ms))
	if c.insts["i"].series["r"].hot != nil {
		t.Fatal("hot values kept past the budget")
	}
	got := map[string]int64{}
	for _, o := range c.Publish().Overflow {
		got[o.Reason] = o.Count
	}
	if tp, _ := c.Totals("i", "r"); got[ReasonMaxMemory] != 1 || tp.Pass != 4 {
		t.Fatalf("overflow %v, pass %d", got, tp.Pass)
	}
	c.mu.Lock()
	c.opts.MaxMemory += 4 // 3 bytes more for the model: the ring fits
	before := c.memUsed
	c.mu.Unlock()
	c.Ingest("a", hot(t0ms+1000, t0ms+500))
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.insts["i"].series["r"]; s.hot == nil || c.memUsed != before+c.hotRingBytes() {
		t.Fatalf("hot ring %v, %d bytes used, want %d", s.hot, c.memUsed, before+c.hotRingBytes())
	}
	c.releaseSeries(c.insts["i"])
	if c.memUsed != before-c.seriesBytes() {
		t.Fatalf("released: %d bytes used, want %d", c.memUsed, before-c.seriesBytes())
	}
}
