package core

import (
	"errors"
	"fmt"
	"testing"
)

// The tests in this file pin the java semantics of Breaker, one branch each,
// against Java Sentinel 1.8's source. Line numbers are those of tag 1.8.6 of
// alibaba/Sentinel (identical in 1.8.1 to 1.8.9), under
// sentinel-core/src/main/java/com/alibaba/csp/sentinel/slots/. The names
// RT, EX, ABS and LEAP stand for block/degrade/circuitbreaker/
// ResponseTimeCircuitBreaker.java, ExceptionCircuitBreaker.java,
// AbstractCircuitBreaker.java and statistic/base/LeapArray.java.
// TestBreakerJavaReplay checks the same branches against sequences recorded
// from Java itself.

// javaRule is a java-semantics rule over a 1000 ms window with a 5 s retry
// timeout that a single completion may trip.
func javaRule(s Strategy, threshold float64) BreakerRule {
	return BreakerRule{Resource: "java", Strategy: s, RetryTimeoutMs: 5000, MinRequestAmount: 1,
		StatIntervalMs: 1000, MaxAllowedRtMs: 100, Threshold: threshold, Semantics: SemanticsJava}
}

// tripAndProbe trips b with failed, slow completions at 1000 and lets the
// probe through at the retry time; it returns that time.
func tripAndProbe(t *testing.T, b *Breaker) int64 {
	t.Helper()
	for i := 0; i < 100 && b.State() == Closed; i++ {
		b.OnComplete(1000, 500, true)
	}
	if b.State() != Open {
		t.Fatal("did not trip")
	}
	at := b.NextRetryMs()
	if pass, probe := b.TryPass(at); !pass || !probe {
		t.Fatalf("no probe at the retry time %d", at)
	}
	return at
}

// TestBreakerJavaErrorCountTripsOnlyAboveThreshold pins EX:105 and EX:110
// (`double curCount = errCount; if (curCount > threshold)`): an error count
// equal to the threshold does not trip, one more does; a fractional threshold
// is not truncated (2 errors do not trip at 2.5, where sentinel-golang's
// `errors >= uint64(2.5)` would).
func TestBreakerJavaErrorCountTripsOnlyAboveThreshold(t *testing.T) {
	b, log := mustBreaker(t, javaRule(ErrorCount, 3))
	complete(b, 1000, 3, 10, true)
	if b.State() != Closed {
		t.Fatalf("3 errors tripped a java breaker at threshold 3: %v", log.states())
	}
	complete(b, 1000, 1, 10, true)
	if b.State() != Open || log.all[0].Snapshot != (WindowSnapshot{Total: 4, Bad: 4, Value: 4}) {
		t.Fatalf("4 errors at threshold 3: state %v transitions %+v", b.State(), log.all)
	}

	b, log = mustBreaker(t, javaRule(ErrorCount, 2.5))
	complete(b, 1000, 2, 10, true)
	if b.State() != Closed {
		t.Fatalf("2 errors tripped a java breaker at threshold 2.5: %v", log.states())
	}
	complete(b, 1000, 1, 10, true)
	if b.State() != Open {
		t.Fatal("3 errors did not trip a java breaker at threshold 2.5")
	}
}

// TestBreakerJavaRatioStrictWithoutEpsilon pins RT:111 and EX:110: the ratio
// must exceed the threshold as a double, with no tolerance. An error ratio of
// exactly 0.5 at 0.5 does not trip, and a slow ratio of 1/3 at 0.3333333334
// (below it by 7e-11, inside sentinel-golang's 1e-8) does not either, where
// the same rule with sentinel-golang semantics trips.
func TestBreakerJavaRatioStrictWithoutEpsilon(t *testing.T) {
	r := javaRule(ErrorRatio, 0.5)
	r.MinRequestAmount = 4
	b, log := mustBreaker(t, r)
	complete(b, 1000, 2, 10, false)
	complete(b, 1000, 2, 10, true)
	if b.State() != Closed {
		t.Fatalf("an error ratio of 0.5 tripped a java breaker at 0.5: %v", log.states())
	}
	complete(b, 1000, 1, 10, true)
	if b.State() != Open || log.all[0].Snapshot.Value != 0.6 {
		t.Fatalf("3/5 errors at 0.5: state %v transitions %+v", b.State(), log.all)
	}

	for _, sem := range []Semantics{SemanticsJava, SemanticsGo} {
		r := javaRule(SlowRequestRatio, 0.3333333334)
		r.MinRequestAmount, r.Semantics = 3, sem
		b, _ := mustBreaker(t, r)
		complete(b, 1000, 2, 10, false)
		complete(b, 1000, 1, 101, false)
		if want := map[Semantics]State{SemanticsJava: Closed, SemanticsGo: Open}[sem]; b.State() != want {
			t.Errorf("semantics %q: 1 slow of 3 at threshold 0.3333333334 left %v, want %v", sem, b.State(), want)
		}
	}
}

