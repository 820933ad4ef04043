package triage

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// adviceTraffic feeds every instance a bucket of 500 ms every everyMs over
// [t0, t0+durMs), each with pass completions in one rtHist slot.
func adviceTraffic(e *Feeder, insts []string, res string, pass, everyMs, durMs int64, slot int) {
	for ts := t0; ts < t0+durMs; ts += everyMs {
		for _, in := range insts {
			e.Bucket(in, bucketAt(res, ts, hist(pass, slot), 0))
		}
	}
}

// TestRuleAdvice judges one rule on three instances with the same traffic.
// QPS is the mean offered load over the time reported: pass per 500 ms
// bucket, so 10 per bucket is 20 QPS; with a bucket every 1000 ms the
// silent 500 ms between buckets count as idle, so 1 per bucket is 1 QPS
// (240 over 239.5 s: 1.002, shown 1.0). windowRequests = QPS x
// statIntervalMs / 1000; minRequestSeconds = minRequestAmount / QPS; the
// healthy p99 is the upper bound of the one slot used (slot 4: 20 ms,
// slot 7: 200 ms, slot 8: 500 ms), given 200 completions or more, and the
// RT advice is judged and sized on the slot's lower bound (10, 100, 200).
func TestRuleAdvice(t *testing.T) {
	const res = "queryPrice"
	fine := slowRule(res) // minRequestAmount 20, 10 s window, 200 ms
	with := func(f func(r *core.BreakerRule)) core.BreakerRule { r := fine; f(&r); return r }
	cases := []struct {
		name                  string
		rule                  core.BreakerRule
		pass, everyMs, durMs  int64
		slot                  int
		json, summary, advice string // json "": no finding
	}{
		{"a rule that fits", fine, 10, 500, 30000, 4, "", "", ""},
		// 600 completions at 20 QPS: minRequestAmount 5 is 5 / 20 = 0.25 s.
		{"minRequestAmount 5", with(func(r *core.BreakerRule) { r.MinRequestAmount = 5 }), 10, 500, 30000, 4,
			`{"qps":20,"windowRequests":200,"minRequestSeconds":0.25,"p99Ms":20,"rtOverP99":10,"suggest":{"minRequestAmount":20}}`,
			"minRequestAmount 5 is under 20 (0.25 s of traffic at 20.0 QPS)",
			"raise minRequestAmount from 5 to 20 so that no trip rests on fewer than 20 calls"},
		// 5 per bucket is 10 QPS: a 1 s window holds 10; 20 take 2 s.
		{"a window of too few requests", with(func(r *core.BreakerRule) { r.StatIntervalMs = 1000 }), 5, 500, 30000, 4,
			`{"qps":10,"windowRequests":10,"minRequestSeconds":2,"p99Ms":20,"rtOverP99":10,"suggest":{"statIntervalMs":4000}}`,
			"a 1000 ms window holds only 10.0 requests at 10.0 QPS",
			"lengthen statIntervalMs from 1000 to 4000 ms so that 19 windows in 20 hold 20 requests at 10.0 QPS"},
		// Healthy p99 over 200 ms (at most 500): maxAllowedRtMs 200 is under
		// 2x200, which it is raised to.
		{"maxAllowedRtMs under twice the healthy p99", fine, 10, 500, 30000, 8,
			`{"qps":20,"windowRequests":200,"minRequestSeconds":1,"p99Ms":500,"rtOverP99":0.4,"suggest":{"maxAllowedRtMs":400}}`,
			"maxAllowedRtMs 200 is under 2x the healthy p99, which is over 200 ms (at most 500)",
			"raise maxAllowedRtMs from 200 to 400 (2x the least that p99 can be) so that healthy calls do not count as slow"},
		// Healthy p99 at most 200 ms, and perhaps 101: a bound of 200 is not
		// surely under 2x it, and 2x200 could blind the breaker to calls no
		// healthy one took. No RT advice (the side that keeps the breaker
		// sensitive).
		{"maxAllowedRtMs perhaps under twice the healthy p99", fine, 10, 500, 30000, 7, "", "", ""},
		// 1 QPS: 20 calls in 19 windows of 20 need a 31 s window (a 20 s one
		// holds fewer 47 % of the time).
		{"everything at once", with(func(r *core.BreakerRule) { r.MinRequestAmount, r.StatIntervalMs = 5, 1000 }), 1, 1000, 240000, 8,
			`{"qps":1,"windowRequests":1,"minRequestSeconds":5,"p99Ms":500,"rtOverP99":0.4,"suggest":{"minRequestAmount":20,"statIntervalMs":31000,"maxAllowedRtMs":400}}`,
			"minRequestAmount 5 is under 20 (5.00 s of traffic at 1.0 QPS), a 1000 ms window holds only 1.0 requests at 1.0 QPS and maxAllowedRtMs 200 is under 2x the healthy p99, which is over 200 ms (at most 500)",
			"raise minRequestAmount from 5 to 20 so that no trip rests on fewer than 20 calls, lengthen statIntervalMs from 1000 to 31000 ms so that 19 windows in 20 hold 20 requests at 1.0 QPS and raise maxAllowedRtMs from 200 to 400 (2x the least that p99 can be) so that healthy calls do not count as slow"},
		// Java's count 0.5 rounded: 1 ms. rtOverP99 = 1 / 20 = 0.05.
		{"maxAllowedRtMs 1: a ratio typed where an RT belongs", with(func(r *core.BreakerRule) { r.MaxAllowedRtMs = 1 }), 10, 500, 30000, 4,
			`{"qps":20,"windowRequests":200,"minRequestSeconds":1,"p99Ms":20,"rtOverP99":0.05,"suggest":{"maxAllowedRtMs":20}}`,
			"maxAllowedRtMs 1 counts nearly every call as slow",
			"set maxAllowedRtMs from 1 to 20 ms (2x the least the healthy p99 can be: over 10 ms, at most 20) and the ratio in threshold, as 1 ms is a ratio typed where a response time belongs (Java rounds count 0.5 to 1)"},
		// 3 per bucket for 30 s: 180 completions, no healthy p99, and no
		// value to propose; still called out.
		{"maxAllowedRtMs 1 without a healthy p99", with(func(r *core.BreakerRule) { r.MaxAllowedRtMs = 1 }), 3, 500, 30000, 4,
			`{"qps":6,"windowRequests":60,"minRequestSeconds":3.33}`,
			"maxAllowedRtMs 1 counts nearly every call as slow",
			"set maxAllowedRtMs from 1 to a response time in ms (2x the healthy p99, known after 200 healthy calls) and the ratio in threshold, as 1 ms is a ratio typed where a response time belongs (Java rounds count 0.5 to 1)"},
		{"an error-ratio rule has no p99", core.BreakerRule{Resource: res, Strategy: core.ErrorRatio, Threshold: 0.5,
			MinRequestAmount: 5, StatIntervalMs: 10000, RetryTimeoutMs: 10000}, 10, 500, 30000, 7,
			`{"qps":20,"windowRequests":200,"minRequestSeconds":0.25,"suggest":{"minRequestAmount":20}}`,
			"minRequestAmount 5 is under 20 (0.25 s of traffic at 20.0 QPS)",
			"raise minRequestAmount from 5 to 20 so that no trip rests on fewer than 20 calls"},
		// 180 completions of at most 200 ms: too few for a p99, so no RT
		// advice; the rest fits (60 requests per window).
		{"too few healthy calls for RT advice", fine, 3, 500, 30000, 7, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			insts := appFleet(e, "price", 3, t0, "v1", c.rule)
			adviceTraffic(e, insts, res, c.pass, c.everyMs, c.durMs, c.slot)
			got := only(t, e.Findings(t0+c.durMs), KindRuleAdvice)
			if (len(got) == 1) != (c.json != "") {
				t.Fatalf("got %d findings, want fires=%v: %+v", len(got), c.json != "", got)
			}
			if c.json == "" {
				return
			}
			f := got[0]
			b, err := json.Marshal(f.Facts)
			if err != nil || string(b) != c.json {
				t.Errorf("facts %s (%v)\nwant  %s", b, err, c.json)
			}
			if f.Summary != c.summary || f.Advice != c.advice {
				t.Errorf("summary %q\nadvice  %q", f.Summary, f.Advice)
			}
			if f.Severity != Info || len(f.Instances) != 3 || f.From != t0 || f.Facts.(*RuleAdviceFacts).Rule != c.rule {
				t.Errorf("finding %+v", f)
			}
		})
	}
}

