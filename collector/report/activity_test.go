package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector"
)

// TestAccountsSanitizeAndBound: a report with no findings accounts for
// hostile names as for a finding's (sanitized in text, in code spans in
// Markdown), for at most maxAccounts resources, the busiest first, the
// rest counted: the quiet ones and those left out for room.
func TestAccountsSanitizeAndBound(t *testing.T) {
	r := &Report{Source: "src", Resources: maxAccounts + 8}
	add := func(app, res string, trips, block int64) {
		r.ResourcesSeen = append(r.ResourcesSeen, ResourceSeen{App: app, Resource: res, Pass: 100, Block: block, States: "exact"})
		r.Activity = append(r.Activity, collector.ResourceActivity{App: app, Resource: res, Trips: trips, Closes: trips,
			OpenMs: trips * 1000, Block: block, BreakerBlock: block})
	}
	add(evilInstance, evilResource, 50, 7)
	for i := range maxAccounts + 2 {
		add("shop", fmt.Sprintf("busy-%02d", i), int64(i), int64(i))
	}
	for i := range 5 {
		add("shop", fmt.Sprintf("quiet-%d", i), 0, 0)
	}
	hostileNames(t, r)
	out := string(render(t, text, r))
	if !strings.Contains(out, "\nNo findings.\n\nWhat happened, per resource:\n") ||
		!strings.Contains(out, "\n2 more resources with trips or blocks not listed; 6 other resources: no trip, no block.\n") {
		t.Errorf("text:\n%s", out)
	}
	// The busiest first: the hostile one (50 trips), then busy-21 down to
	// busy-03; busy-02 and -01 are left out for room, busy-00 (nothing happened) is counted among the quiet.
	first := strings.Index(out, "\nevil-1")
	prev := first
	for i := maxAccounts + 1; i >= 3; i-- {
		at := strings.Index(out, fmt.Sprintf("\nshop / busy-%02d\n", i))
		if at < prev {
			t.Fatalf("busy-%02d not after the one before it (at %d, %d):\n%s", i, at, prev, out)
		}
		prev = at
	}
	for _, gone := range []string{"busy-02", "busy-01", "busy-00", "quiet-"} {
		if strings.Contains(out, gone) {
			t.Errorf("%s listed:\n%s", gone, out)
		}
	}
	if first < 0 || !strings.Contains(out, "Trips:                  50 (CLOSED to OPEN); probes: 50 closed, 0 reopened\n") {
		t.Errorf("the hostile resource's account:\n%s", out)
	}
	if md := string(render(t, md, r)); !strings.Contains(md, "\n2 more resources with trips or blocks not listed; 6 other resources: no trip, no block.\n") {
		t.Errorf("Markdown:\n%s", md)
	}
}

// TestAccountsOfUnknownStatesAndQuiet: where the source cannot report
// breaker states, no trip or time is claimed; a report whose resources
// were all quiet says so in one line; one given no account of its
// resources' breakers claims nothing of them.
func TestAccountsOfUnknownStatesAndQuiet(t *testing.T) {
	r := &Report{Source: "metrics.log", Resources: 1,
		ResourcesSeen: []ResourceSeen{{App: "order", Resource: "db", Pass: 20, Block: 5, States: "unknown"}},
		Activity:      []collector.ResourceActivity{{App: "order", Resource: "db", Block: 5}}}
	out := string(render(t, text, r))
	if !strings.Contains(out, "Trips:                  not known: the source cannot report breaker states\n") ||
		strings.Contains(out, "Time OPEN") || strings.Contains(out, "0 by breakers") ||
		!strings.Contains(out, "Blocked:                5 of 25 entries (20.0 %): 5 by what is not known (the source cannot report breaker states)\n") {
		t.Errorf("unknown states:\n%s", out)
	}
	r.ResourcesSeen[0].Block, r.Activity[0].Block = 0, 0
	if out := string(render(t, text, r)); !strings.Contains(out, "\nNo entry of the 1 resource was blocked; breakers: trips not known (breaker states unknown).\n") ||
		strings.Contains(out, "tripped") || strings.Contains(out, "no trip") {
		t.Errorf("quiet, states unknown:\n%s", out)
	}
	r.ResourcesSeen[0].States = "exact"
	if out := string(render(t, text, r)); !strings.Contains(out, "\nNo breaker of the 1 resource tripped, and no entry was blocked.\n") {
		t.Errorf("quiet:\n%s", out)
	}
	r.ResourcesSeen[0].States = "unknown"
	r.Activity = nil
	if out := string(render(t, md, r)); !strings.Contains(out, "\nNo entry of the 1 resource was blocked.\n") || strings.Contains(out, "tripped") {
		t.Errorf("no account given:\n%s", out)
	}
}

