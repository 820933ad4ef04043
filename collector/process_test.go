package collector

import (
	"errors"
	"fmt"
	"runtime/debug"
	"testing"
	"time"
)

// The runtime's soft memory limit follows the collector's budget (7/8 of
// it), is put back by restore, and is left to GOMEMLIMIT when that is set.
func TestFollowBudget(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Setenv("GOMEMLIMIT", "")
	restore := FollowBudget(1 << 30)
	if got := debug.SetMemoryLimit(-1); got != 1<<30/8*7 {
		t.Errorf("limit %d under a 1 GiB budget, want %d", got, 1<<30/8*7)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d after, want %d back", got, before)
	}
	t.Setenv("GOMEMLIMIT", "4GiB")
	restore = FollowBudget(1 << 30)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d with GOMEMLIMIT set, want %d untouched", got, before)
	}
	restore()
}

// A coarse input's rates span two steps and its instances are stale after
// three (and 5 s), never less than the defaults.
func TestOptionsCoarse(t *testing.T) {
	for _, c := range []struct {
		step        time.Duration
		rate, stale time.Duration
	}{
		{time.Second, DefaultRateWindow, DefaultStaleAfter},
		{5 * time.Second, 10 * time.Second, 20 * time.Second},
		{time.Minute, 2 * time.Minute, 185 * time.Second},
	} {
		var o Options
		o.Coarse(c.step)
		if o.Resolution != c.step || o.RateWindow != c.rate || o.StaleAfter != c.stale {
			t.Errorf("step %s: resolution %s, rate window %s, stale after %s; want %s, %s, %s",
				c.step, o.Resolution, o.RateWindow, o.StaleAfter, c.step, c.rate, c.stale)
		}
	}
}

// A reject log keeps the first Max rejects in order and counts the rest,
// from many goroutines at once; what it returns is a copy.
func TestRejectLog(t *testing.T) {
	for _, c := range []struct {
		max, add, kept int
	}{
		{0, 5, 5},
		{0, DefaultRejectLog + 7, DefaultRejectLog},
		{3, 10, 3},
		{3, 3, 3},
	} {
		var l RejectLog
		l.Max = c.max
		for i := range c.add {
			l.Add(fmt.Sprintf("target-%d", i), errors.New("bad"))
		}
		kept, more := l.Rejects()
		if len(kept) != c.kept || more != c.add-c.kept {
			t.Errorf("max %d, %d added: kept %d and %d more, want %d and %d", c.max, c.add, len(kept), more, c.kept, c.add-c.kept)
			continue
		}
		for i, r := range kept {
			if r.Place != fmt.Sprintf("target-%d", i) || r.Err == nil {
				t.Errorf("max %d: reject %d is %+v, want target-%d", c.max, i, r, i)
			}
		}
		if len(kept) > 0 {
			kept[0].Place = "changed"
			if again, _ := l.Rejects(); again[0].Place != "target-0" {
				t.Errorf("the log's reject changed through the slice returned")
			}
		}
	}
	var l RejectLog
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				l.Add(fmt.Sprintf("g%d-%d", g, i), errors.New("bad"))
			}
		}()
	}
	for range 4 {
		<-done
	}
	if kept, more := l.Rejects(); len(kept)+more != 200 || len(kept) != DefaultRejectLog {
		t.Errorf("200 rejects from 4 goroutines: kept %d and %d more", len(kept), more)
	}
}
