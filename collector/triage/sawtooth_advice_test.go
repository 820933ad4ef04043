package triage

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// failedProbes trips the breaker of inst at start, then fails one probe
// per rt, period ms apart (each probe starts rt ms before its OPEN; rt < 0:
// the probe's response time is not told). retry is the transitions'
// retryTimeoutMs (0: not told). It returns the time of the last OPEN.
func failedProbes(e *Feeder, inst, res string, start, period int64, retry uint32, strategy core.Strategy, rts ...int64) int64 {
	tr := func(from, to core.State, at int64) core.Transition {
		return core.Transition{Resource: res, Strategy: strategy, From: from, To: to, AtMs: at, Threshold: 0.5, RetryTimeoutMs: retry}
	}
	trip := tr(core.Closed, core.Open, start)
	trip.Snapshot = core.WindowSnapshot{Total: 100, Bad: 90, Value: 0.9}
	e.Transition(inst, trip)
	at := start
	for _, rt := range rts {
		at += period
		e.Transition(inst, tr(core.Open, core.HalfOpen, at-max(rt, 5)))
		p := tr(core.HalfOpen, core.Open, at)
		if rt >= 0 {
			p.Probe = &core.Probe{RtMs: rt, Error: strategy == core.ErrorRatio}
		}
		e.Transition(inst, p)
	}
	return at
}

// The spec's example: 6 failed probes of 2000 ms every 10.04 s against
// maxAllowedRtMs 200: 2000 >= 2 x 200, so the downstream is still down.
// The run lasts 6 x 10.04 = 60.24 s, from the trip to the last probe.
func TestSawtoothSpecExample(t *testing.T) {
	const res = "GET:/member/info"
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", slowRule(res))
	from := t0 + 10000
	end := failedProbes(e, "order-1", res, from, 10040, 10000, core.SlowRequestRatio, 2000, 2000, 2000, 2000, 2000, 2000)
	f := one(t, e.Findings(end+5000), KindSawtooth)
	rt := int64(2000)
	want := Finding{
		Kind: KindSawtooth, Severity: Critical, PeakSeverity: Critical, App: "order", Resource: res,
		Instances: []string{"order-1"}, From: from, To: end,
		Facts: &SawtoothFacts{Count: 6, PeriodMs: 10040, ProbeRtMs: &rt, ProbesAlike: true,
			Suggest: SawtoothSuggest{RetryTimeoutMs: 30000}, RetryTimeoutMs: 10000, OutageMs: end - from},
		Summary: "6 failed half-open probes in a row, every 10.0 s; each probe took 2000 ms",
		Advice:  "the downstream stayed down for >= 60 s: raise retryTimeoutMs from 10000 to 30000 and give each instance its own value (30000-40000 ms; Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)",
	}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got  %+v\nwant %+v", f, want)
	}
	if b, _ := json.Marshal(f.Facts); string(b) != `{"count":6,"periodMs":10040,"probeRtMs":2000,"suggest":{"retryTimeoutMs":30000}}` {
		t.Fatalf("facts %s", b)
	}
}