// TestBreakerJavaSlowRatioOneAtOneTrips pins RT:114-115: from 1.8.1 (commit
// 6f2f844, #1779) a slow ratio of exactly 1.0 trips a breaker whose threshold
// is 1.0, which `>` alone never would; 1.8.0 never trips such a breaker. The
// case needs both: a ratio below 1 at threshold 1 does not trip.
func TestBreakerJavaSlowRatioOneAtOneTrips(t *testing.T) {
	r := javaRule(SlowRequestRatio, 1)
	r.MinRequestAmount = 3
	b, log := mustBreaker(t, r)
	complete(b, 1000, 2, 101, false)
	if b.State() != Closed {
		t.Fatal("tripped below minRequestAmount")
	}
	complete(b, 1000, 1, 101, false)
	if b.State() != Open || log.all[0].Snapshot != (WindowSnapshot{Total: 3, Bad: 3, Value: 1}) {
		t.Fatalf("3 slow of 3 at threshold 1: state %v transitions %+v", b.State(), log.all)
	}

	b, log = mustBreaker(t, r)
	complete(b, 1000, 1, 10, false)
	complete(b, 1000, 3, 101, false)
	if b.State() != Closed {
		t.Fatalf("a slow ratio of 0.75 tripped a java breaker at threshold 1: %v", log.states())
	}
}

// TestBreakerJavaErrorRatioOneAtOneNeverTrips pins EX:110: the 1.0-at-1.0 case
// is ResponseTimeCircuitBreaker's only; ExceptionCircuitBreaker compares with
// `>` alone, so an error-ratio breaker at threshold 1.0 never trips, even
// when every completion fails.
func TestBreakerJavaErrorRatioOneAtOneNeverTrips(t *testing.T) {
	b, log := mustBreaker(t, javaRule(ErrorRatio, 1))
	complete(b, 1000, 50, 10, true)
	if b.State() != Closed {
		t.Fatalf("an error ratio of 1 tripped a java breaker at threshold 1: %v", log.states())
	}
}

// TestBreakerJavaLetsOneProbeThrough pins ABS:77 (`tryPass` returns false in
// HALF_OPEN) and RT:89-97 / EX:85-92 (the first completion in HALF_OPEN
// decides): with java semantics probeNum is ignored, so with probeNum 3 a
// second request in HALF_OPEN is blocked, and one good completion closes.
func TestBreakerJavaLetsOneProbeThrough(t *testing.T) {
	for _, probeNum := range []uint64{0, 1, 3} {
		r := javaRule(ErrorRatio, 0.5)
		r.ProbeNum = probeNum
		b, log := mustBreaker(t, r)
		at := tripAndProbe(t, b)
		if pass, probe := b.TryPass(at + 1); pass || probe {
			t.Errorf("probeNum %d: a second request passed in HALF_OPEN", probeNum)
		}
		b.OnComplete(at+20, 20, false)
		if b.State() != Closed {
			t.Errorf("probeNum %d: one good probe left %v: %v", probeNum, b.State(), log.states())
		}
	}
}

