package triage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// Jittering retryTimeoutMs per instance is the remedy sync-half-open
// advises; rules that differ only in it are not drift.
func TestRuleDriftIgnoresJitteredRetryTimeout(t *testing.T) {
	e := NewFeeder(Config{})
	const res = "GET:/stock"
	var names []string
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("gw-%d", i)
		names = append(names, name)
		r := slowRule(res)
		r.RetryTimeoutMs = 10000 + uint32(i)*1400
		e.Hello(name, "gw", t0, t0-1000)
		e.Rules(name, t0, fmt.Sprintf("v%d", i), []core.BreakerRule{r}, nil)
	}
	traffic(e, names, res, t0, t0+60000, 20)
	if d := only(t, e.Findings(t0+60000), KindRuleDrift); len(d) != 0 {
		t.Fatalf("jittered retry timeouts reported as drift: %+v", d)
	}
	// Any other difference still is.
	r := slowRule(res)
	r.Threshold = 0.9
	e.Rules("gw-4", t0+60000, "v9", []core.BreakerRule{r}, nil)
	traffic(e, names, res, t0+60000, t0+80000, 20)
	if d := only(t, e.Findings(t0+80000), KindRuleDrift); len(d) != 1 {
		t.Fatalf("a threshold difference is not drift: %+v", d)
	}
}

// An often-open breaker blocks most requests: the traffic a window sees is
// what is offered (pass + block), not only what passed.
func TestRuleAdviceCountsBlockedTraffic(t *testing.T) {
	e := NewFeeder(Config{})
	const res = "GET:/member"
	r := slowRule(res)
	r.MinRequestAmount = 5 // so that the advice fires
	names := appFleet(e, "order", 2, t0, "v1", r)
	for ts := t0; ts < t0+60000; ts += 500 {
		for _, in := range names {
			e.Bucket(in, BucketStat{Resource: res, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 1, Block: 24, Complete: 1, RtSum: 20, RtMax: 20, Hist: [core.HistogramSlots]int64{4: 1}}, HasHist: true})
		}
	}
	f := one(t, e.Findings(t0+60000), KindRuleAdvice)
	if f.qps() != 50 {
		t.Fatalf("qps %v, want 50 (25 offered per 500 ms bucket)", f.qps())
	}
}

// The advice of a recovery flood quotes the retry timeout of the occasions
// counted, not of a later lone HALF_OPEN.
func TestSyncHalfOpenAdviceRetryOfCountedOccasions(t *testing.T) {
	e := NewFeeder(Config{})
	const res = "GET:/stock"
	names := appFleet(e, "gw", 4, t0, "v1", slowRule(res))
	traffic(e, names, res, t0, t0+100000, 20)
	for _, at := range []int64{t0 + 20000, t0 + 50000} {
		for i, in := range names {
			e.Transition(in, trans(res, core.Open, core.HalfOpen, at+int64(i)*100))
			e.Transition(in, trans(res, core.HalfOpen, core.Closed, at+int64(i)*100+50))
		}
	}
	late := trans(res, core.Open, core.HalfOpen, t0+90000)
	late.RetryTimeoutMs = 33000
	e.Transition(names[0], late)
	f := one(t, e.Findings(t0+100000), KindSyncHalfOpen)
	if !strings.Contains(f.Advice, "10000") || strings.Contains(f.Advice, "33000") {
		t.Fatalf("advice %q", f.Advice)
	}
}
