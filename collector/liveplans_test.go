package collector_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// TestLivePlansAreTheReports: a dashboard's collector, fed a fixture as it
// arrives and publishing four times a second with its plan cache
// (Options.PlanEvery at its default), shows where the input stops (its
// end, or a pause in the middle of an incident), once nothing moves, the
// plans and findings a report of the input so far gives, word for word.
func TestLivePlansAreTheReports(t *testing.T) {
	for i, c := range []struct {
		name string
		stop int64 // ms into the input, 0: its end
	}{{"sawtooth-db-slow", 0}, {"sawtooth-db-slow", 101_300}, {"price-false-trip", 0}, {"herd-sawtooth", 0}, {"herd-sawtooth", 97_700}} {
		if !racetest.Played(i, 3) {
			continue // one goroutine's replays: a third under -race, all in .ci/run's run without it
		}
		name, stop := c.name, c.stop
		t.Run(name, func(t *testing.T) {
			c, clock, end := feedFixture(t, name, collector.Options{}, stop, func(c *collector.Collector, _ int64) { c.Publish() })
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
