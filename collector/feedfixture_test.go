package collector_test

import (
	"bufio"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
)

// feedFixture feeds a fixture to a new collector (opts, on a virtual clock
// it makes) as a live dashboard sees it: each message at its time, and
// publish called at every 250 ms of input time before it; stopMs > 0 stops
// the input that far into it. It returns the collector, its clock and the
// time of the last message fed.
func feedFixture(t *testing.T, name string, opts collector.Options, stopMs int64, publish func(c *collector.Collector, at int64)) (*collector.Collector, *core.VirtualClock, int64) {
	t.Helper()
	f, err := fixtures.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var d wire.Decoder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	var clock *core.VirtualClock
	var c *collector.Collector
	var next, end, start int64
	for sc.Scan() {
		m, err := d.Decode(sc.Bytes())
		if err != nil || m.Kind() == wire.KindMeta {
			continue
		}
		ts := m.Head().Ts
		if clock != nil && stopMs > 0 && ts-start > stopMs {
			break
		}
		if clock == nil {
			clock = core.NewVirtualClock(time.UnixMilli(ts))
			opts.Clock = clock
			c = collector.New(opts)
			next, start = ts, ts
		}
		for ; next <= ts; next += 250 {
			clock.Set(time.UnixMilli(next))
			publish(c, next)
		}
		clock.Set(time.UnixMilli(ts))
		c.Ingest("fixture", wire.Clone(m))
		end = ts
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return c, clock, end
}
