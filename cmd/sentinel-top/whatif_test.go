package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/report"
)

// The README's example rule files: a longer retry timeout passes the
// gate, a maxAllowedRtMs over the outage's response times fails it, in
// every format, and the JSON says what the text says.
func TestWhatifGate(t *testing.T) {
	retry := filepath.Join("..", "..", "examples", "rules", "member-retry-30s.json")
	blind := filepath.Join("..", "..", "examples", "rules", "member-rt-3s.json")
	code, out, errOut := runCmd(t, "whatif", "--rules", retry, "--replay", "sawtooth-db-slow")
	if code != exitOK || !strings.Contains(out, "verdict:  safe") || !strings.Contains(out, "probes") {
		t.Fatalf("retry 30 s: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "whatif", "--rules", blind, "--replay", "sawtooth-db-slow", "--format", "json")
	if code != exitFailOn || !strings.Contains(errOut, "loses 2 of 2 outages") {
		t.Fatalf("maxAllowedRtMs 3000: exit %d\n%s", code, errOut)
	}
	var rep report.WhatIf
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Inputs) != 1 || len(rep.Inputs[0].Breakers) != 1 {
		t.Fatalf("json %+v", rep)
	}
	c := rep.Inputs[0].Breakers[0]
	if !c.LosesOutage || c.WhatIf.Current.OutagesCaught != 2 || c.WhatIf.Proposed.OutagesCaught != 0 || len(c.Instances) != 2 {
		t.Fatalf("check %+v", c)
	}
	code, out, _ = runCmd(t, "whatif", "--rules", retry+","+blind, "--replay", "sawtooth-db-slow,price-false-trip", "--format", "md")
	if code != exitFailOn || !strings.Contains(out, "| probes | 18-20 | 8 |") || !strings.Contains(out, "Not checked") {
		t.Fatalf("two files, two inputs: exit %d\n%s", code, out)
	}
}

// A failing input is exit 3 with its reason; a bad rule file too; a
// missing flag is a usage error.
func TestWhatifFailures(t *testing.T) {
	retry := filepath.Join("..", "..", "examples", "rules", "member-retry-30s.json")
	if code, _, errOut := runCmd(t, "whatif", "--rules", retry, "--replay", "sawtooth-db-slow,/nonexistent.ndjson"); code != exitRuntime || !strings.Contains(errOut, "nonexistent") {
		t.Fatalf("missing input: exit %d: %s", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"resource":"r","strategy":0,"retryTimeoutMs":0}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, "whatif", "--rules", bad, "--replay", "sawtooth-db-slow"); code != exitRuntime || !strings.Contains(errOut, "invalid rule") {
		t.Fatalf("bad rule: exit %d: %s", code, errOut)
	}
	if code, _, _ := runCmd(t, "whatif", "--replay", "sawtooth-db-slow"); code != exitUsage {
		t.Fatalf("no --rules: exit %d", code)
	}
	if code, _, _ := runCmd(t, "whatif", "--rules", retry, "--demo"); code != exitUsage {
		t.Fatalf("--demo: exit %d", code)
	}
}

// A Java DegradeRule array checked on a Java service's metric log (a real
// Sentinel 1.8.9 one): the log holds no rules, so the current rule is none
// and the outages are those the proposed rule's criterion sees.
func TestWhatifJavaRuleOnAMetricLog(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "degrade.json")
	if err := os.WriteFile(rules, []byte(`[{"resource":"checkStock","grade":1,"count":0.4,"timeWindow":5,"minRequestAmount":20,"statIntervalMs":5000}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join("..", "..", "collector", "testdata", "java", "price-1.8.9", "price-service-metrics.log.2026-12-01.gz")
	code, out, errOut := runCmd(t, "whatif", "--rules", rules, "--replay", log)
	if code != exitOK || !strings.Contains(out, "current:  none") || !strings.Contains(out, "(1 instance)") ||
		!strings.Contains(out, "outages caught                   0 of 4                 4 of 4") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// A slow-ratio rule cannot be judged on a metric log (an average response
// time a second): the check says so, and a gate that could not check it
// does not pass (exit 3).
func TestWhatifSlowRatioNeedsAHistogram(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "degrade.json")
	if err := os.WriteFile(rules, []byte(`[{"resource":"checkStock","grade":0,"count":200,"slowRatioThreshold":0.5,"timeWindow":5,"minRequestAmount":20,"statIntervalMs":5000}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join("..", "..", "collector", "testdata", "java", "price-1.8.9", "price-service-metrics.log.2026-12-01.gz")
	code, out, errOut := runCmd(t, "whatif", "--rules", rules, "--replay", log)
	if code != exitRuntime || !strings.Contains(out, "no response-time histogram") || !strings.Contains(errOut, "not replayed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}
