package triage

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func TestWilsonLower(t *testing.T) {
	cases := []struct {
		k, n int64
		want float64 // rounded to 2 decimals
	}{
		{3, 5, 0.33},
		{30, 50, 0.51},
		{5, 5, 0.75},
		{1, 1, 0.38},
		{0, 10, 0},
		{60, 100, 0.54},
		{6, 10, 0.40},
		{31, 62, 0.42},
		{364, 728, 0.48},
	}
	for _, c := range cases {
		if got := WilsonLower(c.k, c.n); round(got, 2) != c.want {
			t.Errorf("WilsonLower(%d, %d) = %.4f, want %.2f", c.k, c.n, got, c.want)
		}
	}
	if WilsonLower(1, 0) != 0 {
		t.Error("n = 0 must give 0")
	}
}

func TestLowConfidenceTrip(t *testing.T) {
	cases := []struct {
		name     string
		strategy core.Strategy
		k, n     int64
		thr      float64
		want     bool
	}{
		{"3 of 5 at 0.5 fires", core.SlowRequestRatio, 3, 5, 0.5, true},
		{"30 of 50 at 0.5 does not", core.SlowRequestRatio, 30, 50, 0.5, false},
		{"error ratio 3 of 5 fires", core.ErrorRatio, 3, 5, 0.5, true},
		{"error count is not a ratio", core.ErrorCount, 3, 5, 0.5, false},
		{"no requests is not judged", core.SlowRequestRatio, 0, 0, 0.5, false},
		{"bad above total is refused", core.SlowRequestRatio, 6, 5, 0.5, false},
		{"threshold above 1 is refused", core.SlowRequestRatio, 3, 5, 1.5, false},
		{"5 of 5 at 0.5 fires: 5 calls are few", core.SlowRequestRatio, 5, 5, 0.5, true},
		{"19 of 19 fires", core.SlowRequestRatio, 19, 19, 0.5, true},
		{"10 of 20 does not", core.SlowRequestRatio, 10, 20, 0.5, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			appFleet(e, "order", 1, t0, "v1", slowRule("r"))
			tr := trans("r", core.Closed, core.Open, t0+1000)
			tr.Strategy, tr.Threshold = c.strategy, c.thr
			tr.Snapshot = core.WindowSnapshot{Total: c.n, Bad: c.k, Value: float64(c.k) / max(float64(c.n), 1)}
			e.Transition("order-1", tr)
			got := only(t, e.Findings(t0+2000), KindLowConfidenceTrip)
			if (len(got) == 1) != c.want {
				t.Fatalf("got %d findings, want fires=%v", len(got), c.want)
			}
			if !c.want {
				return
			}
			f := got[0]
			if f.Severity != Warning || f.count() != 1 || f.worst() != (Evidence{K: c.k, N: c.n, Lower: round(WilsonLower(c.k, c.n), 2)}) {
				t.Fatalf("finding = %+v", f)
			}
		})
	}
}

func TestLowConfidenceTripMerged(t *testing.T) {
	e := NewFeeder(Config{})
	appFleet(e, "order", 2, t0, "v1", slowRule("r"))
	for i, c := range []struct {
		inst string
		k, n int64
	}{{"order-1", 3, 5}, {"order-2", 4, 6}, {"order-1", 2, 3}, {"order-2", 30, 50}} {
		tr := trans("r", core.Closed, core.Open, t0+int64(i+1)*20000)
		tr.Snapshot = core.WindowSnapshot{Total: c.n, Bad: c.k}
		e.Transition(c.inst, tr)
		e.Transition(c.inst, trans("r", core.Open, core.HalfOpen, t0+int64(i+1)*20000+10000))
		e.Transition(c.inst, trans("r", core.HalfOpen, core.Closed, t0+int64(i+1)*20000+10001))
	}
	f := one(t, e.Findings(t0+100000), KindLowConfidenceTrip)
	if f.count() != 3 || f.worst() != (Evidence{K: 2, N: 3, Lower: 0.32}) {
		t.Fatalf("count %d worst %+v", f.count(), f.worst())
	}
	if !slices.Equal(f.Instances, []string{"order-1", "order-2"}) || f.From != t0+20000 || f.To != t0+70001 {
		t.Fatalf("finding = %+v", f)
	}
	want := "3 trips rested on fewer than 20 calls, the weakest on 2 slow of 3 (90% lower bound 0.32, threshold 0.5); 3 closed at the first probe and 2 came within 60 s of the instance's process start"
	if f.Summary != want {
		t.Fatalf("summary %q", f.Summary)
	}
}

