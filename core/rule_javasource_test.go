package core

import (
	"strings"
	"testing"
)

// Rules read from Java services that core describes but does not enforce:
// Sentinel before 1.8 (average RT, no probe), and regex rules' patterns.
func TestRulesReadFromJava(t *testing.T) {
	avg := BreakerRule{Resource: "queryPrice", Strategy: AverageRT, Threshold: 100, RetryTimeoutMs: 5000,
		MinRequestAmount: 5, StatIntervalMs: 1000, Semantics: SemanticsJava16}
	if err := avg.Validate(); err != nil {
		t.Fatal(err)
	}
	if AverageRT.String() != "average-rt" || AverageRT.IsRatio() {
		t.Errorf("%s ratio %v", AverageRT, AverageRT.IsRatio())
	}
	for name, r := range map[string]BreakerRule{
		"average RT without java-1.6": func() BreakerRule { r := avg; r.Semantics = SemanticsJava; return r }(),
		"strategy 4":                  func() BreakerRule { r := avg; r.Strategy = 4; return r }(),
		"a pattern Go cannot match":   func() BreakerRule { r := avg; r.Pattern = "GET:/(?=x)"; return r }(),
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
	// java-1.6 describes a rule: core refuses to enforce it.
	if _, err := NewBreaker(avg); err == nil || !strings.Contains(err.Error(), "before 1.8") {
		t.Errorf("NewBreaker: %v", err)
	}
	ratio := avg
	ratio.Strategy, ratio.Threshold = ErrorRatio, 0.5
	if err := NewGuard(GuardOptions{}).LoadBreakerRules([]BreakerRule{ratio}); err == nil || !strings.Contains(err.Error(), "rule 0") {
		t.Errorf("LoadBreakerRules: %v", err)
	}
	// A regex rule's copy is its resource's rule; its pattern is shown.
	regex := BreakerRule{Resource: "GET:/api/a", Pattern: "GET:/api/.*", Strategy: ErrorCount, Threshold: 3,
		RetryTimeoutMs: 4000, StatIntervalMs: 1000, Semantics: SemanticsJava}
	if _, err := NewBreaker(regex); err != nil {
		t.Fatal(err)
	}
	flow := FlowRule{Resource: "GET:/api/a", Pattern: "GET:/api/(", Threshold: 10}
	if err := flow.Validate(); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("flow: %v", err)
	}
}
