package core

import (
	"context"
	"sync/atomic"
	"time"
)

// CoarseClock is a wall clock whose UnixMilli is a single atomic load: a
// goroutine refreshes it every millisecond. It trades about a thousand
// wake-ups a second for the cost of reading the clock on every Entry and
// Exit (like sentinel-golang's UseCacheTime). Other methods are RealClock's.
type CoarseClock struct {
	*RealClock
	ms atomic.Int64
}

var _ Clock = (*CoarseClock)(nil)

// NewCoarseClock starts a coarse clock; it stops refreshing when ctx ends
// (and then reads the wall clock directly).
func NewCoarseClock(ctx context.Context) *CoarseClock {
	c := &CoarseClock{RealClock: NewRealClock()}
	c.ms.Store(time.Now().UnixMilli())
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				c.ms.Store(0)
				return
			case now := <-t.C:
				c.ms.Store(now.UnixMilli())
			}
		}
	}()
	return c
}

// UnixMilli returns the cached wall clock, at most about a millisecond old.
func (c *CoarseClock) UnixMilli() int64 {
	if ms := c.ms.Load(); ms != 0 {
		return ms
	}
	return c.RealClock.UnixMilli()
}
