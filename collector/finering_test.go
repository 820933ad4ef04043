package collector

import (
	"fmt"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestInstanceRatesEveryRateWindow checks each instance's rates and totals
// against the buckets sent, with a rate window whose fine slots' starts a
// series holds in itself (the default's and a shorter one) and with a
// longer one, whose starts are apart: every item of a message goes to its
// own series whether the series is the one after the previous item's, one
// found by name, one made in the middle of the message or named twice in
// it; a late bucket inside the window counts, one whose slot a later
// second took counts only in the totals.
func TestInstanceRatesEveryRateWindow(t *testing.T) {
	for _, w := range []time.Duration{3 * time.Second, DefaultRateWindow, 12 * time.Second} {
		t.Run(w.String(), func(t *testing.T) {
			clock := core.NewVirtualClock(time.UnixMilli(t0ms))
			c := New(Options{Clock: clock, RateWindow: w})
			insts := []string{"a", "b"}
			for _, in := range insts {
				c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: in}, App: "app", StartedAt: t0ms, BucketMs: 500})
			}
			type key struct{ inst, res string }
			sent := map[key]map[int64]int64{} // first pass sent for each start
			send := func(in string, start int64, items []wire.BucketItem) {
				for _, it := range items {
					k := key{in, it.Resource}
					if sent[k] == nil {
						sent[k] = map[int64]int64{}
					}
					if _, ok := sent[k][it.Start]; !ok {
						sent[k][it.Start] = it.Pass
					}
				}
				if !c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: in}, BucketMs: 500, Items: items}) {
					t.Fatal("buckets refused")
				}
			}
			item := func(res string, start, pass int64) wire.BucketItem {
				return wire.BucketItem{Resource: res, Start: start, Metrics: core.Metrics{Pass: pass, Complete: pass}}
			}
			// Held back and sent last: a bucket of the window's last second
			// but one, and one whose slot a second of the window took since.
			lateIn, lateOut := int64(77), 2*(39-int64(w/time.Second+8))
			for k := int64(0); k < 80; k++ {
				start := t0ms + k*500
				for n, in := range insts {
					p := k + int64(n)*100
					items := []wire.BucketItem{item("r0", start, p+1), item("r1", start, p+2), item("r2", start, p+3)}
					switch {
					case (k == lateIn || k == lateOut) && in == "a":
						continue
					case k >= 10 && in == "a":
						// A resource new in the middle, and the order changed.
						items = append([]wire.BucketItem{items[2], items[0], item("r3", start, p+4)}, items[1])
					case k >= 20 && in == "b":
						// The same resource twice: the second a bucket before.
						items = append(items, item("r1", start-500, p+5))
					}
					send(in, start, items)
				}
			}
			for _, k := range []int64{lateIn, lateOut} {
				send("a", t0ms+k*500, []wire.BucketItem{item("r1", t0ms+k*500, 7+k)})
			}
			send("a", t0ms+78*500, []wire.BucketItem{item("r2", t0ms+78*500, 9)}) // a re-send: counted once

			end := t0ms + 80*500
			rateMs := w.Milliseconds()
			for k, starts := range sent {
				var total, inWindow int64
				for start, pass := range starts {
					total += pass
					if start >= end-rateMs && start < end {
						inWindow += pass
					}
				}
				if got, _ := c.Totals(k.inst, k.res); got.Pass != total {
					t.Errorf("%s %s: total pass %d, want %d", k.inst, k.res, got.Pass, total)
				}
				d := c.Detail("app", k.res, end-rateMs, end)
				var found bool
				for _, id := range d.Instances {
					if id.Instance != k.inst {
						continue
					}
					found = true
					if want := float64(inWindow) * 1000 / float64(rateMs); id.PassQPS != want {
						t.Errorf("%s %s: pass %.2f/s, want %.2f", k.inst, k.res, id.PassQPS, want)
					}
				}
				if !found {
					t.Errorf("%s %s: not in the detail %s", k.inst, k.res, fmt.Sprint(d.Instances))
				}
			}
		})
	}
}
