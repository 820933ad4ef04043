package triage

import (
	"fmt"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// Instances with the same rules for a resource share one copy; one whose
// retryTimeoutMs is jittered (the same comparison key) keeps its own, with
// its own retryTimeoutMs; other rules, other copies.
func TestRulesSharedAcrossInstances(t *testing.T) {
	e := NewFeeder(Config{})
	appFleet(e, "order", 3, t0, "v1", slowRule("db"), slowRule("cache"))
	jittered := slowRule("db")
	jittered.RetryTimeoutMs = 12_000
	e.Rules("order-3", t0+1000, "v1", []core.BreakerRule{jittered, slowRule("cache")}, nil)
	one, two, three := e.inst("order-1").rules, e.inst("order-2").rules, e.inst("order-3").rules
	if one["db"] != two["db"] || one["cache"] != two["cache"] || one["cache"] != three["cache"] {
		t.Fatalf("equal rules kept apart: %p %p, %p %p %p", one["db"], two["db"], one["cache"], two["cache"], three["cache"])
	}
	if three["db"] == one["db"] || three["db"].breakers[0].RetryTimeoutMs != 12_000 || one["db"].breakers[0].RetryTimeoutMs != 10_000 {
		t.Fatalf("jittered rules shared: retryTimeoutMs %d and %d", three["db"].breakers[0].RetryTimeoutMs, one["db"].breakers[0].RetryTimeoutMs)
	}
	if three["db"].key != one["db"].key || one["db"] == one["cache"] {
		t.Fatal("the comparison keys differ, or two resources share rules")
	}
}

// Rules of a new content in every message: the rules kept for sharing stay
// within maxSharedBytes of keys (without the bound, 200 messages of 1,000
// breakers kept 200 of them, about 40 MB of keys).
func TestRulesSharedWithinBound(t *testing.T) {
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1")
	many := make([]core.BreakerRule, 1000)
	for k := range 200 {
		for i := range many {
			many[i] = slowRule("db")
			many[i].ID = fmt.Sprintf("r%d", i)
			many[i].Threshold = 0.1 + float64(k)/1000
		}
		e.Rules("order-1", t0+int64(k), "v1", many, nil)
		if e.keyBytes > maxSharedBytes || len(e.keys) == 0 {
			t.Fatalf("message %d: %d bytes of keys in %d, over %d", k, e.keyBytes, len(e.keys), maxSharedBytes)
		}
	}
	if n := len(e.keys); n >= 200 {
		t.Fatalf("%d contents kept for sharing", n)
	}
}
