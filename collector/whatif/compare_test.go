package whatif

import (
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func slowRule(maxRt uint64) core.BreakerRule {
	return core.BreakerRule{Resource: "r", Strategy: core.SlowRequestRatio, MaxAllowedRtMs: maxRt, Threshold: 0.5,
		MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10_000}
}

func compare(t *testing.T, cases ...Case) *Result {
	t.Helper()
	res, err := Compare(cases)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A brownout the rule caught: raising maxAllowedRtMs over its calls'
// response times would blind the breaker, and the gate says so.
func TestBrownoutRaiseIsLost(t *testing.T) {
	cur := slowRule(300)
	var cases []Case
	for i, inst := range []string{"a", "b", "c"} {
		tr, trips := record(t, inst, cur, brownout, 30, 240_000, 500, uint64(i))
		if len(trips) == 0 {
			t.Fatalf("%s: the recorded breaker never tripped", inst)
		}
		prop := cur
		prop.MaxAllowedRtMs = 400
		cases = append(cases, Case{Trace: tr, Current: cur, Proposed: prop})
	}
	res := compare(t, cases...)
	if res.Outages != 3 || res.Current.OutagesCaught != 3 {
		t.Fatalf("outages %d, caught by the current rule %d; want 3 and 3", res.Outages, res.Current.OutagesCaught)
	}
	if res.Safe() || len(res.Lost) != 3 || res.Proposed.OutagesCaught != 0 {
		t.Fatalf("raising to 400 over a 340-390 ms brownout: lost %v, caught %d; want all 3 lost", res.Lost, res.Proposed.OutagesCaught)
	}
	for _, d := range res.Current.DetectMs {
		if d > 1500 {
			t.Errorf("the current rule detected the brownout after %d ms; want within 1.5 s", d)
		}
	}
	if !res.Estimated {
		t.Error("a bound between histogram edges and refused calls: want estimated")
	}

	// A higher minRequestAmount keeps catching it (hundreds of calls per window).
	for i := range cases {
		cases[i].Proposed = cur
		cases[i].Proposed.MinRequestAmount = 20
	}
	if res := compare(t, cases...); !res.Safe() || res.Proposed.OutagesCaught != 3 {
		t.Fatalf("minRequestAmount 20: lost %v, caught %d; want safe, 3", res.Lost, res.Proposed.OutagesCaught)
	}
}

// A downstream that is down for two minutes: a longer retry timeout
// sends fewer probes and lets fewer calls through, and catches the
// outage as soon.
func TestLongerRetrySendsFewerProbes(t *testing.T) {
	cur := core.BreakerRule{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5,
		StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 5_000}
	tr, trips := record(t, "a", cur, dbDown, 50, 200_000, 500, 1)
	prop := cur
	prop.RetryTimeoutMs = 30_000
	res := compare(t, Case{Trace: tr, Current: cur, Proposed: prop})
	if !res.Safe() || res.Outages != 1 || res.Proposed.OutagesCaught != 1 {
		t.Fatalf("lost %v, outages %d, caught %d", res.Lost, res.Outages, res.Proposed.OutagesCaught)
	}
	if got := res.Current.Trips; got < int64(len(trips))-1 || got > int64(len(trips))+1 {
		t.Errorf("the current rule replayed %d trips; the recorded breaker made %d", got, len(trips))
	}
	if res.Proposed.Probes >= res.Current.Probes || res.Proposed.Probes > 6 {
		t.Errorf("probes: current %d, proposed %d; want fewer, at most 6 (120 s / 30 s + 2)", res.Current.Probes, res.Proposed.Probes)
	}
	if !lessRange(res.Proposed.PassedDuringOutage, res.Current.PassedDuringOutage) {
		t.Errorf("passed during the outage: current %v, proposed %v", res.Current.PassedDuringOutage, res.Proposed.PassedDuringOutage)
	}
	// The recovery at 150 s: the longer timeout blocks healthy calls for
	// longer after it.
	if res.Proposed.BlockedHealthy[0] < res.Current.BlockedHealthy[0] {
		t.Errorf("blocked healthy: current %v, proposed %v", res.Current.BlockedHealthy, res.Proposed.BlockedHealthy)
	}
}

// A healthy, jittery service at 4 calls/s trips on handfuls of slow calls:
// there is no outage to lose, and minRequestAmount 20 with a window
// holding that many stops the trips that rest on fewer.
func TestLowConfidenceTripsGo(t *testing.T) {
	cur := slowRule(500)
	tr, trips := record(t, "a", cur, jittery, 4, 600_000, 500, 3)
	if len(trips) == 0 {
		t.Fatal("the recorded breaker never tripped")
	}
	prop := cur
	prop.MinRequestAmount, prop.StatIntervalMs = 20, 10_000
	res := compare(t, Case{Trace: tr, Current: cur, Proposed: prop})
	if res.Outages != 0 || !res.Safe() {
		t.Fatalf("outages %d, lost %v; a jittery healthy service has none", res.Outages, res.Lost)
	}
	if res.Current.LowConfidenceTrips == 0 || res.Proposed.LowConfidenceTrips != 0 || res.AddsLowConfidence() {
		t.Fatalf("low-confidence trips: current %d, proposed %d", res.Current.LowConfidenceTrips, res.Proposed.LowConfidenceTrips)
	}
	if !lessRange(res.Proposed.BlockedHealthy, res.Current.BlockedHealthy) {
		t.Errorf("blocked healthy: current %v, proposed %v", res.Current.BlockedHealthy, res.Proposed.BlockedHealthy)
	}
}

// lessRange reports whether a is below b at both ends.
func lessRange(a, b Range) bool { return a[0] <= b[0] && a[1] < b[1] }

// An input that ends inside an outage the current rule has not caught yet
// makes no change safe: what either rule would do is not known yet.
func TestOngoingOutageMakesNoChangeSafe(t *testing.T) {
	tr := &Trace{Instance: "a"}
	for s := int64(0); s < 62; s++ {
		b := Bucket{Start: s * 1000, Ms: 1000, Pass: 20, Complete: 20, RtMin: 10, RtMax: 30}
		if s >= 60 {
			b.Error = 15
		}
		tr.Buckets = append(tr.Buckets, b)
	}
	cur := core.BreakerRule{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 100,
		StatIntervalMs: 10_000, StatSlidingWindowBucketCount: 10, RetryTimeoutMs: 5000}
	prop := cur
	prop.MinRequestAmount = 20
	res := compare(t, Case{Trace: tr, Current: cur, Proposed: prop})
	if res.Safe() || len(res.Ongoing) != 1 || len(res.Lost) != 0 || res.Ongoing[0].From != 60_000 {
		t.Fatalf("safe %v, ongoing %+v, lost %+v", res.Safe(), res.Ongoing, res.Lost)
	}
	tr.Buckets = append(tr.Buckets, Bucket{Start: 62_000, Ms: 1000, Pass: 20, Complete: 20})
	if res := compare(t, Case{Trace: tr, Current: cur, Proposed: prop}); !res.Safe() {
		t.Fatalf("once the outage is over: ongoing %+v, lost %+v", res.Ongoing, res.Lost)
	}
}