func TestSawtooth(t *testing.T) {
	const res = "GET:/member/info"
	cases := []struct {
		name     string
		feed     func(e *Feeder) int64 // returns now
		want     bool
		severity Severity
		count    int64
	}{
		{"2 failed probes are not a sawtooth", func(e *Feeder) int64 {
			return sawtoothRun(e, "order-1", res, t0+10000, 10000, 2) + 1000
		}, false, 0, 0},
		{"3 failed probes are", func(e *Feeder) int64 {
			return sawtoothRun(e, "order-1", res, t0+10000, 10000, 3) + 1000
		}, true, Critical, 3},
		{"2, CLOSED, 2 are not", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 2)
			closeBreaker(e, "order-1", res, end+10000)
			return sawtoothRun(e, "order-1", res, end+20000, 10000, 2) + 1000
		}, false, 0, 0},
		{"closed after the run: warning", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 4)
			closeBreaker(e, "order-1", res, end+10000)
			return end + 60000
		}, true, Warning, 4},
		{"a new short run after a closed one: warning", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 5)
			closeBreaker(e, "order-1", res, end+10000)
			return sawtoothRun(e, "order-1", res, end+50000, 10000, 1) + 1000
		}, true, Warning, 5},
		{"closed less than HoldMs ago: still critical", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 5)
			closeBreaker(e, "order-1", res, end+10000)
			return end + 10000 + DefaultHoldMs - 1
		}, true, Critical, 5},
		{"closed exactly HoldMs ago: warning", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 5)
			closeBreaker(e, "order-1", res, end+10000)
			return end + 10000 + DefaultHoldMs
		}, true, Warning, 5},
		{"restart ends the run: warning once HoldMs passed", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			e.Hello("order-1", "order", end+1000, end+500)
			return end + 500 + DefaultHoldMs
		}, true, Warning, 3},
		{"restart a moment ago: still critical", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			e.Hello("order-1", "order", end+1000, end+500)
			return end + 2000
		}, true, Critical, 3},
		{"bye at the end of the input: still critical", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			e.Bye("order-1", end+1000)
			return end + 2000
		}, true, Critical, 3},
		{"bye long before the end: warning", func(e *Feeder) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			e.Bye("order-1", end+1000)
			return end + 60000
		}, true, Warning, 3},
		{"two instances merge, count is the longest run", func(e *Feeder) int64 {
			sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			end := sawtoothRun(e, "order-2", res, t0+12000, 10000, 6)
			closeBreaker(e, "order-2", res, end+10000)
			return end + 20000
		}, true, Critical, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			appFleet(e, "order", 3, t0, "v1", slowRule(res))
			now := c.feed(e)
			got := only(t, e.Findings(now), KindSawtooth)
			if (len(got) == 1) != c.want {
				t.Fatalf("got %d findings, want fires=%v: %+v", len(got), c.want, got)
			}
			if c.want && (got[0].Severity != c.severity || got[0].count() != c.count) {
				t.Fatalf("severity %v count %d, want %v %d", got[0].Severity, got[0].count(), c.severity, c.count)
			}
		})
	}
}

func TestWindowMisaligned(t *testing.T) {
	cases := []struct {
		interval, buckets uint32
		want              bool
		advice            string
	}{
		{1000, 3, true, "set statSlidingWindowBucketCount to a divisor of 1000 such as 2, or statIntervalMs to a multiple of 3 such as 1002"},
		{1000, 2, false, ""},
		{1000, 0, false, ""},
		{10000, 7, true, "set statSlidingWindowBucketCount to a divisor of 10000 such as 8, or statIntervalMs to a multiple of 7 such as 10003"},
		{7, 2, true, "set statIntervalMs to a multiple of 2 such as 8"},
	}
	for _, c := range cases {
		e := NewFeeder(Config{})
		r := slowRule("r")
		r.StatIntervalMs, r.StatSlidingWindowBucketCount = c.interval, c.buckets
		appFleet(e, "order", 2, t0, "v1", r)
		got := only(t, e.Findings(t0+1000), KindWindowMisaligned)
		if (len(got) == 1) != c.want {
			t.Fatalf("%d/%d: got %d findings, want fires=%v", c.interval, c.buckets, len(got), c.want)
		}
		if !c.want {
			continue
		}
		f := got[0]
		if f.rule() != r || f.Severity != Warning || f.Advice != c.advice || len(f.Instances) != 2 {
			t.Fatalf("%d/%d: finding %+v", c.interval, c.buckets, f)
		}
	}
}

