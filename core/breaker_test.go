package core

import (
	"errors"
	"sync"
	"testing"
)

type transitionLog struct {
	mu  sync.Mutex
	all []Transition
}

func (l *transitionLog) OnTransition(t Transition) {
	l.mu.Lock()
	l.all = append(l.all, t)
	l.mu.Unlock()
}

func (l *transitionLog) states() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.all))
	for i, t := range l.all {
		out[i] = t.From.String() + ">" + t.To.String()
	}
	return out
}

func mustBreaker(t *testing.T, r BreakerRule) (*Breaker, *transitionLog) {
	t.Helper()
	log := &transitionLog{}
	b, err := NewBreaker(r, log)
	if err != nil {
		t.Fatal(err)
	}
	return b, log
}

func slowRule() BreakerRule {
	return BreakerRule{Resource: "price", Strategy: SlowRequestRatio, RetryTimeoutMs: 10000,
		MinRequestAmount: 5, StatIntervalMs: 1000, MaxAllowedRtMs: 200, Threshold: 0.5}
}

// complete runs n completions of rtMs at now through b.
func complete(b *Breaker, now int64, n int, rtMs int64, failed bool) {
	for i := 0; i < n; i++ {
		b.OnComplete(now, rtMs, failed)
	}
}

func TestBreakerTripsAtThresholdNotBelow(t *testing.T) {
	const now = 1_000_000
	// 2 slow of 4 is 0.5 but under minRequestAmount 5: no trip.
	b, log := mustBreaker(t, slowRule())
	complete(b, now, 2, 300, false)
	complete(b, now, 2, 10, false)
	if b.State() != Closed {
		t.Fatalf("tripped below minRequestAmount: %v", log.states())
	}
	// The fifth completion, fast: 2/5 = 0.4 < 0.5.
	complete(b, now, 1, 10, false)
	if b.State() != Closed {
		t.Fatalf("tripped at 0.4: %v", log.states())
	}
	// 3/6 = 0.5 exactly: sentinel-golang trips at >=.
	complete(b, now, 1, 201, false)
	if b.State() != Open {
		t.Fatalf("did not trip at exactly the threshold")
	}
	tr := log.all[0]
	if tr.From != Closed || tr.To != Open || tr.AtMs != now || tr.Snapshot != (WindowSnapshot{Total: 6, Bad: 3, Value: 0.5}) {
		t.Fatalf("transition = %+v", tr)
	}
	if tr.Threshold != 0.5 || tr.RetryTimeoutMs != 10000 || tr.Resource != "price" {
		t.Fatalf("transition rule fields = %+v", tr)
	}
}

func TestBreakerRtAtLimitIsNotSlow(t *testing.T) {
	b, _ := mustBreaker(t, slowRule())
	complete(b, 5000, 10, 200, false) // exactly maxAllowedRtMs: not slow
	if got := b.Window(5000); got.Bad != 0 || got.Total != 10 {
		t.Fatalf("window = %+v", got)
	}
}

func TestBreakerJavaSemanticsTripsOnlyAbove(t *testing.T) {
	r := slowRule()
	r.Semantics = SemanticsJava
	b, _ := mustBreaker(t, r)
	complete(b, 1000, 3, 10, false)
	complete(b, 1000, 3, 500, false) // 3/6 = 0.5: not above
	if b.State() != Closed {
		t.Fatal("java semantics tripped at exactly the threshold")
	}
	complete(b, 1000, 1, 500, false) // 4/7
	if b.State() != Open {
		t.Fatal("java semantics did not trip above the threshold")
	}
}

func TestBreakerRetryTimeoutBoundary(t *testing.T) {
	b, log := mustBreaker(t, slowRule())
	complete(b, 1000, 5, 500, false)
	if b.State() != Open || b.NextRetryMs() != 11000 {
		t.Fatalf("state %v next retry %d", b.State(), b.NextRetryMs())
	}
	if pass, _ := b.TryPass(10999); pass {
		t.Fatal("passed 1 ms before the retry timeout")
	}
	pass, probe := b.TryPass(11000)
	if !pass || !probe || b.State() != HalfOpen {
		t.Fatalf("at the retry timeout: pass=%v probe=%v state=%v", pass, probe, b.State())
	}
	// probeNum 0: only the probe passes while HALF_OPEN.
	if pass, _ := b.TryPass(11001); pass {
		t.Fatal("a second request passed in HALF_OPEN with probeNum 0")
	}
	if got := log.states(); len(got) != 2 || got[1] != "OPEN>HALF_OPEN" {
		t.Fatalf("transitions %v", got)
	}
}