// TestSawtoothAdvice: with maxAllowedRtMs 200, probes under 400 ms and a
// healthy p99 that is surely over 100 ms (its slot's lower bound: the
// side that keeps the breaker sensitive) mean the probe criterion is too
// strict; anything else, that the downstream is still down. Healthy traffic, when given, is
// 60 s of 10 calls per 500 ms bucket in one rtHist slot before the trip:
// 120 buckets less the 20 of the 10 s before it, 1000 calls, their p99 the
// slot's bound. The run is 3 probes 10 s apart: 30 s.
func TestSawtoothAdvice(t *testing.T) {
	const res = "db"
	const strict = "the probe criterion is too strict: the failed probes took 300 ms, under 2x maxAllowedRtMs, and healthy calls' p99 is over 200 ms (at most 500), so raise maxAllowedRtMs from 200 to 400 (2x the least that p99 can be)"
	const down = "the downstream stayed down for >= 30 s: raise retryTimeoutMs from 10000 to 30000 and give each instance its own value (30000-40000 ms; Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)"
	cases := []struct {
		name           string
		strategy       core.Strategy
		retry          uint32 // rule and transitions; 0: neither tells
		slot           int    // healthy traffic's slot, -1: none
		rts            []int64
		facts, summary string
		advice         string
	}{
		{"probes over 2x maxAllowedRtMs: still down", core.SlowRequestRatio, 10000, 7, []int64{2000, 2100, 1900},
			`{"count":3,"periodMs":10000,"probeRtMs":2000,"suggest":{"retryTimeoutMs":30000}}`,
			"3 failed half-open probes in a row, every 10.0 s; the probes took 2000 ms (median)", down},
		{"probes under 2x, healthy p99 over half: too strict", core.SlowRequestRatio, 10000, 8, []int64{300, 300, 300},
			`{"count":3,"periodMs":10000,"probeRtMs":300,"suggest":{"maxAllowedRtMs":400}}`,
			"3 failed half-open probes in a row, every 10.0 s; each probe took 300 ms", strict},
		// A brownout: healthy calls' p99 is at most 200 ms, and may be 101;
		// probes of 300 ms are slower than any healthy call was. Raising
		// the bound to 2x200 would blind the breaker to them.
		{"probes under 2x, healthy p99 perhaps under half: still down", core.SlowRequestRatio, 10000, 7, []int64{300, 300, 300},
			`{"count":3,"periodMs":10000,"probeRtMs":300,"suggest":{"retryTimeoutMs":30000}}`,
			"3 failed half-open probes in a row, every 10.0 s; each probe took 300 ms", down},
		// Healthy calls take at most 20 ms: 300 ms probes are the outage.
		{"probes under 2x, healthy p99 under half: still down", core.SlowRequestRatio, 10000, 4, []int64{300, 300, 300},
			`{"count":3,"periodMs":10000,"probeRtMs":300,"suggest":{"retryTimeoutMs":30000}}`,
			"3 failed half-open probes in a row, every 10.0 s; each probe took 300 ms", down},
		{"probes under 2x, no healthy p99: still down", core.SlowRequestRatio, 10000, -1, []int64{300, 300, 300},
			`{"count":3,"periodMs":10000,"probeRtMs":300,"suggest":{"retryTimeoutMs":30000}}`,
			"3 failed half-open probes in a row, every 10.0 s; each probe took 300 ms", down},
		{"probe times not told", core.SlowRequestRatio, 10000, 7, []int64{-1, -1, -1},
			`{"count":3,"periodMs":10000,"suggest":{"retryTimeoutMs":30000}}`,
			"3 failed half-open probes in a row, every 10.0 s", down},
		{"an error-ratio breaker: its probes failed", core.ErrorRatio, 10000, 7, []int64{300, 300, 300},
			`{"count":3,"periodMs":10000,"probeRtMs":300,"suggest":{"retryTimeoutMs":30000}}`,
			"3 failed half-open probes in a row, every 10.0 s; each probe took 300 ms", down},
		// 40000 x 4/3 = 53333, in whole seconds 53000.
		{"a retry timeout of 30 s or more is kept", core.SlowRequestRatio, 40000, 7, []int64{2000, 2000, 2000},
			`{"count":3,"periodMs":10000,"probeRtMs":2000,"suggest":{"retryTimeoutMs":40000}}`,
			"3 failed half-open probes in a row, every 10.0 s; each probe took 2000 ms",
			"the downstream stayed down for >= 30 s: keep retryTimeoutMs at 40000 and give each instance its own value (40000-53000 ms; Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)"},
		{"an unknown retry timeout", core.SlowRequestRatio, 0, 7, []int64{2000, 2000, 2000},
			`{"count":3,"periodMs":10000,"probeRtMs":2000,"suggest":{"retryTimeoutMs":30000}}`,
			"3 failed half-open probes in a row, every 10.0 s; each probe took 2000 ms",
			"the downstream stayed down for >= 30 s: set retryTimeoutMs to 30000 and give each instance its own value (30000-40000 ms; Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			r := slowRule(res)
			r.Strategy, r.RetryTimeoutMs = c.strategy, c.retry
			if c.retry > 0 {
				appFleet(e, "order", 1, t0, "v1", r)
			} else {
				appFleet(e, "order", 1, t0, "v1")
			}
			if c.slot >= 0 {
				adviceTraffic(e, []string{"order-1"}, res, 10, 500, 60000, c.slot)
			}
			end := failedProbes(e, "order-1", res, t0+60000, 10000, c.retry, c.strategy, c.rts...)
			f := one(t, e.Findings(end), KindSawtooth)
			if b, _ := json.Marshal(f.Facts); string(b) != c.facts {
				t.Errorf("facts %s\nwant  %s", b, c.facts)
			}
			if f.Summary != c.summary || f.Advice != c.advice {
				t.Errorf("summary %q\nadvice  %q", f.Summary, f.Advice)
			}
			if strings.Contains(f.Advice, "back off") || strings.Contains(f.Advice, "exponential") {
				t.Errorf("advice %q: neither Sentinel 1.8 nor sentinel-golang 1.0 backs off", f.Advice)
			}
		})
	}
}

