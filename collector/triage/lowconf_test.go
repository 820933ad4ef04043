package triage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// lcFeed is an engine with one instance of app "order" running rule r on
// resource r.Resource, started at startedAt.
func lcFeed(r core.BreakerRule, startedAt int64) *Feeder {
	e := NewFeeder(Config{})
	e.Hello("order-1", "order", t0, startedAt)
	e.Rules("order-1", t0, "v1", []core.BreakerRule{r}, nil)
	return e
}

// lcTrip opens the breaker of r on order-1 at at, on bad of total.
func lcTrip(e *Feeder, r core.BreakerRule, at, bad, total int64) {
	t := trans(r.Resource, core.Closed, core.Open, at)
	t.Strategy, t.Threshold = r.Strategy, r.Threshold
	t.Snapshot = core.WindowSnapshot{Total: total, Bad: bad, Value: float64(bad) / float64(total)}
	e.Transition("order-1", t)
}

// lcProbe lets one probe through at at, which closes the breaker or not.
func lcProbe(e *Feeder, r core.BreakerRule, at int64, closes bool) {
	to := core.Open
	if closes {
		to = core.Closed
	}
	e.Transition("order-1", trans(r.Resource, core.Open, core.HalfOpen, at-10))
	p := trans(r.Resource, core.HalfOpen, to, at)
	p.Probe = &core.Probe{RtMs: 40}
	e.Transition("order-1", p)
}

func lcFacts(t *testing.T, e *Feeder, now int64) *LowConfidenceFacts {
	t.Helper()
	return one(t, e.Findings(now), KindLowConfidenceTrip).Facts.(*LowConfidenceFacts)
}

// A sliding window crosses the threshold one call at a time, so a real
// trip's ratio sits at the threshold and its Wilson bound is below it: an
// error rate ramping to 100 % trips on 31 bad of 62, a database slow at 2 s
// on 364 of 728. Windows that large are evidence, whatever the bound, and
// whatever the first probe found.
func TestLowConfidenceRealOutagesAreNotFindings(t *testing.T) {
	ramp := slowRule("POST:/pay")
	ramp.Strategy = core.ErrorRatio
	db := slowRule("GET:/member")
	for _, c := range []struct {
		r          core.BreakerRule
		bad, total int64
	}{{ramp, 31, 62}, {db, 364, 728}} {
		if WilsonLower(c.bad, c.total) >= c.r.Threshold {
			t.Fatalf("%d of %d: the bound is not under the threshold; the case shows nothing", c.bad, c.total)
		}
		e := lcFeed(c.r, t0)
		lcTrip(e, c.r, t0+70000, c.bad, c.total)
		lcProbe(e, c.r, t0+80000, true)
		if got := only(t, e.Findings(t0+100000), KindLowConfidenceTrip); len(got) != 0 {
			t.Errorf("%d of %d: %+v", c.bad, c.total, got)
		}
	}
}

// The first probe after a trip decides: a failed one shows the downstream
// was failing (no finding, whatever probes follow); one that closes the
// breaker counts the trip; a trip with no probe yet counts.
func TestLowConfidenceFirstProbe(t *testing.T) {
	r := slowRule("r")
	r.MinRequestAmount = 5
	cases := []struct {
		name         string
		feed         func(e *Feeder)
		count, close int64
	}{
		{"the first probe failed", func(e *Feeder) {
			lcTrip(e, r, t0+1000, 3, 5)
			lcProbe(e, r, t0+11000, false)
			lcProbe(e, r, t0+21000, true)
		}, 0, 0},
		{"the first probe closed", func(e *Feeder) {
			lcTrip(e, r, t0+1000, 3, 5)
			lcProbe(e, r, t0+11000, true)
		}, 1, 1},
		{"no probe yet", func(e *Feeder) {
			lcTrip(e, r, t0+1000, 3, 5)
		}, 1, 0},
		{"closed without a probe", func(e *Feeder) {
			lcTrip(e, r, t0+1000, 3, 5)
			e.Transition("order-1", trans("r", core.Open, core.Closed, t0+5000))
		}, 1, 0},
		{"one of two failed its probe", func(e *Feeder) {
			lcTrip(e, r, t0+1000, 3, 5)
			lcProbe(e, r, t0+11000, true)
			lcTrip(e, r, t0+30000, 4, 6)
			lcProbe(e, r, t0+40000, false)
		}, 1, 1},
		{"a restart keeps the trip", func(e *Feeder) {
			lcTrip(e, r, t0+1000, 3, 5)
			e.Hello("order-1", "order", t0+2000, t0+1500)
			lcTrip(e, r, t0+30000, 4, 6)
			lcProbe(e, r, t0+40000, false)
		}, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := lcFeed(r, t0-3_600_000)
			c.feed(e)
			got := only(t, e.Findings(t0+60000), KindLowConfidenceTrip)
			if c.count == 0 {
				if len(got) != 0 {
					t.Fatalf("findings %+v", got)
				}
				return
			}
			x := lcFacts(t, e, t0+60000)
			if x.Count != c.count || x.ClosedAtFirstProbe != c.close {
				t.Fatalf("count %d closedAtFirstProbe %d, want %d %d", x.Count, x.ClosedAtFirstProbe, c.count, c.close)
			}
		})
	}
}