// TestBreakerJavaWindowIsOneTumblingBucket pins RT:45 and EX:44
// (`new SlowRequestLeapArray(1, rule.getStatIntervalMs())`): java semantics
// count in one bucket of statIntervalMs whatever
// statSlidingWindowBucketCount says, so the window tumbles. Errors at 1100
// and 1999 count together; at 2000 a new window starts empty, where
// sentinel-golang's ten sliding buckets still hold the last 1000 ms and trip
// on the fifth error.
func TestBreakerJavaWindowIsOneTumblingBucket(t *testing.T) {
	for _, sem := range []Semantics{SemanticsJava, SemanticsGo} {
		r := javaRule(ErrorCount, 4) // java trips above 4
		r.StatSlidingWindowBucketCount, r.Semantics = 10, sem
		if sem == SemanticsGo {
			r.Threshold = 5 // sentinel-golang trips at 5: both trip on the fifth error
		}
		if want := map[Semantics]int{SemanticsJava: 1, SemanticsGo: 10}[sem]; r.BucketCount() != want {
			t.Fatalf("semantics %q: BucketCount %d, want %d", sem, r.BucketCount(), want)
		}
		b, log := mustBreaker(t, r)
		complete(b, 1100, 1, 10, true)
		complete(b, 1999, 3, 10, true)
		if w := b.Window(1999); w.Total != 4 || w.Bad != 4 || b.State() != Closed {
			t.Fatalf("semantics %q: window at 1999 %+v, state %v", sem, w, b.State())
		}
		b.OnComplete(2000, 10, true)
		wantTotal, wantState := map[Semantics]int64{SemanticsJava: 1, SemanticsGo: 5}[sem], map[Semantics]State{SemanticsJava: Closed, SemanticsGo: Open}[sem]
		if w := b.Window(2000); w.Total != wantTotal || w.Bad != wantTotal || b.State() != wantState {
			t.Errorf("semantics %q: at 2000 window %+v state %v, want %d errors and %v (transitions %v)",
				sem, w, b.State(), wantTotal, wantState, log.states())
		}
	}
	// Five errors within one window do trip.
	b, _ := mustBreaker(t, javaRule(ErrorCount, 4))
	complete(b, 2000, 1, 10, true)
	complete(b, 2999, 4, 10, true)
	if b.State() != Open {
		t.Fatal("5 errors within [2000, 3000) did not trip at threshold 4")
	}
}

// TestBreakerJavaWindowBoundIsInclusive pins LEAP:270-271
// (`time - windowWrap.windowStart() > intervalInMs` deprecates a bucket): a
// read exactly statIntervalMs after the bucket's start still counts it, one
// millisecond later it does not.
func TestBreakerJavaWindowBoundIsInclusive(t *testing.T) {
	r := javaRule(ErrorCount, 10)
	r.StatIntervalMs = 1000
	b, _ := mustBreaker(t, r)
	complete(b, 1500, 2, 10, true) // bucket [1000, 2000)
	if w := b.Window(2000); w.Total != 2 {
		t.Fatalf("window read at 2000: %+v, want the bucket started at 1000", w)
	}
	if w := b.Window(2001); w.Total != 0 {
		t.Fatalf("window read at 2001: %+v, want nothing", w)
	}
}

