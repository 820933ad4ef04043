package collector

import (
	"testing"
	"time"
)

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