// sentinel-golang trips at >= the threshold, Java Sentinel 1.8 only above.
// Each trip comes more than statIntervalMs (10000 ms) after the probe that
// closed the one before.
func TestLowConfidenceAtThreshold(t *testing.T) {
	r := slowRule("r")
	r.MinRequestAmount = 5
	e := lcFeed(r, t0-3_600_000)
	lcTrip(e, r, t0+1000, 3, 6) // 0.5 at 0.5
	lcProbe(e, r, t0+11000, true)
	lcTrip(e, r, t0+25000, 3, 5) // 0.6
	lcProbe(e, r, t0+35000, true)
	r6 := r
	r6.Threshold = 0.6
	lcTrip(e, r6, t0+50000, 3, 5) // 0.6 at 0.6
	x := lcFacts(t, e, t0+60000)
	if x.Count != 3 || x.AtThreshold != 2 {
		t.Fatalf("count %d atThreshold %d, want 3 2", x.Count, x.AtThreshold)
	}
	// The weakest: 3 of 5 at 0.6 (bound 0.33, 0.27 under), not 3 of 6 at
	// 0.5 (bound 0.27, 0.23 under).
	if x.Worst != (Evidence{K: 3, N: 5, Lower: 0.33}) || x.Threshold != 0.6 {
		t.Fatalf("worst %+v threshold %v", x.Worst, x.Threshold)
	}
}

// Revision 3: a trip the breaker follows with another within one
// statIntervalMs (10000 ms) after the probe that closed it shows that the
// downstream was failing: it is not counted, nor is the first probe's
// close. One further apart is counted; the trip that ends the pair is
// judged on its own.
func TestLowConfidenceTripAgainAfterTheClose(t *testing.T) {
	r := slowRule("r")
	r.MinRequestAmount = 5
	cases := []struct {
		name         string
		again        int64 // the next trip, after the close at t0+11000
		count, close int64
	}{
		{"at the close", t0 + 11000, 1, 0},
		{"1 ms after", t0 + 11001, 1, 0},
		{"one statIntervalMs after", t0 + 21000, 1, 0},
		{"1 ms later than that", t0 + 21001, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := lcFeed(r, t0-3_600_000)
			lcTrip(e, r, t0+1000, 3, 5)
			lcProbe(e, r, t0+11000, true)
			if x := lcFacts(t, e, t0+11500); x.Count != 1 || x.ClosedAtFirstProbe != 1 {
				t.Fatalf("before the next trip: count %d closedAtFirstProbe %d, want 1 1", x.Count, x.ClosedAtFirstProbe)
			}
			lcTrip(e, r, c.again, 4, 6)
			x := lcFacts(t, e, t0+60000)
			if x.Count != c.count || x.ClosedAtFirstProbe != c.close {
				t.Fatalf("count %d closedAtFirstProbe %d, want %d %d", x.Count, x.ClosedAtFirstProbe, c.count, c.close)
			}
			if c.count == 1 && x.Worst != (Evidence{K: 4, N: 6, Lower: 0.41}) {
				t.Fatalf("worst %+v: the first trip is still counted", x.Worst)
			}
		})
	}
	// A trip again after a failed probe's reopening is no trip from CLOSED;
	// one after a CLOSED without a probe does not drop the trip before.
	e := lcFeed(r, t0-3_600_000)
	lcTrip(e, r, t0+1000, 3, 5)
	e.Transition("order-1", trans("r", core.Open, core.Closed, t0+5000))
	lcTrip(e, r, t0+5500, 4, 6)
	if x := lcFacts(t, e, t0+60000); x.Count != 2 || x.ClosedAtFirstProbe != 0 {
		t.Fatalf("after a CLOSED without a probe: count %d closedAtFirstProbe %d, want 2 0", x.Count, x.ClosedAtFirstProbe)
	}
}

