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
			e := New(Config{})
			fleet(e, "order", 1, t0, "v1", slowRule("r"))
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
	e := New(Config{})
	fleet(e, "order", 2, t0, "v1", slowRule("r"))
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
	want := "3 trips rested on fewer than 20 calls, the weakest on 2 slow of 3 (90% lower bound 0.32, threshold 0.5); 3 closed at the first probe and 2 came within 60 s of the instance's first traffic"
	if f.Summary != want {
		t.Fatalf("summary %q", f.Summary)
	}
}

func TestSawtooth(t *testing.T) {
	const res = "GET:/member/info"
	cases := []struct {
		name     string
		feed     func(e *Engine) int64 // returns now
		want     bool
		severity Severity
		count    int64
	}{
		{"2 failed probes are not a sawtooth", func(e *Engine) int64 {
			return sawtoothRun(e, "order-1", res, t0+10000, 10000, 2) + 1000
		}, false, 0, 0},
		{"3 failed probes are", func(e *Engine) int64 {
			return sawtoothRun(e, "order-1", res, t0+10000, 10000, 3) + 1000
		}, true, Critical, 3},
		{"2, CLOSED, 2 are not", func(e *Engine) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 2)
			closeBreaker(e, "order-1", res, end+10000)
			return sawtoothRun(e, "order-1", res, end+20000, 10000, 2) + 1000
		}, false, 0, 0},
		{"closed after the run: warning", func(e *Engine) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 4)
			closeBreaker(e, "order-1", res, end+10000)
			return end + 60000
		}, true, Warning, 4},
		{"a new short run after a closed one: warning", func(e *Engine) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 5)
			closeBreaker(e, "order-1", res, end+10000)
			return sawtoothRun(e, "order-1", res, end+20000, 10000, 1) + 1000
		}, true, Warning, 5},
		{"restart ends the run: warning", func(e *Engine) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			e.Hello("order-1", "order", end+1000, end+500)
			return end + 2000
		}, true, Warning, 3},
		{"bye at the end of the input: still critical", func(e *Engine) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			e.Bye("order-1", end+1000)
			return end + 2000
		}, true, Critical, 3},
		{"bye long before the end: warning", func(e *Engine) int64 {
			end := sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			e.Bye("order-1", end+1000)
			return end + 60000
		}, true, Warning, 3},
		{"two instances merge, count is the longest run", func(e *Engine) int64 {
			sawtoothRun(e, "order-1", res, t0+10000, 10000, 3)
			end := sawtoothRun(e, "order-2", res, t0+12000, 10000, 6)
			closeBreaker(e, "order-2", res, end+10000)
			return end + 20000
		}, true, Critical, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{})
			fleet(e, "order", 3, t0, "v1", slowRule(res))
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