// TestBreakerJavaCloseForgetsTheBucketBeforeNotifying pins ABS:141-145
// (`resetStat(); notifyObservers(HALF_OPEN, CLOSED)`) and RT:61 / EX:61
// (resetStat resets `currentWindow()`, the one bucket): a listener told of
// the close already sees an empty window, and what the bucket held before the
// close (the errors that tripped it, the probe) is gone, so tripping again
// takes threshold + 1 new errors even within the same bucket. (Resetting
// "the whole window" instead is the same thing with one bucket: see
// docs/SEMANTICS.md.)
func TestBreakerJavaCloseForgetsTheBucketBeforeNotifying(t *testing.T) {
	r := javaRule(ErrorCount, 2)
	r.StatIntervalMs, r.RetryTimeoutMs = 60000, 1000 // trip, probe and close all inside one bucket
	var b *Breaker
	var atClose *WindowSnapshot
	b, err := NewBreaker(r, javaObserver(func(tr Transition) {
		if tr.To == Closed {
			w := b.Window(tr.AtMs)
			atClose = &w
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	at := tripAndProbe(t, b) // 3 errors at 1000, probe at 2000
	b.OnComplete(at, 5, false)
	if b.State() != Closed || atClose == nil || *atClose != (WindowSnapshot{}) {
		t.Fatalf("state %v, window seen by the close listener %+v", b.State(), atClose)
	}
	complete(b, at+1, 2, 10, true)
	if w := b.Window(at + 1); w.Total != 2 || w.Bad != 2 || b.State() != Closed {
		t.Fatalf("after the close: window %+v state %v", w, b.State())
	}
	b.OnComplete(at+2, 10, true)
	if b.State() != Open {
		t.Fatal("3 errors after the close did not trip at threshold 2")
	}
}

// TestBreakerJavaClockBackwardsLosesSampleButJudges pins LEAP:197-199 (a
// time before the bucket's start gets a fresh bucket that is never stored)
// and LEAP:270-271 (a bucket that starts after now is not deprecated, so it
// still counts), and RT:66-81 / EX:71-77 (the completion is judged whatever
// bucket it went to). sentinel-golang semantics count it into the newer
// bucket instead, which a read at the earlier time does not see.
func TestBreakerJavaClockBackwardsLosesSampleButJudges(t *testing.T) {
	b, _ := mustBreaker(t, javaRule(ErrorCount, 5))
	b.OnComplete(5500, 10, false) // bucket [5000, 6000)
	b.OnComplete(4200, 10, true)  // behind the bucket: lost
	if w := b.Window(4200); w.Total != 1 || w.Bad != 0 {
		t.Fatalf("window read at 4200: %+v, want the bucket of 5000 and not the lost error", w)
	}
	if w := b.Window(5500); w.Total != 1 || w.Bad != 0 {
		t.Fatalf("window read at 5500: %+v, want the lost error left out", w)
	}

	// A probe whose completion reads a clock gone back still decides, and
	// the close resets the fresh bucket Java made, not the stored one.
	b, log := mustBreaker(t, javaRule(ErrorCount, 0))
	at := tripAndProbe(t, b) // tripped at 1000, probe at 6000
	b.OnComplete(at+10, 5, false)
	b.OnComplete(at+20, 5, true) // CLOSED, bucket [6000, 7000): 1 error trips
	if b.State() != Open {
		t.Fatal("did not trip again")
	}
	at = b.NextRetryMs() // 11020
	if pass, probe := b.TryPass(at); !pass || !probe {
		t.Fatal("no probe")
	}
	b.OnComplete(5900, 5, false) // the clock went back behind the bucket of 6000
	if b.State() != Closed {
		t.Fatalf("a good probe read on a clock gone back left %v: %v", b.State(), log.states())
	}
	if w := b.Window(5900); w.Total != 1 || w.Bad != 1 {
		t.Fatalf("window read at 5900 after the close: %+v, want the bucket of 6000 untouched (1 error)", w)
	}
}

// TestBreakerJavaRuleNeverKeepsAnotherWindow pins Java's
// DegradeRuleManager.getExistingSameCbOrNew (block/degrade/
// DegradeRuleManager.java:151-163): a breaker survives a reload only for an
// equal rule, any other rule gets a new breaker with an empty window. So a
// changed java rule starts afresh, and a window never passes between java
// and sentinel-golang semantics (their bucket counts differ).
func TestBreakerJavaRuleNeverKeepsAnotherWindow(t *testing.T) {
	g, clock, _ := newTestGuard(t)
	java := javaRule(ErrorCount, 5)
	java.Resource, java.StatSlidingWindowBucketCount = "r", 10 // ignored, but the same shape as goRule's
	goRule := java
	goRule.Semantics = SemanticsGo
	changed := java
	changed.Threshold = 6
	steps := []struct {
		rule    BreakerRule
		buckets int
	}{{java, 1}, {changed, 1}, {goRule, 10}, {java, 1}}
	for i, s := range steps {
		if err := g.LoadBreakerRules([]BreakerRule{s.rule}); err != nil {
			t.Fatal(err)
		}
		r, _ := g.Resource("r")
		b := r.Breakers()[0]
		if w := b.Window(clock.UnixMilli()); w.Total != 0 || b.stat.SampleCount() != s.buckets {
			t.Fatalf("step %d (%q threshold %v): window %+v in %d buckets, want empty in %d",
				i, s.rule.Semantics, s.rule.Threshold, w, b.stat.SampleCount(), s.buckets)
		}
		e, err := g.Entry("r")
		if err != nil {
			t.Fatal(err)
		}
		e.Exit(errors.New("x"))
	}
	for _, pair := range [][2]BreakerRule{{java, java}, {java, changed}, {java, goRule}, {goRule, java}} {
		if pair[0].sameStat(&pair[1]) {
			t.Errorf("sameStat(%q %v, %q %v) is true", pair[0].Semantics, pair[0].Threshold, pair[1].Semantics, pair[1].Threshold)
		}
	}
	if g2 := goRule; !goRule.sameStat(&g2) {
		t.Error("two sentinel-golang rules of one shape no longer share a window")
	}
}

// TestBreakerJavaRuleWarnings: fields that Java's DegradeRule cannot express
// are accepted with java semantics, and Warnings names each: a bucket count
// (RT:45, one bucket), probeNum (ABS:77, one probe) and a retry timeout that
// is not whole seconds (ABS:54, `rule.getTimeWindow() * 1000`).
func TestBreakerJavaRuleWarnings(t *testing.T) {
	r := javaRule(ErrorRatio, 0.5)
	if w := r.Warnings(); w != nil {
		t.Fatalf("a plain java rule warns: %v", w)
	}
	r.StatSlidingWindowBucketCount, r.ProbeNum, r.RetryTimeoutMs = 3, 2, 1500
	want := []string{
		"statSlidingWindowBucketCount 3 is ignored with java semantics: Java Sentinel 1.8 counts in 1 bucket of statIntervalMs",
		"probeNum 2 is ignored with java semantics: Java Sentinel 1.8 lets 1 probe through",
		"retryTimeoutMs 1500 is not whole seconds: Java Sentinel's timeWindow cannot express it",
	}
	if got := r.Warnings(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("warnings\n%q\nwant\n%q", got, want)
	}
	if err := r.Validate(); err != nil {
		t.Fatalf("rejected: %v", err)
	}
	r.StatSlidingWindowBucketCount, r.ProbeNum, r.RetryTimeoutMs = 1, 0, 2000
	if w := r.Warnings(); w != nil {
		t.Fatalf("bucket count 1 warns: %v", w)
	}
	r.Semantics = "Java"
	if err := r.Validate(); !errors.Is(err, ErrInvalidRule) {
		t.Fatalf("semantics %q accepted: %v", r.Semantics, err)
	}
}

// TestJavaDegradeRuleFieldMap pins the field map docs/SEMANTICS.md gives
// and TestBreakerJavaReplay uses: RT:52 (`Math.round(rule.getCount())`, so
// `count: 0.5` is a 1 ms bound and 100.4 a 100 ms one) and ABS:54
// (timeWindow in seconds). The rounded values are Java 17's Math.round.
func TestJavaDegradeRuleFieldMap(t *testing.T) {
	for count, want := range map[float64]uint64{0.5: 1, 1.5: 2, 2.5: 3, 100.4: 100, 150.5: 151, 199.6: 200, 0.49999999999999994: 0} {
		r := javaDegradeRule{Grade: 0, Count: count, SlowRatioThreshold: 0.5, TimeWindow: 10, MinRequestAmount: 5, StatIntervalMs: 1000}.coreRule()
		if r.MaxAllowedRtMs != want || r.Threshold != 0.5 || r.RetryTimeoutMs != 10000 || r.Strategy != SlowRequestRatio {
			t.Errorf("count %v: %+v, want maxAllowedRtMs %d", count, r, want)
		}
	}
	r := javaDegradeRule{Grade: 1, Count: 0.25, SlowRatioThreshold: 1, TimeWindow: 3, MinRequestAmount: 7, StatIntervalMs: 2000}.coreRule()
	if r != (BreakerRule{Resource: "r", Strategy: ErrorRatio, RetryTimeoutMs: 3000, MinRequestAmount: 7, StatIntervalMs: 2000,
		Threshold: 0.25, Semantics: SemanticsJava}) {
		t.Errorf("error ratio: %+v", r)
	}
}
