package triage

import (
	"encoding/json"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// herdOf feeds three instances running r that trip together and probe
// together twice, their transitions telling retry (0: not told).
func herdOf(r core.BreakerRule, retry uint32) Finding {
	e := NewFeeder(Config{})
	insts := appFleet(e, "gw", 3, t0, "v1", r)
	for _, at := range []int64{t0 + 1000, t0 + 13000} {
		for i, in := range insts {
			tr := trans(r.Resource, core.Closed, core.Open, at+int64(i)*100)
			if at > t0+1000 {
				tr.From = core.HalfOpen
			}
			tr.RetryTimeoutMs = retry
			e.Transition(in, tr)
		}
		for i, in := range insts {
			tr := trans(r.Resource, core.Open, core.HalfOpen, at+10000+int64(i)*100)
			tr.RetryTimeoutMs = retry
			e.Transition(in, tr)
		}
	}
	fs := e.Findings(t0 + 30000)
	for _, f := range fs {
		if f.Kind == KindSyncHalfOpen {
			return f
		}
	}
	return Finding{}
}

// The advice spreads the instances' retry timeouts over 30 % of their
// value: in ms for sentinel-golang, in whole seconds (timeWindow) for Java.
func TestSyncHalfOpenAdvice(t *testing.T) {
	goRule := slowRule("GET:/stock")
	java := goRule
	java.Semantics = core.SemanticsJava
	cases := []struct {
		name     string
		r        core.BreakerRule
		ruleMs   uint32 // the rule's retryTimeoutMs
		retry    uint32 // told by the transitions
		min, max int64
		advice   string // up to the spread and why
	}{
		{"sentinel-golang", goRule, 10000, 10000, 10000, 13000,
			"the instances probe 10000 ms after they open: give each of the 3 its own retryTimeoutMs from 10000 to 13000 ms"},
		{"java: whole seconds", java, 10000, 10000, 10000, 13000,
			"the instances probe 10 s after they open: give each of the 3 its own timeWindow from 10 to 13 s"},
		{"java: rounded up", java, 4500, 4500, 5000, 7000,
			"the instances probe 4.5 s after they open: give each of the 3 its own timeWindow from 5 to 7 s"},
		{"the rule's when the transitions do not tell", goRule, 7000, 0, 7000, 9100,
			"the instances probe 7000 ms after they open: give each of the 3 its own retryTimeoutMs from 7000 to 9100 ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.r.RetryTimeoutMs = c.ruleMs
			f := herdOf(c.r, c.retry)
			x, ok := f.Facts.(*SyncHalfOpenFacts)
			if !ok || x.Count != 2 {
				t.Fatalf("finding %+v", f)
			}
			if x.Suggest == nil || x.Suggest.RetryTimeoutMs != (RetryRange{Min: c.min, Max: c.max}) {
				t.Fatalf("suggest %+v, want %d to %d", x.Suggest, c.min, c.max)
			}
			if want := c.advice + " (a spread of 30 %) so that they do not all probe the recovering downstream at once (Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)"; f.Advice != want {
				t.Fatalf("advice\n got %q\nwant %q", f.Advice, want)
			}
		})
	}
}

// Without a retry timeout, from the transitions or the rules, the advice
// has no numbers and there is no suggest.
func TestSyncHalfOpenAdviceUnknownRetry(t *testing.T) {
	e := NewFeeder(Config{})
	insts := []string{"gw-1", "gw-2", "gw-3"}
	for _, at := range []int64{t0 + 11000, t0 + 23000} {
		for i, in := range insts {
			tr := trans("r", core.Open, core.HalfOpen, at+int64(i)*100)
			tr.RetryTimeoutMs = 0
			e.Transition(in, tr)
		}
	}
	f := one(t, e.Findings(t0+30000), KindSyncHalfOpen)
	if x := f.Facts.(*SyncHalfOpenFacts); x.Suggest != nil {
		t.Fatalf("suggest %+v", x.Suggest)
	}
	if want := "give each of the 3 instances its own retryTimeoutMs, spread over at least 30 % of its value, " +
		"so that they do not all probe the recovering downstream at once (Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)"; f.Advice != want {
		t.Fatalf("advice %q", f.Advice)
	}
}

func TestSyncHalfOpenJSON(t *testing.T) {
	f := herdOf(slowRule("GET:/stock"), 10000)
	b, err := json.Marshal(f.Facts)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"count":2,"spreadMs":200,"suggest":{"retryTimeoutMs":{"min":10000,"max":13000}}}`; string(b) != want {
		t.Fatalf("json\n got %s\nwant %s", b, want)
	}
}