// An outage never turns into RT advice: the rule is judged on the healthy
// traffic only.
//
// Three instances, maxAllowedRtMs 200, 10 calls of at most 20 ms per
// 500 ms bucket; from 60 s to 90 s every call takes up to 5 s, the
// breakers trip at 65 s and close at 95 s. Over the whole input, 600 of
// 2400 calls per instance were slow: a p99 of at most 5000 ms, which would
// have advised maxAllowedRtMs 10000, a threshold that never sees a 5 s
// outage. Healthy traffic leaves out 55 s to 95 s: 1600 calls of at most
// 20 ms, p99 20, and 200 >= 2 x 20 fits.
func TestRuleAdviceNeverFromAnOutage(t *testing.T) {
	const res = "db"
	e := NewFeeder(Config{})
	insts := appFleet(e, "order", 3, t0, "v1", slowRule(res))
	hists := func(start int64) [core.HistogramSlots]int64 {
		if start >= t0+60000 && start < t0+90000 {
			return hist(10, 11)
		}
		return hist(10, 4)
	}
	feed(e, insts, res, t0, t0+120000, hists, arrivals(0,
		trans(res, core.Closed, core.Open, t0+65000),
		trans(res, core.Open, core.HalfOpen, t0+94990),
		trans(res, core.HalfOpen, core.Closed, t0+95000)))
	if got := only(t, e.Findings(t0+120000), KindRuleAdvice); len(got) != 0 {
		t.Fatalf("advice from an outage: %+v", got)
	}
	if n := healthyN(e, "order-1", res); n != 1600 {
		t.Fatalf("%d healthy completions, want 1600", n)
	}
}