// coldStart counts the trips within 60 s of the instance's process start
// (hello startedAt), never from the first traffic an input shows: a
// recording, a backfill or a metric log may begin long after the start.
// Without a start it is unknown: absent, never 0.
func TestLowConfidenceColdStart(t *testing.T) {
	r := slowRule("gray")
	r.MinRequestAmount = 5
	const hour = 3_600_000
	// An instance started at 15:50:14 whose data (a reconnect's backfill)
	// begins at 15:51:11; t0 is 00:00:00 of its day.
	start := t0 + (15*3600+50*60+14)*1000
	backfill := t0 + (15*3600+51*60+11)*1000
	cases := []struct {
		name      string
		startedAt int64
		first     int64 // the resource's first traffic in the input
		at        int64 // the trip
		want      *int64
	}{
		{"115 s after the start, 58 s after the backfill began", start, backfill, t0 + (15*3600+52*60+9)*1000, ptr(0)},
		{"59 s after the start, 2 s after the backfill began", start, backfill, start + 59000, ptr(1)},
		{"60 s after the start", start, start, start + 60000, ptr(1)},
		{"61 s after the start", start, start, start + 61000, ptr(0)},
		{"a gray resource 5 s after its first traffic, an hour after the start", t0 - hour, t0 + 30000, t0 + 35000, ptr(0)},
		{"before the start told", t0 + 10000, t0, t0 + 5000, ptr(0)},
		{"the start unknown", 0, t0, t0 + 5000, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := lcFeed(r, c.startedAt)
			traffic(e, []string{"order-1"}, "gray", c.first, c.at, 2)
			lcTrip(e, r, c.at, 3, 5)
			lcProbe(e, r, c.at+10000, true)
			x := lcFacts(t, e, c.at+20000)
			if (x.ColdStart == nil) != (c.want == nil) || c.want != nil && *x.ColdStart != *c.want {
				t.Fatalf("coldStart %v, want %v", show(x.ColdStart), show(c.want))
			}
			b, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == nil && strings.Contains(string(b), "coldStart") {
				t.Fatalf("an unknown start in the JSON: %s", b)
			}
			cold := ""
			for _, f := range x.Evidence() {
				if f.Label == "Cold start" {
					cold = f.Parts[0].Text
				}
			}
			want := "unknown (the instances' process start is not known)"
			if c.want != nil {
				want = itoa(*c.want) + " within 60 s of the process start"
			}
			if cold != want {
				t.Fatalf("cold start fact %q, want %q", cold, want)
			}
		})
	}
}

// Of two instances, one without a start: the trips whose start is known
// are judged, and the other is said to be unknown.
func TestLowConfidenceColdStartPartlyKnown(t *testing.T) {
	r := slowRule("gray")
	r.MinRequestAmount = 5
	e := lcFeed(r, t0)
	e.Hello("order-2", "order", t0, 0)
	e.Rules("order-2", t0, "v1", []core.BreakerRule{r}, nil)
	lcTrip(e, r, t0+30000, 3, 5)
	t2 := trans("gray", core.Closed, core.Open, t0+31000)
	t2.Snapshot = core.WindowSnapshot{Total: 6, Bad: 4, Value: 4.0 / 6}
	e.Transition("order-2", t2)
	f := one(t, e.Findings(t0+40000), KindLowConfidenceTrip)
	x := f.Facts.(*LowConfidenceFacts)
	if x.ColdStart == nil || *x.ColdStart != 1 || x.ColdKnown != 1 {
		t.Fatalf("coldStart %v of %d known", show(x.ColdStart), x.ColdKnown)
	}
	if want := "1 of the 1 trips whose process start is known came within 60 s of the process start; unknown for the other 1"; coldWords(x) != want {
		t.Fatalf("cold start %q", coldWords(x))
	}
	if !strings.HasSuffix(f.Summary, "; 1 came within 60 s of the instance's process start") ||
		!strings.HasSuffix(f.Advice, "and warm the connections (a few calls at startup) before taking traffic") {
		t.Fatalf("summary %q\nadvice %q", f.Summary, f.Advice)
	}
}

func ptr(n int64) *int64 { return &n }

func show(p *int64) string {
	if p == nil {
		return "absent"
	}
	return itoa(*p)
}