// TestQuietAccountsSayWhatIsKnown: the resources counted as quiet read
// "no trip" only where breaker states were reported, "inferred" where they
// were inferred, and "not known" where the source cannot report them;
// blocks on a resource whose states were inferred are said inferred.
func TestQuietAccountsSayWhatIsKnown(t *testing.T) {
	r := &Report{Source: "src", Resources: 4}
	add := func(res, states string, block int64) {
		r.ResourcesSeen = append(r.ResourcesSeen, ResourceSeen{App: "shop", Resource: res, Pass: 100, Block: block, States: states})
		r.Activity = append(r.Activity, collector.ResourceActivity{App: "shop", Resource: res, Block: block, BreakerBlock: block})
	}
	add("busy", "inferred", 3)
	add("q-exact", "exact", 0)
	add("q-inferred", "inferred", 0)
	add("q-unknown", "unknown", 0)
	out := string(render(t, text, r))
	for _, want := range []string{
		"Blocked:                3 of 103 entries (2.9 %): 3 by breakers (inferred from counts), 0 by flow or hot-parameter rules\n",
		"\n3 other resources: 1 with no trip, 1 with no trip inferred from counts, 1 with trips not known (breaker states unknown), no block.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	r.ResourcesSeen, r.Activity = r.ResourcesSeen[1:], r.Activity[1:]
	if out := string(render(t, md, r)); !strings.Contains(out, "\nNo entry of the 3 resources was blocked; breakers: 1 with no trip, 1 with no trip inferred from counts, 1 with trips not known (breaker states unknown).\n") {
		t.Errorf("all quiet, Markdown:\n%s", out)
	}
	r.ResourcesSeen, r.Activity = r.ResourcesSeen[1:2], r.Activity[1:2]
	if out := string(render(t, text, r)); !strings.Contains(out, "\nNo breaker of the 1 resource tripped (inferred from counts), and no entry was blocked.\n") {
		t.Errorf("all quiet, inferred:\n%s", out)
	}
}

// TestBlocksNoRuleExplains: blocks neither the breakers nor the flow rules
// are known to have made read "by rules not known" where breaker states
// were reported, and "by rules or breaker states not known" where they
// were inferred (breakers and flow rules both guarding it, a breaker not
// known to be CLOSED may have made them).
func TestBlocksNoRuleExplains(t *testing.T) {
	for states, want := range map[string]string{
		"exact":    "Blocked:                9 of 109 entries (8.3 %): 2 by breakers, 3 by flow or hot-parameter rules, 4 by rules not known\n",
		"inferred": "Blocked:                9 of 109 entries (8.3 %): 2 by breakers (inferred from counts), 3 by flow or hot-parameter rules, 4 by rules or breaker states not known\n",
	} {
		r := &Report{Source: "src", Resources: 1,
			ResourcesSeen: []ResourceSeen{{App: "shop", Resource: "db", Pass: 100, Block: 9, States: states}},
			Activity:      []collector.ResourceActivity{{App: "shop", Resource: "db", Block: 9, BreakerBlock: 2, FlowBlock: 3}}}
		if out := string(render(t, text, r)); !strings.Contains(out, want) {
			t.Errorf("%s: want %q in:\n%s", states, want, out)
		}
	}
}
