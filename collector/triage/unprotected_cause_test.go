package triage

import (
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func TestUnprotectedCause(t *testing.T) {
	const res = "queryPrice"
	cases := []struct {
		name     string
		feed     func(e *Feeder) int64
		cause    UnprotectedCause
		severity Severity
		advice   string
		from     int64 // 0: not checked
	}{
		{"a new instance takes traffic before its rules load", func(e *Feeder) int64 {
			in := appFleet(e, "price", 2, t0, "v1", slowRule(res))
			traffic(e, in, res, t0, t0+30000, 5)
			e.Hello("price-3", "price", t0+30000, t0+29000)
			e.Rules("price-3", t0+30000, "v0", nil, nil)
			traffic(e, append(in, "price-3"), res, t0+30000, t0+45000, 5)
			e.Rules("price-3", t0+45000, "v1", []core.BreakerRule{slowRule(res)}, nil)
			traffic(e, append(in, "price-3"), res, t0+45000, t0+60000, 5)
			return t0 + 60000
		}, CauseStartedWithoutRules, Warning, "readiness gate that returns 503", t0 + 30000},
		{"a restarted instance serves before its rules load, to the end", func(e *Feeder) int64 {
			in := appFleet(e, "price", 3, t0, "v1", slowRule(res))
			traffic(e, in, res, t0, t0+30000, 5)
			e.Hello("price-3", "price", t0+30000, t0+29000)
			e.Rules("price-3", t0+30000, "v0", nil, nil)
			traffic(e, in, res, t0+30000, t0+60000, 5)
			return t0 + 60000
		}, CauseStartedWithoutRules, Critical, "load the app's rules on the 1 instance now, and add a readiness gate", 0},
		{"a push reaches 2 of 3 instances: the bucket ending at the push is not counted", func(e *Feeder) int64 {
			in := appFleet(e, "price", 3, t0, "v1")
			traffic(e, in, res, t0, t0+19500, 5)
			e.Rules("price-1", t0+20000, "v2", []core.BreakerRule{slowRule(res)}, nil)
			e.Rules("price-2", t0+20010, "v2", []core.BreakerRule{slowRule(res)}, nil)
			traffic(e, in, res, t0+19500, t0+60000, 5)
			return t0 + 60000
		}, CauseMissedPush, Critical, "push the app's current rules again", t0 + 20000},
		{"one started without rules, another missed the push", func(e *Feeder) int64 {
			in := appFleet(e, "price", 3, t0, "v1")
			e.Rules("price-1", t0+10000, "v2", []core.BreakerRule{slowRule(res)}, nil)
			e.Hello("price-4", "price", t0+20000, t0+20000)
			e.Rules("price-4", t0+20000, "v0", nil, nil)
			traffic(e, append(in, "price-4"), res, t0+20000, t0+60000, 5)
			return t0 + 60000
		}, CauseMissedPush, Critical, "push the app's current rules again", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := fires(t, c.feed, KindUnprotected, true)
			x := f.Facts.(*UnprotectedFacts)
			if x.Cause != c.cause || f.Severity != c.severity || !strings.Contains(f.Advice, c.advice) {
				t.Fatalf("cause %s severity %v advice %q, want %s %v %q", x.Cause, f.Severity, f.Advice, c.cause, c.severity, c.advice)
			}
			if c.from != 0 && f.From != c.from {
				t.Fatalf("from %d, want %d", f.From-t0, c.from-t0)
			}
			if ev := x.Evidence(); len(ev) != 2 || ev[1].Parts[0].Text != string(c.cause) {
				t.Fatalf("evidence %+v", ev)
			}
		})
	}
}
