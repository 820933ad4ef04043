package triage_test

import (
	"fmt"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// A breaker that keeps probing a downstream that has not recovered: tripped
// once, then six failed half-open probes, ten seconds apart.
func ExampleFeeder() {
	const start = int64(1764460800000)
	e := triage.NewFeeder(triage.Config{})
	e.Hello("order-1", "order", start, start-60000)
	e.Rules("order-1", start, "9f2c1a", []core.BreakerRule{{
		Resource: "GET:/member/info", Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 10000, RetryTimeoutMs: 10000,
	}}, nil)

	at := start + 10000
	e.Transition("order-1", core.Transition{
		Resource: "GET:/member/info", Strategy: core.ErrorRatio, From: core.Closed, To: core.Open, AtMs: at,
		Snapshot: core.WindowSnapshot{Total: 120, Bad: 96, Value: 0.8}, Threshold: 0.5, RetryTimeoutMs: 10000,
	})
	for range 6 {
		at += 10000
		e.Transition("order-1", core.Transition{Resource: "GET:/member/info", From: core.Open, To: core.HalfOpen, AtMs: at})
		e.Transition("order-1", core.Transition{Resource: "GET:/member/info", From: core.HalfOpen, To: core.Open, AtMs: at + 40,
			Probe: &core.Probe{RtMs: 40, Error: true}, RetryTimeoutMs: 10000})
		at += 40
	}

	for _, f := range e.Findings(at + 5000) {
		fmt.Println(f.Severity, f.Kind, f.App, f.Resource, f.Instances)
		fmt.Println(f.Summary)
		fmt.Println(f.Advice)
	}
	// Output:
	// critical sawtooth order GET:/member/info [order-1]
	// 6 failed half-open probes in a row, every 10.0 s; each probe took 40 ms
	// the downstream stayed down for >= 60 s: raise retryTimeoutMs from 10000 to 30000 and give each instance its own value (30000-40000 ms; Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)
}

// A fleet model judges each hello once, writes its records
// (fleet.Instance) and feeds the engine through its handles: another app
// under a name that said hello already is another process, with a record
// of its own, and the old one leaves the app at once.
func ExampleEngine() {
	const start = int64(1764460800000)
	e := triage.New(triage.Config{})
	rec := &fleet.Instance{Name: "pay-1", App: "pay-1"}
	in := e.NewInstance(rec)
	ch := triage.JudgeHello(false, rec.App, rec.StartedAt, "pay", start-60000)
	rec.App, rec.StartedAt = "pay", start-60000
	in = e.Hello(in, ch, rec, start)
	s := e.Series(in, "POST:/charge", start)
	e.Bucket(s, &triage.BucketStat{Start: start, BucketMs: 500, Metrics: core.Metrics{Pass: 10, Complete: 10}})

	ch = triage.JudgeHello(true, rec.App, rec.StartedAt, "refund", start+1000)
	fmt.Println(ch == triage.HelloNewProcess)
	rec.Gone, rec.LeftAt = true, start+1000
	rec = &fleet.Instance{Name: "pay-1", App: "refund", StartedAt: start + 1000}
	moved := e.Hello(in, ch, rec, start+1000)
	fmt.Println(moved == in, e.Counts().Instances, e.Counts().Apps)
	// Output:
	// true
	// false 1 2
}

// A threshold named on a command line: --fail-on critical.
func ExampleParseSeverity() {
	for _, s := range []string{"critical", "info"} {
		sev, err := triage.ParseSeverity(s)
		if err != nil {
			fmt.Println("--fail-on", err)
			continue
		}
		fmt.Println(sev, sev >= triage.Warning)
	}
	// Output:
	// critical true
	// --fail-on "info": want warning or critical
}