func TestSyncHalfOpen(t *testing.T) {
	const res = "pay"
	// occasion makes the given instances enter HALF_OPEN at start+i*step,
	// then all re-open.
	occasion := func(e *Engine, insts []string, start, step int64) {
		for i, in := range insts {
			e.Transition(in, trans(res, core.Open, core.HalfOpen, start+int64(i)*step))
		}
		for i, in := range insts {
			e.Transition(in, trans(res, core.HalfOpen, core.Open, start+int64(i)*step+2000))
		}
	}
	trip := func(e *Engine, insts []string, at int64) {
		for _, in := range insts {
			e.Transition(in, trans(res, core.Closed, core.Open, at))
		}
	}
	cases := []struct {
		name      string
		instances int
		feed      func(e *Engine, insts []string) int64
		want      bool
		severity  Severity
		count     int64
		spread    int64
	}{
		{"3 of 4 within 1000 ms on 2 occasions", 4, func(e *Engine, in []string) int64 {
			trip(e, in[:3], t0+1000)
			occasion(e, in[:3], t0+11000, 300)
			occasion(e, in[:3], t0+23000, 450)
			return t0 + 30000
		}, true, Critical, 2, 900},
		{"one occasion is not enough", 4, func(e *Engine, in []string) int64 {
			trip(e, in[:3], t0+1000)
			occasion(e, in[:3], t0+11000, 300)
			return t0 + 30000
		}, false, 0, 0, 0},
		{"2 instances are not a herd", 2, func(e *Engine, in []string) int64 {
			trip(e, in, t0+1000)
			occasion(e, in, t0+11000, 300)
			occasion(e, in, t0+23000, 300)
			return t0 + 30000
		}, false, 0, 0, 0},
		{"3 of 8 reporters are less than half", 8, func(e *Engine, in []string) int64 {
			traffic(e, in, res, t0, t0+1000, 5)
			trip(e, in[:3], t0+1000)
			occasion(e, in[:3], t0+11000, 300)
			occasion(e, in[:3], t0+23000, 300)
			return t0 + 30000
		}, false, 0, 0, 0},
		{"4 of 8 reporters are half", 8, func(e *Engine, in []string) int64 {
			traffic(e, in, res, t0, t0+1000, 5)
			trip(e, in[:4], t0+1000)
			occasion(e, in[:4], t0+11000, 300)
			occasion(e, in[:4], t0+23000, 300)
			return t0 + 30000
		}, true, Critical, 2, 900},
		{"a spread of 1001 ms is not together", 3, func(e *Engine, in []string) int64 {
			trip(e, in, t0+1000)
			occasion(e, in, t0+11000, 501)
			occasion(e, in, t0+23000, 501)
			return t0 + 30000
		}, false, 0, 0, 0},
		{"a spread of exactly 1000 ms is", 3, func(e *Engine, in []string) int64 {
			trip(e, in, t0+1000)
			occasion(e, in, t0+11000, 500)
			occasion(e, in, t0+23000, 500)
			return t0 + 30000
		}, true, Critical, 2, 1000},
		{"all closed at the end: warning", 3, func(e *Engine, in []string) int64 {
			trip(e, in, t0+1000)
			occasion(e, in, t0+11000, 100)
			occasion(e, in, t0+23000, 100)
			occasion(e, in, t0+35000, 100)
			for i, n := range in {
				closeBreaker(e, n, res, t0+50000+int64(i)*3000)
			}
			return t0 + 60000
		}, true, Warning, 3, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{})
			insts := fleet(e, "gateway", c.instances, t0, "v1", slowRule(res))
			now := c.feed(e, insts)
			got := only(t, e.Findings(now), KindSyncHalfOpen)
			if (len(got) == 1) != c.want {
				t.Fatalf("got %d findings, want fires=%v: %+v", len(got), c.want, got)
			}
			if !c.want {
				return
			}
			f := got[0]
			if f.Severity != c.severity || f.count() != c.count || f.spreadMs() != c.spread {
				t.Fatalf("severity %v count %d spread %d, want %v %d %d", f.Severity, f.count(), f.spreadMs(), c.severity, c.count, c.spread)
			}
		})
	}
}

