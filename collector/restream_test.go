package collector

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// TestCollectorOfCollectors: two collectors each dial half of the agents
// and re-serve their merged streams; a third dials the two and must count
// exactly what the agents admitted.
func TestCollectorOfCollectors(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	resources := []string{"db", "cache"}
	var agents []*fleetAgent
	for i := 0; i < 4; i++ {
		agents = append(agents, startFleetAgent(t, clock, fmt.Sprintf("gateway-%d", i)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mids []source.Target
	var stop []func()
	for half := 0; half < 2; half++ {
		c := New(Options{})
		var targets []source.Target
		for _, fa := range agents[2*half : 2*half+2] {
			targets = append(targets, source.Target{Name: fa.addr, URL: "ws://" + fa.addr + source.DefaultStreamPath})
		}
		addr, closeSrv := serveRestream(t, c.Restream(RestreamOptions{}))
		dialed := make(chan struct{})
		go func() { dial(ctx, c, targets, source.DialOptions{Seed: 3}); close(dialed) }()
		stop = append(stop, func() { closeSrv(); <-dialed })
		mids = append(mids, source.Target{Name: addr, URL: "ws://" + addr + source.DefaultStreamPath})
	}
	top := New(Options{})
	dialed := make(chan struct{})
	go func() { dial(ctx, top, mids, source.DialOptions{Seed: 4}); close(dialed) }()
	defer func() {
		cancel()
		<-dialed
		for _, f := range stop {
			f()
		}
	}()

	for k := 0; k < 8; k++ {
		for _, fa := range agents {
			fa.traffic(resources, 5+k)
		}
		clock.Advance(500 * time.Millisecond)
		for _, fa := range agents {
			fa.a.Ship()
		}
	}
	eventually(t, "totals through two collectors", func() error {
		for i, fa := range agents {
			name := fmt.Sprintf("gateway-%d", i)
			for _, r := range resources {
				tpass, ok := top.Totals(name, r)
				pass, block, errs := tpass.Pass, tpass.Block, tpass.Error
				if !ok || pass != fa.pass[r] || block != fa.block[r] || errs != fa.errs[r] {
					return fmt.Errorf("%s %s: top collector %d/%d/%d, agent %d/%d/%d", name, r, pass, block, errs, fa.pass[r], fa.block[r], fa.errs[r])
				}
			}
		}
		return nil
	})
	snap := top.Publish()
	if snap.Instances != 4 || snap.Apps != 1 {
		t.Fatalf("top collector sees %d instances in %d apps", snap.Instances, snap.Apps)
	}
}

// serveRestream serves srv at source.DefaultStreamPath on a loopback port, until
// closeSrv.
func serveRestream(t *testing.T, srv *wsstream.Server) (addr string, closeSrv func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(source.DefaultStreamPath, srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln, mux) }()
	return ln.Addr().String(), func() { srv.Close(nil); <-served }
}

// TestRestreamBacklogBoundedInBytes: a burst of large buckets messages, all
// accepted within a second (so neither the minute nor the frame count cuts
// them), leaves the re-served backlog under its byte bound, holding encoded
// frames only, and a new reader receives at most that much history.
func TestRestreamBacklogBoundedInBytes(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms + 1000))
	c := New(Options{Clock: clock})
	const bound = 2 << 20
	c.Restream(RestreamOptions{BacklogBytes: bound})
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("GET:http://hostile/%0200d", i)
	}
	var published int
	for i := 0; i < 300; i++ {
		instance := fmt.Sprintf("hostile-%d", i)
		c.Ingest("burst", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: instance}, App: "burst", StartedAt: t0ms, BucketMs: 500})
		b := &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: instance}, BucketMs: 500}
		for _, n := range names {
			b.Items = append(b.Items, wire.NewBucketItem(n, t0ms, core.Metrics{Pass: 1, Complete: 1}, true))
		}
		if !c.Ingest("burst", b) {
			t.Fatalf("buckets of %s refused", instance)
		}
		published += len(wire.AppendBuckets(nil, b))
	}
	rs := c.restream
	var held, frames int
	rs.srv.Locked(func() {
		for _, h := range rs.backlog {
			held += len(h.f.Data)
			frames++
			if h.f.Msg != nil {
				t.Errorf("a backlog frame keeps its decoded message")
			}
		}
		var state int64
		for _, f := range rs.hello {
			state += cost(f.f)
		}
		if got := rs.bytes.Load(); got != state+int64(held+frames*heldOverhead) {
			t.Errorf("backlog accounts %d bytes, holds %d in %d frames and %d of hellos", got, held, frames, state)
		}
	})
	t.Logf("%d KiB accepted in a burst; the backlog keeps the newest %d frames, %d KiB", published>>10, frames, held>>10)
	if published < 4*bound || rs.bytes.Load() > bound || frames == 0 {
		t.Fatalf("backlog of %d bytes in %d frames after %d bytes published, bound %d", rs.bytes.Load(), frames, published, bound)
	}
	sub, err := rs.srv.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var history int
	for {
		data, ok := sub.Next()
		if !ok {
			break
		}
		if strings.Contains(string(data[:min(len(data), 64)]), `"kind":"buckets"`) {
			history += len(data)
		}
	}
	if history == 0 || history > bound {
		t.Fatalf("a new reader receives %d bytes of buckets history, bound %d", history, bound)
	}
}

