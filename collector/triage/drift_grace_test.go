package triage

import (
	"fmt"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// TestRuleDriftGraceIsInclusive: an episode of rule drift lasting exactly
// GraceMs is a finding, ended (a warning) or still open at now (critical);
// one lasting a millisecond less is a push reaching the instances a moment
// apart, and no finding.
func TestRuleDriftGraceIsInclusive(t *testing.T) {
	const res = "createOrder"
	old, pushed := slowRule(res), slowRule(res)
	pushed.Threshold = 0.8
	for _, c := range []struct {
		lasts    int64 // ms the instances disagree
		ended    bool  // the last instance got the push; else now is lasts after it began
		want     bool
		severity Severity
	}{
		{DefaultGraceMs, true, true, Warning},
		{DefaultGraceMs - 1, true, false, 0},
		{DefaultGraceMs, false, true, Critical},
		{DefaultGraceMs - 1, false, false, 0},
	} {
		t.Run(fmt.Sprintf("%d ms, ended %v", c.lasts, c.ended), func(t *testing.T) {
			e := NewFeeder(Config{})
			appFleet(e, "order", 2, t0, "v1", old)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			now := t0 + 10000 + c.lasts
			if c.ended {
				e.Rules("order-2", t0+10000+c.lasts, "v2", []core.BreakerRule{pushed}, nil)
				now = t0 + 60000
			}
			got := only(t, e.Findings(now), KindRuleDrift)
			if (len(got) == 1) != c.want {
				t.Fatalf("%d findings, want one: %v", len(got), c.want)
			}
			if c.want && (got[0].Severity != c.severity || got[0].From != t0+10000 || got[0].To != t0+10000+c.lasts) {
				t.Fatalf("%v from %d to %d, want %v from %d to %d", got[0].Severity, got[0].From, got[0].To, c.severity, t0+10000, t0+10000+c.lasts)
			}
		})
	}
}
