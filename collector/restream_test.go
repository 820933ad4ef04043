package collector

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
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
	var mids []Target
	var stop []func()
	for half := 0; half < 2; half++ {
		c := New(Options{})
		var targets []Target
		for _, fa := range agents[2*half : 2*half+2] {
			targets = append(targets, Target{Name: fa.addr, URL: "ws://" + fa.addr + DefaultStreamPath})
		}
		srv := c.Restream(wsstream.Options{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle(DefaultStreamPath, srv)
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln, mux) }()
		dialed := make(chan struct{})
		go func() { c.Dial(ctx, targets, DialOptions{Seed: 3}); close(dialed) }()
		stop = append(stop, func() { srv.Close(nil); <-served; <-dialed })
		mids = append(mids, Target{Name: ln.Addr().String(), URL: "ws://" + ln.Addr().String() + DefaultStreamPath})
	}
	top := New(Options{})
	dialed := make(chan struct{})
	go func() { top.Dial(ctx, mids, DialOptions{Seed: 4}); close(dialed) }()
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
				pass, block, _, errs, _, ok := top.Totals(name, r)
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
