package collector_test

import (
	"bufio"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
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
	for _, name := range fixtures.Names() {
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
			var next, end int64
			publish := func(at int64) {
				clock.Set(time.UnixMilli(at))
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
			for sc.Scan() {
				m, err := d.Decode(sc.Bytes())
				if err != nil || m.Kind() == wire.KindMeta {
					continue
				}
				ts := m.Head().Ts
				if clock == nil {
					clock = core.NewVirtualClock(time.UnixMilli(ts))
					// Plans are not what this test watches: replaying them again at
					// each of its snapshots would cost it minutes under -race.
					c = collector.New(collector.Options{Clock: clock, PlanEvery: time.Hour})
					next = ts
				}
				for ; next <= ts; next += 250 {
					publish(next)
				}
				clock.Set(time.UnixMilli(ts))
				c.Ingest("fixture", wire.Clone(m))
				end = ts
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			publish(end)
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