// QPS is the median of the mean offered loads of the instances the rule
// does not fit, and what it suggests derives from the QPS shown.
//
// a passes 1 entry every 2 s: 30 buckets, the last starting at 58 s, so it
// reported 58.5 s (30 x 500 ms of buckets and 29 x 1.5 s of idle between
// them): 30 / 58.5 = 0.513 QPS. b passes 3 per 500 ms bucket: 6 QPS. c
// passes 100 per bucket (200 QPS): a 1 s window holds 200, and its rule
// fits. The median of a and b is (0.513 + 6) / 2 = 3.256, shown 3.3; a 1 s
// window holds 3.3 requests; 20 need ceil(20 / 3.3) = 7 s; minRequestAmount
// 20 is 20 / 3.3 = 6.06 s of traffic.
func TestRuleAdviceQPS(t *testing.T) {
	const res = "r"
	r := slowRule(res)
	r.StatIntervalMs = 1000
	e := NewFeeder(Config{})
	for _, in := range []string{"a", "b", "c"} {
		e.Hello(in, "app", t0, t0)
		e.Rules(in, t0, "v1", []core.BreakerRule{r}, nil)
	}
	for ts := t0; ts < t0+60000; ts += 2000 {
		e.Bucket("a", BucketStat{Resource: res, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 1}})
	}
	for ts := t0; ts < t0+60000; ts += 500 {
		e.Bucket("b", BucketStat{Resource: res, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 3}})
		e.Bucket("c", BucketStat{Resource: res, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 100}})
	}
	f := one(t, e.Findings(t0+60000), KindRuleAdvice)
	x := f.Facts.(*RuleAdviceFacts)
	want := RuleAdviceFacts{QPS: 3.3, WindowRequests: 3.3, MinRequestSeconds: 6.06, Suggest: RuleAdviceSuggest{StatIntervalMs: 10000}, Rule: r}
	if *x != want || !reflect.DeepEqual(f.Instances, []string{"a", "b"}) {
		t.Fatalf("facts %+v on %v\nwant  %+v", *x, f.Instances, want)
	}
	// A duplicate bucket is ignored.
	e.Bucket("b", BucketStat{Resource: res, Start: t0 + 59500, BucketMs: 500, Metrics: core.Metrics{Pass: 1000}})
	if g := one(t, e.Findings(t0+60000), KindRuleAdvice); !reflect.DeepEqual(f, g) {
		t.Fatalf("a duplicate changed the finding: %+v", g)
	}
}

// The finding quotes the highest healthy p99 of its instances: the value
// that the suggested maxAllowedRtMs must cover on all of them.
//
// order-1's calls take over 50 and at most 100 ms (maxAllowedRtMs 80 is
// under 2x50), order-2's over 100 and at most 200 ms (under 2x100): both
// are judged, and the finding suggests 2 x 100 = 200, the least the
// highest p99 can be; rtOverP99 = 80 / 200.
func TestRuleAdviceHighestHealthyP99(t *testing.T) {
	const res = "db"
	r := slowRule(res)
	r.MaxAllowedRtMs = 80
	e := NewFeeder(Config{})
	appFleet(e, "order", 2, t0, "v1", r)
	adviceTraffic(e, []string{"order-1"}, res, 10, 500, 30000, 6)
	adviceTraffic(e, []string{"order-2"}, res, 10, 500, 30000, 7)
	x := one(t, e.Findings(t0+30000), KindRuleAdvice).Facts.(*RuleAdviceFacts)
	if x.P99Ms != 200 || x.RtOverP99 != 0.4 || x.Suggest != (RuleAdviceSuggest{MaxAllowedRtMs: 200}) {
		t.Fatalf("facts %+v", *x)
	}
}

