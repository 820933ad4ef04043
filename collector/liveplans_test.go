package collector_test

import (
	"bufio"
	"encoding/json"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
)

// TestLivePlansAreTheReports: a dashboard's collector, fed a fixture as it
// arrives and publishing four times a second with its plan cache
// (Options.PlanEvery at its default), shows where the input stops (its
// end, or a pause in the middle of an incident), once nothing moves, the
// plans and findings a report of the input so far gives, word for word.
func TestLivePlansAreTheReports(t *testing.T) {
	for _, c := range []struct {
		name string
		stop int64 // ms into the input, 0: its end
	}{{"sawtooth-db-slow", 0}, {"sawtooth-db-slow", 101_300}, {"price-false-trip", 0}, {"herd-sawtooth", 0}, {"herd-sawtooth", 97_700}} {
		name, stop := c.name, c.stop
		t.Run(name, func(t *testing.T) {
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
				if clock != nil && stop > 0 && ts-start > stop {
					break
				}
				if clock == nil {
					clock = core.NewVirtualClock(time.UnixMilli(ts))
					c = collector.New(collector.Options{Clock: clock})
					next, start = ts, ts
				}
				for ; next <= ts; next += 250 {
					clock.Set(time.UnixMilli(next))
					c.Publish()
				}
				clock.Set(time.UnixMilli(ts))
				c.Ingest("fixture", wire.Clone(m))
				end = ts
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			clock.Set(time.UnixMilli(end))
			c.Publish()
			live := c.Publish() // nothing moved: the input is over
			findings, plans := c.Assess()
			if len(plans) == 0 {
				t.Fatal("no plans: the test proves nothing")
			}
			a, _ := json.Marshal(struct{ F, P any }{live.Findings, live.Plans})
			b, _ := json.Marshal(struct{ F, P any }{findings, plans})
			if string(a) != string(b) {
				t.Errorf("the dashboard's last snapshot:\n%s\na report's:\n%s", a, b)
			}
		})
	}
}
