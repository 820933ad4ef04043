package triage

import "testing"

// TestEveryKindHasOneDetector: the detectors cover Kinds exactly, in order,
// and every finding's facts are of its own kind.
func TestEveryKindHasOneDetector(t *testing.T) {
	if len(detectors) != len(Kinds) {
		t.Fatalf("%d detectors for %d kinds", len(detectors), len(Kinds))
	}
	for i, d := range detectors {
		if d.kind != Kinds[i] {
			t.Errorf("detector %d is %s, want %s", i, d.kind, Kinds[i])
		}
	}
	e := NewFeeder(Config{})
	end := sawtoothRun(e, "order-1", "db", t0, 10040, 6)
	fleet(e, "order", 2, t0, "v1", slowRule("db"))
	fs := e.Findings(end)
	if len(fs) == 0 {
		t.Fatal("no finding to check")
	}
	for _, f := range fs {
		if f.Facts == nil || f.Facts.Kind() != f.Kind || f.Summary == "" || f.Advice == "" {
			t.Errorf("%s: facts %T, summary %q, advice %q", f.Kind, f.Facts, f.Summary, f.Advice)
		}
	}
}