// The finding spans its instances' reports: from the earliest first one to
// the latest last one, whichever instance (by name) sent them, and the
// span follows a later bucket.
func TestRuleAdviceSpansItsInstances(t *testing.T) {
	const res = "db"
	r := slowRule(res)
	r.MaxAllowedRtMs = 15 // under 2 x the healthy p99, over 10 ms
	e := NewFeeder(Config{})
	appFleet(e, "order", 2, t0, "v1", r)
	for ts := t0 + 10000; ts < t0+40000; ts += 500 {
		e.Bucket("order-1", bucketAt(res, ts, hist(10, 4), 0))
	}
	for ts := t0; ts < t0+30000; ts += 500 {
		e.Bucket("order-2", bucketAt(res, ts, hist(10, 4), 0))
	}
	f := one(t, e.Findings(t0+40000), KindRuleAdvice)
	if f.From != t0 || f.To != t0+40000 {
		t.Fatalf("from %d to %d, want %d to %d", f.From-t0, f.To-t0, 0, 40000)
	}
	e.Bucket("order-2", bucketAt(res, t0+40000, hist(10, 4), 0))
	if f = one(t, e.Findings(t0+40500), KindRuleAdvice); f.To != t0+40500 {
		t.Fatalf("to %d after a later bucket, want 40500", f.To-t0)
	}
}

// TestUnreceivedIsNotIdle: a silence of 55 s between buckets is idle
// traffic (the instance reported nothing because nothing came), unless
// its buckets are known never to have arrived. 1 call a bucket for 30 s,
// 55 s of silence, 30 s more: 2 QPS over the 60 s reported, 20 requests
// in the rule's 10 s window, which fits minRequestAmount 20; taken as
// idle, the silence would make it 1.04 QPS and advise a longer window.
// Spans never received before and after the silence, not overlapping it,
// leave it idle.
func TestUnreceivedIsNotIdle(t *testing.T) {
	const res = "queryPrice"
	rule := slowRule(res)
	rule.StatIntervalMs = 10_000
	for _, c := range []struct {
		name   string
		spans  [][2]int64 // never received, from t0
		advice bool
	}{
		{"idle", nil, true},
		{"never received", [][2]int64{{30_000, 85_000}}, false},
		{"never received around it", [][2]int64{{-600_000, -500_000}, {200_000, 300_000}}, true},
	} {
		e := NewFeeder(Config{})
		insts := appFleet(e, "price", 3, t0, "v1", rule)
		feed := func(from, to int64) {
			for ts := from; ts < to; ts += 500 {
				for _, in := range insts {
					e.Bucket(in, bucketAt(res, ts, hist(1, 4), 0))
				}
			}
		}
		feed(t0, t0+30_000)
		for _, sp := range c.spans {
			for _, in := range insts {
				e.Unreceived(in, t0+sp[0], t0+sp[1])
			}
		}
		feed(t0+85_000, t0+115_000)
		got := only(t, e.Findings(t0+115_000), KindRuleAdvice)
		if !c.advice && len(got) != 0 {
			t.Errorf("%s: buckets never received taken as idle: %+v", c.name, got)
		}
		if c.advice && (len(got) != 1 || got[0].Facts.(*RuleAdviceFacts).QPS != 1) {
			t.Errorf("%s: an idle silence: %+v; want advice at 1.0 QPS", c.name, got)
		}
	}
}

