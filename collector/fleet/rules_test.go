package fleet

import (
	"fmt"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func slowRule(res string) core.BreakerRule {
	return core.BreakerRule{Resource: res, Strategy: core.SlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 200,
		MinRequestAmount: 20, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, RetryTimeoutMs: 10_000}
}

// Instances with the same rules for a resource share one copy; one whose
// retryTimeoutMs is jittered (the same comparison key) keeps its own, with
// its own retryTimeoutMs; other rules, other copies.
func TestRulesSharedAcrossInstances(t *testing.T) {
	var b RuleBook
	one := b.Make("v1", []core.BreakerRule{slowRule("db"), slowRule("cache")}, nil, nil).Resources
	two := b.Make("v1", []core.BreakerRule{slowRule("cache"), slowRule("db")}, nil, nil).Resources
	jittered := slowRule("db")
	jittered.RetryTimeoutMs = 12_000
	three := b.Make("v1", []core.BreakerRule{jittered, slowRule("cache")}, nil, nil).Resources
	if one["db"] != two["db"] || one["cache"] != two["cache"] || one["cache"] != three["cache"] {
		t.Fatalf("equal rules kept apart: %p %p, %p %p %p", one["db"], two["db"], one["cache"], two["cache"], three["cache"])
	}
	if three["db"] == one["db"] || three["db"].Breakers[0].RetryTimeoutMs != 12_000 || one["db"].Breakers[0].RetryTimeoutMs != 10_000 {
		t.Fatalf("jittered rules shared: retryTimeoutMs %d and %d", three["db"].Breakers[0].RetryTimeoutMs, one["db"].Breakers[0].RetryTimeoutMs)
	}
	if three["db"].Key != one["db"].Key || one["db"] == one["cache"] {
		t.Fatal("the comparison keys differ, or two resources share rules")
	}
}

// Rules of a new content in every message: the rules kept for sharing stay
// within maxSharedBytes of keys (without the bound, 200 messages of 1,000
// breakers kept 200 of them, about 40 MB of keys).
func TestRulesSharedWithinBound(t *testing.T) {
	var b RuleBook
	many := make([]core.BreakerRule, 1000)
	for k := range 200 {
		for i := range many {
			many[i] = slowRule("db")
			many[i].ID = fmt.Sprintf("r%d", i)
			many[i].Threshold = 0.1 + float64(k)/1000
		}
		b.Make("v1", many, nil, nil)
		if b.keyBytes > maxSharedBytes || len(b.keys) == 0 {
			t.Fatalf("message %d: %d bytes of keys in %d, over %d", k, b.keyBytes, len(b.keys), maxSharedBytes)
		}
	}
	if n := len(b.keys); n >= 200 {
		t.Fatalf("%d contents kept for sharing", n)
	}
}

// Rules are copied: changing what was sent changes nothing kept; absent
// rules are nil-safe.
func TestRulesAreCopies(t *testing.T) {
	var b RuleBook
	sent := []core.BreakerRule{slowRule("db")}
	params := []core.HotParamRule{{Resource: "db", Threshold: 5, SpecificItems: map[string]int64{"vip": 50}}}
	r := b.Make("v1", sent, nil, params)
	sent[0].Threshold, params[0].SpecificItems["vip"] = 0.9, 1
	if r.Of("db").Breakers[0].Threshold != 0.5 || r.ParamsOf("db")[0].SpecificItems["vip"] != 50 || !r.HasBreaker("db") {
		t.Fatalf("rules changed with what was sent: %+v %+v", r.Of("db"), r.ParamsOf("db"))
	}
	var none *Rules
	if none.Of("db") != nil || none.HasBreaker("db") || none.ParamsOf("db") != nil || r.Of("cache") != nil {
		t.Fatal("no rules read as some")
	}
}