func TestHealthyStreamGivesNoWarning(t *testing.T) {
	e := NewFeeder(Config{})
	r := slowRule("queryPrice")
	insts := appFleet(e, "price", 4, t0, "v1", r, slowRule("createOrder"))
	traffic(e, insts, "queryPrice", t0, t0+120000, 50)
	traffic(e, insts, "createOrder", t0, t0+120000, 30)
	// A rule push reaching the instances within a second.
	pushed := r
	pushed.Threshold = 0.6
	for i, in := range insts {
		e.Rules(in, t0+60000+int64(i)*200, "v2", []core.BreakerRule{pushed, slowRule("createOrder")}, nil)
	}
	// A well-founded trip and recovery on one instance.
	tr := trans("queryPrice", core.Closed, core.Open, t0+70000)
	tr.Snapshot = core.WindowSnapshot{Total: 200, Bad: 180, Value: 0.9}
	e.Transition(insts[0], tr)
	closeBreaker(e, insts[0], "queryPrice", t0+80000)
	for _, in := range insts {
		e.Bye(in, t0+120000)
	}
	for _, f := range e.Findings(t0 + 120000) {
		if f.Severity >= Warning {
			t.Errorf("healthy stream gave %s %s: %s", f.Severity, f.Kind, f.Summary)
		}
	}
}

func TestFindingsOrderAndDeterminism(t *testing.T) {
	feed := func() []Finding {
		e := NewFeeder(Config{})
		bad := slowRule("m")
		bad.StatSlidingWindowBucketCount = 3
		bad.MinRequestAmount = 3
		insts := appFleet(e, "order", 4, t0, "v1", slowRule("r"), bad)
		appFleet(e, "pay", 1, t0, "v1")
		traffic(e, []string{"pay-1"}, "r", t0, t0+1000, 1)
		traffic(e, insts, "m", t0, t0+1000, 5)
		// Three instances in step: a sawtooth and a recovery flood.
		for i, in := range insts[:3] {
			tr := trans("r", core.Closed, core.Open, t0+1000+int64(i)*100)
			tr.Snapshot = core.WindowSnapshot{Total: 100, Bad: 90}
			e.Transition(in, tr)
		}
		for p := int64(1); p <= 4; p++ {
			for i, in := range insts[:3] {
				e.Transition(in, trans("r", core.Open, core.HalfOpen, t0+1000+p*10000+int64(i)*100))
			}
			for i, in := range insts[:3] {
				e.Transition(in, trans("r", core.HalfOpen, core.Open, t0+1000+p*10000+int64(i)*100+50))
			}
		}
		tr := trans("m", core.Closed, core.Open, t0+500)
		tr.Snapshot = core.WindowSnapshot{Total: 5, Bad: 3}
		e.Transition(insts[3], tr)
		return e.Findings(t0 + 60000)
	}
	a, b := feed(), feed()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same input, different findings")
	}
	var kinds []Kind
	for i, f := range a {
		kinds = append(kinds, f.Kind)
		if i > 0 && compareFindings(&a[i-1], &f) > 0 {
			t.Fatalf("findings out of order at %d", i)
		}
	}
	want := []Kind{KindSawtooth, KindSyncHalfOpen, KindWindowMisaligned, KindLowConfidenceTrip, KindSharedResource, KindRuleAdvice}
	if !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
}

func TestBoundedState(t *testing.T) {
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", slowRule("r"))
	sawtoothRun(e, "order-1", "r", t0, 1000, 10000)
	b := e.inst("order-1").series["r"].breakers[0]
	if b.spacings.n != spacingLen || b.probeRts.n != spacingLen || b.maxRun != 10000 {
		t.Fatalf("spacings %d probes %d run %d", b.spacings.n, b.probeRts.n, b.maxRun)
	}
	f := one(t, e.Findings(t0+20_000_000), KindSawtooth)
	if f.periodMs() != 1000 || f.count() != 10000 {
		t.Fatalf("finding %+v", f)
	}
}

func TestAppChangeAndDataBeforeHello(t *testing.T) {
	e := NewFeeder(Config{})
	// Data before the hello joins the app once the hello names it.
	e.Rules("x-1", t0, "v1", []core.BreakerRule{slowRule("r")}, nil)
	traffic(e, []string{"x-1"}, "r", t0, t0+1000, 1)
	e.Hello("x-1", "order", t0+1000, t0)
	if in := e.inst("x-1"); in.app.name != "order" || in.series["r"].ar.app.name != "order" || !in.hasRules() {
		t.Fatalf("instance not moved: %+v", in)
	}
	c := e.Counts()
	if c.Apps != 1 || c.Instances != 1 || c.Resources != 1 || c.From != t0 || c.To != t0+1000 {
		t.Fatalf("counts %+v", c)
	}
}

// The UI asks for findings while the collector feeds the engine.
func TestConcurrentFeedAndFindings(t *testing.T) {
	e := NewFeeder(Config{})
	insts := appFleet(e, "order", 4, t0, "v1", slowRule("r"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			ts := t0 + int64(i)*500
			traffic(e, insts, "r", ts, ts+500, 3)
			if i%10 == 0 {
				sawtoothRun(e, insts[i/10%4], "r", ts, 1, 3)
			}
		}
	}()
	for {
		select {
		case <-done:
			if len(e.Findings(t0+100000)) == 0 {
				t.Fatal("no findings")
			}
			return
		default:
			_ = e.Findings(t0 + 50000)
			_ = e.Counts()
		}
	}
}
