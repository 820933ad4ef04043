package core

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

var epoch = time.UnixMilli(1764460800000)

func TestVirtualClockFiresInOrderAtTheirTimes(t *testing.T) {
	c := NewVirtualClock(epoch)
	var order []int64
	done := make(chan struct{}, 3)
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		c.schedule(d, 0, func(now time.Time) {
			order = append(order, now.Sub(epoch).Milliseconds())
			done <- struct{}{}
		})
	}
	c.Advance(10 * time.Second)
	if len(order) != 3 || order[0] != 1000 || order[1] != 2000 || order[2] != 3000 {
		t.Fatalf("fired at %v", order)
	}
	if got := c.Now().Sub(epoch); got != 10*time.Second {
		t.Fatalf("clock at %v after advance", got)
	}
}

func TestVirtualClockTicker(t *testing.T) {
	c := NewVirtualClock(epoch)
	tk := c.NewTicker(500 * time.Millisecond)
	defer tk.Stop()
	c.Advance(500 * time.Millisecond)
	select {
	case got := <-tk.C():
		if !got.Equal(epoch.Add(500 * time.Millisecond)) {
			t.Fatalf("tick at %v", got)
		}
	default:
		t.Fatal("no tick")
	}
	// A receiver that does not keep up misses ticks instead of queueing them.
	c.Advance(5 * time.Second)
	if n := len(tk.C()); n != 1 {
		t.Fatalf("%d ticks queued", n)
	}
}

func TestVirtualClockAfterFuncAndStop(t *testing.T) {
	c := NewVirtualClock(epoch)
	var fired atomic.Int32
	ran := make(chan struct{})
	c.AfterFunc(time.Second, func() { fired.Add(1); close(ran) })
	stopped := c.AfterFunc(time.Second, func() { fired.Add(10) })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report true once, then false")
	}
	c.Advance(time.Second)
	<-ran
	if fired.Load() != 1 {
		t.Fatalf("fired = %d", fired.Load())
	}
}

func TestVirtualClockSleep(t *testing.T) {
	c := NewVirtualClock(epoch)
	woke := make(chan time.Time)
	go func() {
		c.Sleep(2 * time.Second)
		woke <- c.Now()
	}()
	for c.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	c.Advance(time.Second)
	select {
	case <-woke:
		t.Fatal("woke early")
	case <-time.After(10 * time.Millisecond):
	}
	c.Advance(time.Second)
	if got := <-woke; got.Sub(epoch) < 2*time.Second {
		t.Fatalf("woke at %v", got.Sub(epoch))
	}
}

func TestVirtualClockBackwards(t *testing.T) {
	c := NewVirtualClock(epoch)
	c.Set(epoch.Add(-time.Minute))
	if c.UnixMilli() != epoch.UnixMilli()-60000 {
		t.Fatalf("clock at %d", c.UnixMilli())
	}
	c.Advance(-time.Second) // ignored
	if c.UnixMilli() != epoch.UnixMilli()-60000 {
		t.Fatal("negative Advance moved the clock")
	}
}

func TestRealClockUnixMilliTracksWallClock(t *testing.T) {
	for _, c := range []*RealClock{NewRealClock(), {}} {
		for i := 0; i < 50; i++ {
			before := time.Now().UnixMilli()
			got := c.UnixMilli()
			after := time.Now().UnixMilli()
			if got < before || got > after {
				t.Fatalf("UnixMilli %d outside [%d, %d]", got, before, after)
			}
			time.Sleep(time.Duration(i%7) * 100 * time.Microsecond)
		}
	}
}

func TestRealClock(t *testing.T) {
	var c Clock = NewRealClock()
	if d := time.Since(c.Now()); d < 0 || d > time.Second {
		t.Fatalf("real clock off by %v", d)
	}
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
}

func TestCoarseClock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := NewCoarseClock(ctx)
	for i := 0; i < 20; i++ {
		if d := time.Now().UnixMilli() - c.UnixMilli(); d < -1 || d > 50 {
			t.Fatalf("coarse clock %d ms off", d)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	time.Sleep(5 * time.Millisecond)
	if d := time.Now().UnixMilli() - c.UnixMilli(); d < -1 || d > 5 {
		t.Fatalf("stopped coarse clock %d ms off", d)
	}
}
