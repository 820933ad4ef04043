package collector_test

import (
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// TestSeveritiesDoNotFlap replays every fixture through the collector as a
// live dashboard sees it, publishing four times a second of input time, and
// follows each finding's severity. A sawtooth or a recovery flood stays
// critical until it has been over for the hold (triage.DefaultHoldMs): no
// critical spell of theirs is shorter, so an incident between two probe
// cycles never reads as over. recovery-herd has two outages, so its flood
// is critical twice; before the hold it flipped six times, with spells of
// 34 to 41 s.
func TestSeveritiesDoNotFlap(t *testing.T) {
	for i, name := range fixtures.Names() {
		if !racetest.Played(i, 5) {
			continue // one goroutine's replays: every fifth fixture under -race, all in .ci/run's run without it
		}
		t.Run(name, func(t *testing.T) {
			type seen struct {
				kind          triage.Kind
				sev           triage.Severity
				since         int64
				criticalTimes int
			}
			findings := map[string]*seen{}
			spell := func(k string, s *seen, at int64) {
				held := s.kind == triage.KindSawtooth || s.kind == triage.KindSyncHalfOpen
				if s.sev == triage.Critical && held && at-s.since < triage.DefaultHoldMs {
					t.Errorf("%s: critical for only %d ms (from %d)", k, at-s.since, s.since)
				}
			}
			publish := func(c *collector.Collector, at int64) {
				for _, f := range c.Publish().Findings {
					k := string(f.Kind) + " " + f.App + " " + f.Resource
					s := findings[k]
					if s == nil {
						s = &seen{kind: f.Kind, sev: f.Severity, since: at}
						s.criticalTimes = boolInt(f.Severity == triage.Critical)
						findings[k] = s
						continue
					}
					if f.Severity == s.sev {
						continue
					}
					spell(k, s, at)
					s.sev, s.since = f.Severity, at
					s.criticalTimes += boolInt(f.Severity == triage.Critical)
				}
			}
			// Plans are not what this test watches: replaying them again at
			// each of its snapshots would cost it minutes under -race.
			c, _, end := feedFixture(t, name, collector.Options{PlanEvery: time.Hour}, 0, publish)
			publish(c, end)
			if name == "recovery-herd" {
				k := "sync-half-open gateway GET:http://inventory-service/api/stock"
				if s := findings[k]; s == nil || s.criticalTimes != 2 {
					t.Errorf("%s: critical spells %+v, want 2 (two outages)", k, s)
				}
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