func TestBreakerProbeFailureReopens(t *testing.T) {
	b, log := mustBreaker(t, slowRule())
	complete(b, 1000, 5, 500, false)
	b.TryPass(11000)
	b.OnComplete(11400, 400, false) // slow probe
	if b.State() != Open || b.NextRetryMs() != 21400 {
		t.Fatalf("state %v next retry %d", b.State(), b.NextRetryMs())
	}
	last := log.all[len(log.all)-1]
	if last.From != HalfOpen || last.To != Open || last.Probe == nil || last.Probe.RtMs != 400 {
		t.Fatalf("last transition %+v", last)
	}
}

func TestBreakerProbeSuccessClosesAndForgets(t *testing.T) {
	b, log := mustBreaker(t, slowRule())
	complete(b, 1000, 5, 500, false)
	b.TryPass(11000)
	b.OnComplete(11000, 20, false)
	if b.State() != Closed {
		t.Fatalf("state %v after a fast probe", b.State())
	}
	if w := b.Window(11000); w.Total != 0 {
		t.Fatalf("window not reset on close: %+v", w)
	}
	if got := log.states(); got[len(got)-1] != "HALF_OPEN>CLOSED" {
		t.Fatalf("transitions %v", got)
	}
}

func TestBreakerProbeNum(t *testing.T) {
	r := slowRule()
	r.ProbeNum = 3
	b, _ := mustBreaker(t, r)
	complete(b, 1000, 5, 500, false)
	b.TryPass(11000)
	// With probeNum > 0 every request passes while HALF_OPEN.
	for i := 0; i < 5; i++ {
		if pass, probe := b.TryPass(11001); !pass || probe {
			t.Fatalf("request %d in HALF_OPEN: pass=%v probe=%v", i, pass, probe)
		}
	}
	complete(b, 11010, 2, 20, false)
	if b.State() != HalfOpen {
		t.Fatalf("closed after 2 of 3 probes: %v", b.State())
	}
	complete(b, 11010, 1, 20, false)
	if b.State() != Closed {
		t.Fatalf("not closed after 3 good probes: %v", b.State())
	}
}

func TestBreakerAbortProbeKeepsRetryTime(t *testing.T) {
	b, _ := mustBreaker(t, slowRule())
	complete(b, 1000, 5, 500, false)
	b.TryPass(11000)
	b.AbortProbe(11000)
	if b.State() != Open || b.NextRetryMs() != 11000 {
		t.Fatalf("state %v next retry %d", b.State(), b.NextRetryMs())
	}
	if pass, probe := b.TryPass(11001); !pass || !probe {
		t.Fatal("the next request did not probe again")
	}
}

func TestBreakerErrorCount(t *testing.T) {
	b, log := mustBreaker(t, BreakerRule{Resource: "db", Strategy: ErrorCount, RetryTimeoutMs: 5000,
		MinRequestAmount: 1, StatIntervalMs: 10000, StatSlidingWindowBucketCount: 10, Threshold: 3})
	complete(b, 100, 2, 10, true)
	complete(b, 1100, 10, 10, false)
	if b.State() != Closed {
		t.Fatal("tripped at 2 errors")
	}
	complete(b, 2100, 1, 10, true)
	if b.State() != Open || log.all[0].Snapshot.Value != 3 || log.all[0].Snapshot.Total != 13 {
		t.Fatalf("state %v transitions %+v", b.State(), log.all)
	}
}

func TestBreakerErrorRatioSlidesOut(t *testing.T) {
	b, _ := mustBreaker(t, BreakerRule{Resource: "db", Strategy: ErrorRatio, RetryTimeoutMs: 5000,
		MinRequestAmount: 4, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, Threshold: 0.5})
	complete(b, 100, 3, 10, true) // bucket [0,500)
	// At 1200 the bucket [0,500) is older than the interval and no longer counts.
	complete(b, 1200, 1, 10, true)
	complete(b, 1200, 3, 10, false)
	if w := b.Window(1200); w.Total != 4 || w.Bad != 1 || b.State() != Closed {
		t.Fatalf("window %+v state %v", w, b.State())
	}
}