// A bucket judges its series' advice at once, a live series' only bucket
// between two Findings; a backlog (or a replay) is judged once at its
// first bucket and once at the next Findings, not bucket by bucket.
// (TestIncrementalFindingsMatchFromScratch holds the findings to those
// made afresh.)
func TestRuleAdviceJudgedOncePerBucketLiveTwiceABacklog(t *testing.T) {
	const res = "queryPrice"
	rule := slowRule(res)
	rule.MinRequestAmount = 5
	e := NewFeeder(Config{})
	insts := appFleet(e, "price", 3, t0, "v1", rule)
	e.Findings(t0)
	judged := func() int { n := e.advice.judged; e.advice.judged = 0; return n }
	judged()

	// A minute of buckets from each instance, then Findings: 3 at the
	// first buckets, 3 at Findings.
	adviceTraffic(e, insts, res, 10, 500, 60000, 4)
	if n := judged(); n != 3 {
		t.Fatalf("a minute's backlog of 3 series judged %d times before Findings, want 3", n)
	}
	backlog := only(t, e.Findings(t0+60000), KindRuleAdvice)
	if n := judged(); n != 3 {
		t.Fatalf("Findings judged %d series after a backlog, want 3", n)
	}

	// Live: a bucket of each between two Findings, judged as it comes.
	for k := int64(0); k < 4; k++ {
		ts := t0 + 60000 + k*500
		for _, in := range insts {
			e.Bucket(in, bucketAt(res, ts, hist(10, 4), 0))
		}
		if n := judged(); n != 3 {
			t.Fatalf("round %d: buckets judged %d series, want 3", k, n)
		}
		e.Findings(ts + 500)
		if n := judged(); n != 0 {
			t.Fatalf("round %d: Findings judged %d series again, want 0", k, n)
		}
	}
	if len(backlog) != 1 || len(backlog[0].Instances) != 3 {
		t.Fatalf("advice after the backlog: %+v", backlog)
	}
}

// TestRuleAdviceLegacyJava: a degrade rule of Java Sentinel before 1.8
// (an exception ratio of the last second) at 10 QPS holds 10 requests a
// window and trips on 5: the advice says so, and proposes none of the
// fields such a rule does not have (no statIntervalMs, no
// minRequestAmount), but Sentinel 1.8's circuit breakers.
func TestRuleAdviceLegacyJava(t *testing.T) {
	const res = "GET:/api/v1/price"
	r := core.BreakerRule{Resource: res, Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5,
		StatIntervalMs: 1000, RetryTimeoutMs: 10000, Semantics: core.SemanticsJava16}
	e := NewFeeder(Config{})
	insts := appFleet(e, "price", 2, t0, "v1", r)
	adviceTraffic(e, insts, res, 5, 500, 30000, 4)
	f := one(t, e.Findings(t0+30000), KindRuleAdvice)
	x := f.Facts.(*RuleAdviceFacts)
	if x.Suggest != (RuleAdviceSuggest{}) || !x.Legacy {
		t.Fatalf("suggest %+v for a rule without those fields", x.Suggest)
	}
	if b, _ := json.Marshal(x); strings.Contains(string(b), "suggest") {
		t.Errorf("json %s", b)
	}
	if !strings.Contains(f.Advice, "Sentinel 1.8's circuit breakers") || strings.Contains(f.Advice, "raise minRequestAmount") ||
		strings.Contains(f.Advice, "lengthen statIntervalMs") {
		t.Errorf("advice %q", f.Advice)
	}
	if f.Summary != "minRequestAmount 5 is under 20 (0.50 s of traffic at 10.0 QPS) and a 1000 ms window holds only 10.0 requests at 10.0 QPS" {
		t.Errorf("summary %q", f.Summary)
	}
}

// TestAdviceWindowDivisibleByBuckets: at 6 QPS, 20 requests in 19 windows
// of 20 take a window covering 4.65 s (Poisson): 5000 ms for Java's one
// bucket, and for a sentinel-golang window of 6 buckets (sure to cover 5/6
// of it) 6000, a multiple of 6 ms too, or Sentinel silently uses one
// bucket.
func TestAdviceWindowDivisibleByBuckets(t *testing.T) {
	const res = "db"
	r := slowRule(res)
	r.StatIntervalMs, r.StatSlidingWindowBucketCount = 1200, 6
	e := NewFeeder(Config{})
	insts := appFleet(e, "order", 1, t0, "v1", r)
	adviceTraffic(e, insts, res, 3, 500, 60000, 4)
	x := one(t, e.Findings(t0+60000), KindRuleAdvice).Facts.(*RuleAdviceFacts)
	if x.Suggest.StatIntervalMs != 6000 {
		t.Fatalf("suggest %+v at %.1f QPS", x.Suggest, x.QPS)
	}
	if got := adviceInterval(6, &core.BreakerRule{StatSlidingWindowBucketCount: 6, Semantics: core.SemanticsJava}); got != 5000 {
		t.Errorf("a Java window (one bucket): %d", got)
	}
}