// TestRestreamReaderGetsEachFrameOnce: a reader that arrives between an
// instance's hello and its rules gets the rules once, live, not also from
// the instances' hello and rules it reads first (TestServeEndpoints saw
// three rules frames for two instances); one that arrives after both gets
// them from there, each instance's latest hello before its rules.
func TestRestreamReaderGetsEachFrameOnce(t *testing.T) {
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(1764460800000))})
	c.Restream(RestreamOptions{})
	rs := c.restream
	ts := int64(1764460800000)
	publish := func(m wire.Message) {
		c.teeMu.Lock()
		rs.publish(m, ts)
		c.teeMu.Unlock()
	}
	join := func() (next func() *wsstream.Frame) {
		rs.srv.Locked(func() { next = rs.follow() })
		return next
	}
	kinds := func(next func() *wsstream.Frame) string {
		var out []string
		for f := next(); f != nil; f = next() {
			m, err := wire.Decode(f.Data)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(m.Kind())+" "+m.Head().Instance)
		}
		return strings.Join(out, ", ")
	}
	hello := func(inst string, started int64) *wire.Hello {
		return &wire.Hello{Header: wire.Header{Ts: ts, Instance: inst}, App: "app", StartedAt: started, BucketMs: 500}
	}
	rules := func(inst string) *wire.Rules {
		return &wire.Rules{Header: wire.Header{Ts: ts, Instance: inst}, Version: "v1"}
	}

	publish(hello("a", ts))
	publish(rules("a"))
	publish(hello("b", ts))
	between := join() // b's rules are broadcast after it arrived
	publish(rules("b"))
	after := join()
	publish(hello("a", ts+1)) // a restarted: its new hello is broadcast
	if got, want := kinds(between), "hello a, rules a, hello b"; got != want {
		t.Errorf("a reader that arrived before b's rules read %q, want %q", got, want)
	}
	if got, want := kinds(after), "hello a, rules a, hello b, rules b"; got != want {
		t.Errorf("a reader that arrived before a's new hello read %q, want %q", got, want)
	}
}

// TestRestreamBreakerRulesWithinTheShare: what the re-served stream keeps
// to tell a changed breaker rule (a hash per breaker of each instance's
// last rules) is charged to its share: rules naming thousands of new
// breakers, message after message, keep it within its bound, and what
// does not fit is counted.
func TestRestreamBreakerRulesWithinTheShare(t *testing.T) {
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms + 1000)), MaxMemory: 1 << 30})
	const bound = 256 << 10
	c.Restream(RestreamOptions{BacklogBytes: bound})
	for i := range 4 {
		instance := fmt.Sprintf("hostile-%d", i)
		c.Ingest("burst", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: instance}, App: "burst", StartedAt: t0ms, BucketMs: 500})
		m := &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: instance}, Version: instance}
		for k := range 1000 {
			m.Breakers = append(m.Breakers, core.BreakerRule{Resource: fmt.Sprintf("GET:http://hostile/%d/%0100d", i, k),
				Strategy: core.ErrorCount, Threshold: 1, RetryTimeoutMs: 1000, StatIntervalMs: 1000})
		}
		c.Ingest("burst", m)
	}
	rs := c.restream
	if got := rs.bytes.Load(); got > bound {
		t.Errorf("the stream keeps %d bytes, over its %d", got, bound)
	}
	if rs.refused.Load() == 0 {
		t.Error("nothing refused: the rules were not charged")
	}
}