// probeRtMs is the median over every instance's failed probes of
// qualifying runs: order-1's 100, 200, 300 and order-2's 400, 500, 600,
// 700 give 400. A failed probe of a run that never qualified (order-3's two)
// does not count.
func TestSawtoothProbeRtMedian(t *testing.T) {
	const res = "db"
	e := NewFeeder(Config{})
	appFleet(e, "order", 3, t0, "v1", slowRule(res))
	failedProbes(e, "order-1", res, t0, 10000, 10000, core.SlowRequestRatio, 100, 200, 300)
	failedProbes(e, "order-2", res, t0, 10000, 10000, core.SlowRequestRatio, 400, 500, 600, 700)
	end := failedProbes(e, "order-3", res, t0, 10000, 10000, core.SlowRequestRatio, 5000, 5000)
	x := one(t, e.Findings(end), KindSawtooth).Facts.(*SawtoothFacts)
	if x.ProbeRtMs == nil || *x.ProbeRtMs != 400 || x.ProbesAlike {
		t.Fatalf("facts %+v", *x)
	}
}

// TestBrownoutGetsNoRTAdvice: three instances whose healthy calls take
// at most 200 ms (their p99 about 135: slot 7), maxAllowedRtMs 300; then a
// brownout, every probe 340-390 ms, and the breakers trip and keep
// failing their probes. The breakers saw the brownout: no finding may
// advise a maxAllowedRtMs that would not have (2x "at most 200" is 400,
// over every probe), neither the sawtooth nor rule advice.
func TestBrownoutGetsNoRTAdvice(t *testing.T) {
	const res = "GET:/member/info"
	r := slowRule(res)
	r.MaxAllowedRtMs = 300
	e := NewFeeder(Config{})
	insts := appFleet(e, "order", 3, t0, "v1", r)
	adviceTraffic(e, insts, res, 10, 500, 120_000, 7)
	var end int64
	for i, in := range insts {
		end = max(end, failedProbes(e, in, res, t0+120_000+int64(i)*300, 10_000, 10_000, core.SlowRequestRatio, 340, 390, 365, 350, 380))
	}
	fs := e.Findings(end)
	saw := one(t, fs, KindSawtooth)
	if x := saw.Facts.(*SawtoothFacts); x.Suggest.MaxAllowedRtMs != 0 || x.Suggest.RetryTimeoutMs != SawtoothRetryMs {
		t.Errorf("sawtooth advice %q (suggest %+v): the brownout is the downstream failing", saw.Advice, x.Suggest)
	}
	for _, f := range only(t, fs, KindRuleAdvice) {
		if f.Facts.(*RuleAdviceFacts).Suggest.MaxAllowedRtMs != 0 {
			t.Errorf("rule advice %q would blind the breaker to the brownout", f.Advice)
		}
	}
}

// TestSawtoothAndFloodProposeOneRetryRange: six instances with one rule
// trip together and every probe fails, together: a sawtooth (the
// downstream needs longer than 10 s) and a recovery flood (they probe at
// once). Both propose the instances' retry timeouts, and they propose the
// same: 30000 to 40000 ms, the sawtooth's longer timeout spread; never
// the flood's 10000-13000 beside the sawtooth's 30000.
func TestSawtoothAndFloodProposeOneRetryRange(t *testing.T) {
	const res = "GET:/api/stock"
	e := NewFeeder(Config{})
	insts := appFleet(e, "cart", 6, t0, "v1", slowRule(res))
	tr := func(from, to core.State, at int64) core.Transition {
		return core.Transition{Resource: res, Strategy: core.SlowRequestRatio, From: from, To: to, AtMs: at, Threshold: 0.5, RetryTimeoutMs: 10_000}
	}
	at := t0 + 60_000
	for i, in := range insts {
		trip := tr(core.Closed, core.Open, at+int64(i)*50)
		trip.Snapshot = core.WindowSnapshot{Total: 100, Bad: 90, Value: 0.9}
		e.Transition(in, trip)
	}
	for range 5 {
		at += 12_000
		for i, in := range insts {
			e.Transition(in, tr(core.Open, core.HalfOpen, at-2000+int64(i)*50))
		}
		for i, in := range insts {
			p := tr(core.HalfOpen, core.Open, at+int64(i)*50)
			p.Probe = &core.Probe{RtMs: 2000}
			e.Transition(in, p)
		}
	}
	fs := e.Findings(at + 1000)
	saw := one(t, fs, KindSawtooth).Facts.(*SawtoothFacts)
	flood := one(t, fs, KindSyncHalfOpen)
	x := flood.Facts.(*SyncHalfOpenFacts)
	if saw.Suggest.RetryTimeoutMs != 30_000 || x.Suggest == nil || *x.Suggest != (SyncHalfOpenSuggest{RetryTimeoutMs: RetryRange{Min: 30_000, Max: 40_000}}) {
		t.Fatalf("sawtooth suggests %+v, the flood %+v: two values for one field", saw.Suggest, x.Suggest)
	}
	if !strings.Contains(flood.Advice, "from 30000 to 40000 ms") || strings.Contains(flood.Advice, "13000") {
		t.Errorf("flood advice %q", flood.Advice)
	}
}