// The advice's numbers: minRequestAmount 20, what that is in seconds of
// traffic at the QPS seen, and the statIntervalMs that holds 20 requests
// 19 times in 20: a window of 2 buckets is sure to cover only half its
// interval (its older bucket leaves whole), so at 10 QPS 6000 ms.
func TestLowConfidenceAdvice(t *testing.T) {
	price := slowRule("price")
	price.MinRequestAmount, price.StatIntervalMs, price.StatSlidingWindowBucketCount = 5, 1000, 2
	gray := slowRule("gray")
	gray.MinRequestAmount = 5
	cases := []struct {
		name      string
		r         core.BreakerRule
		perBucket int64 // passed per 500 ms bucket
		coldStart bool
		suggest   LowConfidenceSuggest
		summary   string
		advice    string
	}{
		{"10 QPS in a 1 s window", price, 5, false, LowConfidenceSuggest{MinRequestAmount: 20, StatIntervalMs: 6000},
			"2 trips rested on fewer than 20 calls, the weakest on 3 slow of 6 (90% lower bound 0.27, threshold 0.5); " +
				"1 closed at the first probe and 1 tripped at the threshold exactly (Java Sentinel 1.8 trips only above it)",
			"raise minRequestAmount from 5 to 20 and statIntervalMs from 1000 to 6000 ms so that a trip rests on at least 20 calls " +
				"(2.0 s of traffic at 10.0 QPS, which a 6000 ms window holds 19 times in 20), not on a few slow ones"},
		{"4 QPS in a 10 s window, cold", gray, 2, true, LowConfidenceSuggest{MinRequestAmount: 20},
			"2 trips rested on fewer than 20 calls, the weakest on 3 slow of 6 (90% lower bound 0.27, threshold 0.5); " +
				"1 closed at the first probe, 1 tripped at the threshold exactly (Java Sentinel 1.8 trips only above it) " +
				"and 2 came within 60 s of the instance's process start",
			"raise minRequestAmount from 5 to 20 so that a trip rests on at least 20 calls " +
				"(5.0 s of traffic at 4.0 QPS, which the 10000 ms window holds), not on a few slow ones, " +
				"and warm the connections (a few calls at startup) before taking traffic"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			startedAt := t0 - 3_600_000
			if c.coldStart {
				startedAt = t0
			}
			e := lcFeed(c.r, startedAt)
			traffic(e, []string{"order-1"}, c.r.Resource, t0, t0+60000, c.perBucket)
			lcTrip(e, c.r, t0+20000, 3, 6)
			lcProbe(e, c.r, t0+30000, true)
			lcTrip(e, c.r, t0+41000, 4, 5) // 11 s after the close: more than either window
			x := lcFacts(t, e, t0+60000)
			if x.Suggest != c.suggest {
				t.Errorf("suggest %+v, want %+v", x.Suggest, c.suggest)
			}
			f := one(t, e.Findings(t0+60000), KindLowConfidenceTrip)
			if f.Summary != c.summary {
				t.Errorf("summary\n got %q\nwant %q", f.Summary, c.summary)
			}
			if f.Advice != c.advice {
				t.Errorf("advice\n got %q\nwant %q", f.Advice, c.advice)
			}
		})
	}
}

// Without rules or traffic the advice still names its proposal, without
// numbers it cannot know.
func TestLowConfidenceAdviceUnknowns(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("order-1", "order", t0, t0-3_600_000)
	tr := trans("r", core.Closed, core.Open, t0+1000)
	tr.Strategy = core.ErrorRatio
	tr.Snapshot = core.WindowSnapshot{Total: 4, Bad: 3}
	e.Transition("order-1", tr)
	f := one(t, e.Findings(t0+2000), KindLowConfidenceTrip)
	want := "1 trip rested on fewer than 20 calls: 3 failed of 4 (90% lower bound 0.43, threshold 0.5)"
	if f.Summary != want {
		t.Errorf("summary %q", f.Summary)
	}
	if want := "raise minRequestAmount to 20 so that a trip rests on at least 20 calls, not on a few failed ones"; f.Advice != want {
		t.Errorf("advice %q", f.Advice)
	}
}

// The facts' JSON is the kind's own fields of findings-v1.
func TestLowConfidenceJSON(t *testing.T) {
	r := slowRule("r")
	r.MinRequestAmount, r.StatIntervalMs = 5, 1000
	e := lcFeed(r, t0)
	traffic(e, []string{"order-1"}, "r", t0, t0+20000, 5)
	lcTrip(e, r, t0+20000, 3, 5)
	lcProbe(e, r, t0+30000, true)
	b, err := json.Marshal(lcFacts(t, e, t0+40000))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"count":1,"worst":{"k":3,"n":5,"lower":0.33},"atThreshold":0,"closedAtFirstProbe":1,"coldStart":1,` +
		`"suggest":{"minRequestAmount":20,"statIntervalMs":4000}}`
	if string(b) != want {
		t.Fatalf("json\n got %s\nwant %s", b, want)
	}
}