func TestRuleDrift(t *testing.T) {
	const res = "createOrder"
	old, pushed := slowRule(res), slowRule(res)
	pushed.Threshold = 0.8
	cases := []struct {
		name     string
		feed     func(e *Engine) int64
		want     bool
		severity Severity
		groups   []RuleGroup
	}{
		{"a push that reached 2 of 3 instances", func(e *Engine) int64 {
			fleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-2", t0+10100, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, true, Critical, []RuleGroup{
			{Version: "v2", Rule: RuleSet{Breakers: []core.BreakerRule{pushed}}, Instances: []string{"order-1", "order-2"}, FirstSeen: t0 + 10000},
			{Version: "v1", Rule: RuleSet{Breakers: []core.BreakerRule{old}}, Instances: []string{"order-3"}, FirstSeen: t0},
		}},
		{"a push that converged within the grace period", func(e *Engine) int64 {
			fleet(e, "order", 3, t0, "v1", old)
			for i, in := range []string{"order-1", "order-2", "order-3"} {
				e.Rules(in, t0+10000+int64(i)*1000, "v2", []core.BreakerRule{pushed}, nil)
			}
			return t0 + 60000
		}, false, 0, nil},
		{"a push that converged late: warning", func(e *Engine) int64 {
			fleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-2", t0+20000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-3", t0+30000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, true, Warning, []RuleGroup{ // as the episode ended
			{Version: "v2", Rule: RuleSet{Breakers: []core.BreakerRule{pushed}}, Instances: []string{"order-1", "order-2"}, FirstSeen: t0 + 10000},
			{Version: "v1", Rule: RuleSet{Breakers: []core.BreakerRule{old}}, Instances: []string{"order-3"}, FirstSeen: t0},
		}},
		{"a new rule missing on one instance", func(e *Engine) int64 {
			fleet(e, "order", 3, t0, "v1")
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Rules("order-2", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			return t0 + 60000
		}, true, Critical, []RuleGroup{
			{Version: "v2", Rule: RuleSet{Breakers: []core.BreakerRule{pushed}}, Instances: []string{"order-1", "order-2"}, FirstSeen: t0 + 10000},
			{Version: "v1", Instances: []string{"order-3"}, FirstSeen: t0},
		}},
		{"same rules in another order, other versions: no drift", func(e *Engine) int64 {
			other := slowRule("other")
			e.Hello("a", "order", t0, t0)
			e.Hello("b", "order", t0, t0)
			e.Rules("a", t0, "x", []core.BreakerRule{old, other}, nil)
			e.Rules("b", t0, "y", []core.BreakerRule{other, old}, nil)
			return t0 + 60000
		}, false, 0, nil},
		{"instances of different apps do not drift", func(e *Engine) int64 {
			fleet(e, "order", 2, t0, "v1", old)
			fleet(e, "pay", 2, t0, "v2", pushed)
			return t0 + 60000
		}, false, 0, nil},
		{"the odd instance left: warning", func(e *Engine) int64 {
			fleet(e, "order", 3, t0, "v1", old)
			e.Rules("order-1", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Bye("order-1", t0+30000)
			return t0 + 60000
		}, true, Warning, []RuleGroup{
			{Version: "v1", Rule: RuleSet{Breakers: []core.BreakerRule{old}}, Instances: []string{"order-2", "order-3"}, FirstSeen: t0},
			{Version: "v2", Rule: RuleSet{Breakers: []core.BreakerRule{pushed}}, Instances: []string{"order-1"}, FirstSeen: t0 + 10000},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{})
			now := c.feed(e)
			got := only(t, e.Findings(now), KindRuleDrift)
			if (len(got) == 1) != c.want {
				t.Fatalf("got %d findings, want fires=%v: %+v", len(got), c.want, got)
			}
			if !c.want {
				return
			}
			f := got[0]
			if f.Severity != c.severity {
				t.Fatalf("severity %v, want %v", f.Severity, c.severity)
			}
			if !reflect.DeepEqual(f.groups(), c.groups) {
				t.Fatalf("groups\n got %+v\nwant %+v", f.groups(), c.groups)
			}
		})
	}
}

func TestUnprotected(t *testing.T) {
	const res = "queryPrice"
	cases := []struct {
		name     string
		feed     func(e *Engine) int64
		want     bool
		severity Severity
		passed   int64
	}{
		{"one instance without the rule, to the end", func(e *Engine) int64 {
			in := fleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, append(in, "price-3"), res, t0, t0+10000, 7)
			return t0 + 10000
		}, true, Critical, 7 * 20},
		{"it got the rule later: warning", func(e *Engine) int64 {
			in := fleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, append(in, "price-3"), res, t0, t0+10000, 7)
			e.Rules("price-3", t0+10000, "v1", []core.BreakerRule{slowRule(res)}, nil)
			traffic(e, append(in, "price-3"), res, t0+10000, t0+20000, 7)
			return t0 + 20000
		}, true, Warning, 7 * 20},
		{"traffic stopped long before the end: warning", func(e *Engine) int64 {
			fleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, []string{"price-3"}, res, t0, t0+10000, 1)
			return t0 + 60000
		}, true, Warning, 20},
		{"shorter than the grace period: nothing", func(e *Engine) int64 {
			fleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, []string{"price-3"}, res, t0, t0+2000, 1)
			e.Rules("price-3", t0+2000, "v1", []core.BreakerRule{slowRule(res)}, nil)
			traffic(e, []string{"price-3"}, res, t0+2000, t0+20000, 1)
			return t0 + 20000
		}, false, 0, 0},
		{"no instance has a rule: nothing", func(e *Engine) int64 {
			in := fleet(e, "price", 3, t0, "v0")
			traffic(e, in, res, t0, t0+20000, 1)
			return t0 + 20000
		}, false, 0, 0},
		{"rules not known yet: nothing", func(e *Engine) int64 {
			fleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			traffic(e, []string{"price-3"}, res, t0, t0+20000, 1)
			return t0 + 20000
		}, false, 0, 0},
		{"a flow rule protects too", func(e *Engine) int64 {
			fleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v9", nil, []core.FlowRule{{Resource: res, Threshold: 100}})
			traffic(e, []string{"price-3"}, res, t0, t0+20000, 1)
			return t0 + 20000
		}, false, 0, 0},
		{"blocked only (pass 0) is not passing", func(e *Engine) int64 {
			fleet(e, "price", 2, t0, "v1", slowRule(res))
			e.Hello("price-3", "price", t0, t0)
			e.Rules("price-3", t0, "v0", nil, nil)
			traffic(e, []string{"price-3"}, res, t0, t0+20000, 0)
			return t0 + 20000
		}, false, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{})
			now := c.feed(e)
			got := only(t, e.Findings(now), KindUnprotected)
			if (len(got) == 1) != c.want {
				t.Fatalf("got %d findings, want fires=%v: %+v", len(got), c.want, got)
			}
			if !c.want {
				return
			}
			f := got[0]
			if f.Severity != c.severity || f.passed() != c.passed || !slices.Equal(f.Instances, []string{"price-3"}) {
				t.Fatalf("severity %v passed %d instances %v, want %v %d", f.Severity, f.passed(), f.Instances, c.severity, c.passed)
			}
		})
	}
}

