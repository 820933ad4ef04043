package report_test

import (
	"fmt"
	"os"

	"github.com/sentinel-top/sentinel-top/collector/report"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// Text renders a report for a terminal; the escape sequence hidden in the
// instance's name is printed, not obeyed.
func ExampleText() {
	const start = int64(1764460800000)
	r := &report.Report{
		Source: "fixtures/sawtooth.ndjson", From: start, To: start + 300000,
		Apps: 1, Instances: 1, Resources: 1, Messages: 1200,
		Findings: []triage.Finding{{
			Kind: triage.KindSawtooth, Severity: triage.Critical, App: "order", Resource: "GET:/member/info",
			Instances: []string{"order-1\x1b[2J"}, From: start + 10000, To: start + 70000,
			Facts:   &triage.SawtoothFacts{Count: 6, PeriodMs: 10000},
			Summary: "6 failed half-open probes in a row, every 10.0 s",
			Advice:  "the downstream stayed down for >= 60 s: raise retryTimeoutMs from 10000 to 30000 and give each instance its own value (30000-40000 ms; Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)",
			Timelines: []triage.Timeline{{Instance: "order-1\x1b[2J", Start: core.Closed, Steps: []triage.Step{
				{AtMs: start + 10000, To: core.Open},
				{AtMs: start + 30000, To: core.HalfOpen}, {AtMs: start + 30010, To: core.Open},
				{AtMs: start + 50000, To: core.HalfOpen}, {AtMs: start + 50010, To: core.Open},
				{AtMs: start + 70000, To: core.HalfOpen}, {AtMs: start + 70010, To: core.Open},
			}}},
		}},
	}
	report.Text(os.Stdout, r)
	// Output:
	// sentinel-top report
	//   Source:                 fixtures/sawtooth.ndjson
	//   Time range:             2025-11-30 00:00:00.000 UTC to 00:05:00.000 UTC (5m0s)
	//   Seen:                   1 app, 1 instance, 1 resource; 1200 messages accepted, 0 rejected
	//   Findings:               1 critical, 0 warning, 0 info
	//
	// 1. CRITICAL sawtooth  app order  resource GET:/member/info
	//    6 failed half-open probes in a row, every 10.0 s
	//    Instances (1):          order-1\x1b[2J
	//    When:                   2025-11-30 00:00:10.000 UTC to 00:01:10.000 UTC (1m0s)
	//    Longest run:            6 failed probes
	//    Period:                 10000 ms (median OPEN to OPEN)
	//    Timeline:               ▁ CLOSED, ▄ HALF_OPEN, █ OPEN; 00:00:07.000 to 00:01:13.000 UTC, 1.65s per column
	//        order-1\x1b[2J  CLOSED    ▁████████████▄████████████▄███████████▄█ OPEN
	//    Advice:                 the downstream stayed down for >= 60 s: raise retryTimeoutMs from 10000 to 30000 and give each instance its own value (30000-40000 ms; Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)
}

// The renderer a --format names; a name it does not know says what it
// wants.
func ExampleRenderer() {
	render, err := report.Renderer("json")
	if err != nil {
		fmt.Println(err)
		return
	}
	render(os.Stdout, &report.Report{Source: "sawtooth-db-slow"})
	_, err = report.WhatIfRenderer("html")
	fmt.Println("--format", err)
	// Output:
	// {
	//   "v": 1,
	//   "source": "sawtooth-db-slow",
	//   "from": 0,
	//   "to": 0,
	//   "apps": 0,
	//   "instances": 0,
	//   "resources": 0,
	//   "messages": 0,
	//   "rejected": 0,
	//   "resourcesSeen": [],
	//   "findings": [],
	//   "plans": []
	// }
	// --format "html": want text, md or json
}