func TestBreakerClockBackwardsDropsSample(t *testing.T) {
	b, _ := mustBreaker(t, BreakerRule{Resource: "x", Strategy: ErrorCount, RetryTimeoutMs: 1000,
		StatIntervalMs: 1000, StatSlidingWindowBucketCount: 10, Threshold: 1})
	b.OnComplete(5000, 1, false)
	b.OnComplete(4000, 1, true) // same slot, older bucket: dropped
	if w := b.Window(5000); w.Total != 1 || b.State() != Closed {
		t.Fatalf("window %+v state %v", w, b.State())
	}
	// One bucket: sentinel-golang counts it into the newer bucket, but the
	// window read at the earlier time sees nothing (that bucket is in its future).
	one, _ := mustBreaker(t, BreakerRule{Resource: "x", Strategy: ErrorCount, RetryTimeoutMs: 1000,
		StatIntervalMs: 1000, Threshold: 1})
	one.OnComplete(5000, 1, false)
	one.OnComplete(4000, 1, true)
	if w := one.Window(5000); w.Total != 2 || w.Bad != 1 || one.State() != Closed {
		t.Fatalf("single bucket: window %+v state %v", w, one.State())
	}
}

func TestBreakerRuleValidation(t *testing.T) {
	base := slowRule()
	cases := map[string]func(r *BreakerRule){
		"resource is empty":        func(r *BreakerRule) { r.Resource = "" },
		"statIntervalMs":           func(r *BreakerRule) { r.StatIntervalMs = 0 },
		"retryTimeoutMs":           func(r *BreakerRule) { r.RetryTimeoutMs = 0 },
		"within [0, 1]":            func(r *BreakerRule) { r.Threshold = 1.5 },
		"non-negative":             func(r *BreakerRule) { r.Threshold = -1 },
		"strategy 7":               func(r *BreakerRule) { r.Strategy = 7 },
		"semantics \"cobol\" is n": func(r *BreakerRule) { r.Semantics = "cobol" },
	}
	for want, mutate := range cases {
		r := base
		mutate(&r)
		err := r.Validate()
		if !errors.Is(err, ErrInvalidRule) || !contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	ok := base
	ok.Strategy, ok.Threshold = ErrorCount, 50 // counts may exceed 1
	if err := ok.Validate(); err != nil {
		t.Errorf("error count threshold 50: %v", err)
	}
}

func TestBreakerMisalignedWindowFallsBackToOneBucket(t *testing.T) {
	r := slowRule()
	r.StatSlidingWindowBucketCount = 3
	if !r.WindowMisaligned() || r.BucketCount() != 1 || len(r.Warnings()) != 1 {
		t.Fatalf("misaligned=%v buckets=%d warnings=%v", r.WindowMisaligned(), r.BucketCount(), r.Warnings())
	}
	r.StatSlidingWindowBucketCount = 4
	if r.WindowMisaligned() || r.BucketCount() != 4 || r.Warnings() != nil {
		t.Fatal("aligned window reported as misaligned")
	}
}

func TestBreakerConcurrentUse(t *testing.T) {
	b, log := mustBreaker(t, BreakerRule{Resource: "x", Strategy: ErrorRatio, RetryTimeoutMs: 10,
		StatIntervalMs: 100, StatSlidingWindowBucketCount: 10, Threshold: 0.3, MinRequestAmount: 5})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				now := int64(1000 + i)
				if pass, _ := b.TryPass(now); pass {
					b.OnComplete(now, 5, (i+g)%3 == 0)
				}
			}
		}(g)
	}
	wg.Wait()
	// Listeners run after the state change, so concurrent transitions may be
	// reported out of order; each one must still be a legal edge.
	legal := map[string]bool{"CLOSED>OPEN": true, "OPEN>HALF_OPEN": true, "HALF_OPEN>OPEN": true, "HALF_OPEN>CLOSED": true}
	got := log.states()
	if len(got) == 0 {
		t.Fatal("a 33% error ratio over a 30% threshold never tripped")
	}
	for _, s := range got {
		if !legal[s] {
			t.Fatalf("illegal transition %s in %v", s, got)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