func TestSharedResource(t *testing.T) {
	e := New(Config{})
	z := fleet(e, "zeta", 1, t0, "v1")
	a := fleet(e, "alpha", 2, t0, "v1")
	b := fleet(e, "beta", 1, t0, "v1")
	traffic(e, z, "GET:/shared", t0, t0+5000, 1)
	traffic(e, a, "GET:/shared", t0+1000, t0+5000, 1)
	traffic(e, b, "GET:/shared", t0+2000, t0+6000, 1)
	traffic(e, a, "GET:/own", t0, t0+5000, 1)
	fs := e.Findings(t0 + 6000)
	f := one(t, fs, KindSharedResource)
	if f.App != "alpha" || !slices.Equal(f.apps(), []string{"alpha", "beta", "zeta"}) || f.Resource != "GET:/shared" {
		t.Fatalf("finding %+v", f)
	}
	if !slices.Equal(f.Instances, []string{"alpha-1", "alpha-2", "beta-1", "zeta-1"}) || f.Severity != Warning {
		t.Fatalf("finding %+v", f)
	}
	if f.From != t0+1500 || f.To != t0+6000 {
		t.Fatalf("from %d to %d", f.From-t0, f.To-t0)
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
		e := New(Config{})
		r := slowRule("r")
		r.StatIntervalMs, r.StatSlidingWindowBucketCount = c.interval, c.buckets
		fleet(e, "order", 2, t0, "v1", r)
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
	e := New(Config{})
	r := slowRule("queryPrice")
	insts := fleet(e, "price", 4, t0, "v1", r, slowRule("createOrder"))
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
		e := New(Config{})
		bad := slowRule("m")
		bad.StatSlidingWindowBucketCount = 3
		bad.MinRequestAmount = 3
		insts := fleet(e, "order", 4, t0, "v1", slowRule("r"), bad)
		fleet(e, "pay", 1, t0, "v1")
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
	e := New(Config{})
	fleet(e, "order", 1, t0, "v1", slowRule("r"))
	sawtoothRun(e, "order-1", "r", t0, 1000, 10000)
	b := e.insts["order-1"].series["r"].breakers[0]
	if b.nring != timelineLen || b.spacings.n != spacingLen || b.probeRts.n != spacingLen || b.maxRun != 10000 {
		t.Fatalf("ring %d spacings %d probes %d run %d", b.nring, b.spacings.n, b.probeRts.n, b.maxRun)
	}
	f := one(t, e.Findings(t0+20_000_000), KindSawtooth)
	if f.periodMs() != 1000 || f.count() != 10000 || len(f.Timelines[0].Steps) > timelineLen {
		t.Fatalf("finding %+v", f)
	}
}

func TestAppChangeAndDataBeforeHello(t *testing.T) {
	e := New(Config{})
	// Data before the hello joins the app once the hello names it.
	e.Rules("x-1", t0, "v1", []core.BreakerRule{slowRule("r")}, nil)
	traffic(e, []string{"x-1"}, "r", t0, t0+1000, 1)
	e.Hello("x-1", "order", t0+1000, t0)
	if in := e.insts["x-1"]; in.app.name != "order" || in.series["r"].ar.app.name != "order" || !in.hasRules {
		t.Fatalf("instance not moved: %+v", in)
	}
	c := e.Counts()
	if c.Apps != 1 || c.Instances != 1 || c.Resources != 1 || c.From != t0 || c.To != t0+1000 {
		t.Fatalf("counts %+v", c)
	}
}

// The UI asks for findings while the collector feeds the engine.
func TestConcurrentFeedAndFindings(t *testing.T) {
	e := New(Config{})
	insts := fleet(e, "order", 4, t0, "v1", slowRule("r"))
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
