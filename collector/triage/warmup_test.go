package triage

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

const warmRes = "GET:/api/quote"

// warmUpRule is a warm-up QPS limit: threshold, cold factor 3, 60 s.
func warmUpRule(threshold float64) core.FlowRule {
	return core.FlowRule{Resource: warmRes, Threshold: threshold, TokenCalculateStrategy: core.WarmUp,
		WarmUpPeriodSec: 60, WarmUpColdFactor: 3}
}

// warmProc is one process's flow controllers on warmRes, made from its
// rules as core.Guard makes them, and what they decided per second.
type warmProc struct {
	bucketMs    int64 // of the buckets fed: 0 means 500
	stat        *core.MetricWindow
	ctrls       []*core.FlowController
	pass, block map[int64]int64 // by second (Unix ms)
}

func newWarmProc(t *testing.T, rules ...core.FlowRule) *warmProc {
	t.Helper()
	p := &warmProc{stat: core.NewResourceWindow(), pass: map[int64]int64{}, block: map[int64]int64{}}
	p.load(t, rules...)
	return p
}

// load replaces the process's controllers by new ones of rules, on the
// same resource window.
func (p *warmProc) load(t *testing.T, rules ...core.FlowRule) {
	t.Helper()
	p.ctrls = nil
	for _, r := range rules {
		c, err := core.NewFlowController(r, p.stat)
		if err != nil {
			t.Fatal(err)
		}
		p.ctrls = append(p.ctrls, c)
	}
}

// run offers qps calls a second, evenly over each millisecond, from `from`
// to `to` (whole seconds, Unix ms) through the controllers, and feeds the
// 500 ms buckets of inst to e.
func (p *warmProc) run(e *Feeder, inst string, from, to int64, qps func(sec int64) int64) {
	bm := cmp.Or(p.bucketMs, 500)
	for b := from; b < to; b += bm {
		var pass, block int64
		for ms := b; ms < b+bm; ms++ {
			sec := ms - floorMod(ms, 1000)
			q := qps(sec)
			off := ms - sec
			for range (off+1)*q/1000 - off*q/1000 {
				ok := true
				for _, c := range p.ctrls {
					if ok, _ = c.Check(ms, 1); !ok {
						break
					}
				}
				if ok {
					p.stat.Current(ms).AddPass(1)
					for _, c := range p.ctrls {
						c.OnPass(ms, 1)
					}
					pass++
					p.pass[sec]++
				} else {
					p.stat.Current(ms).AddBlock(1)
					block++
					p.block[sec]++
				}
			}
		}
		if pass+block > 0 {
			e.Bucket(inst, BucketStat{Resource: warmRes, Start: b, BucketMs: bm,
				Metrics: core.Metrics{Pass: pass, Block: block, Complete: pass, RtSum: pass * 10, RtMax: 20}})
		}
	}
}

// sums are the blocks and the calls offered of the seconds in [from, to).
func (p *warmProc) sums(from, to int64) (block, offered int64) {
	for sec, n := range p.block {
		if sec >= from && sec < to {
			block += n
			offered += n
		}
	}
	for sec, n := range p.pass {
		if sec >= from && sec < to {
			offered += n
		}
	}
	return block, offered
}

func offering(q int64) func(int64) int64 { return func(int64) int64 { return q } }

func warmFindings(t *testing.T, e *Feeder, now int64) []Finding {
	t.Helper()
	return only(t, e.Findings(now), KindWarmUp)
}

// A start at 300 QPS under a 500 QPS warm-up limit: every block of the
// first 48 s is the warm-up's; the span lasts until the tokens reach the
// warning line, 64 s after the start; 21.5 % of the calls offered in it
// were blocked, a warning.
func TestWarmUpAfterStartIsExplained(t *testing.T) {
	for _, bm := range []int64{500, 1000} { // an agent's buckets, and Java's
		t.Run(fmt.Sprint(bm), func(t *testing.T) { warmUpAfterStart(t, bm) })
	}
}

func warmUpAfterStart(t *testing.T, bucketMs int64) {
	e := NewFeeder(Config{})
	e.Hello("gw-1", "gateway", t0, t0)
	e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{warmUpRule(500)})
	p := newWarmProc(t, warmUpRule(500))
	p.bucketMs = bucketMs
	p.run(e, "gw-1", t0, t0+180_000, offering(300))

	fs := warmFindings(t, e, t0+180_000)
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	x := f.Facts.(*WarmUpFacts)
	// The last second with blocks, and the span: the limit reaches the
	// threshold in the 65th second.
	var last int64
	for sec := range p.block {
		last = max(last, sec)
	}
	if last != t0+47_000 {
		t.Errorf("last block at %d s", (last-t0)/1000)
	}
	if f.From != t0 || f.To != t0+64_000 {
		t.Errorf("span %d..%d s", (f.From-t0)/1000, (f.To-t0)/1000)
	}
	block, offered := p.sums(f.From, f.To)
	if offered != 64*300 || x.Blocked != block || x.Offered != offered {
		t.Errorf("blocked %d of %d, want %d of %d", x.Blocked, x.Offered, block, offered)
	}
	if x.StartLimit != 166.67 || x.Spans != 1 || x.Loads != 0 || x.PeakQPS != 300 {
		t.Errorf("facts %+v", x)
	}
	if f.Severity != Warning || block*100 < WarmUpWarnPercent*offered {
		t.Errorf("severity %v with %d of %d", f.Severity, block, offered)
	}
	for _, want := range []string{"blocked 4122 of the 19200 calls (21.5 %)", "starts at 166.67 QPS (threshold 500 / warmUpColdFactor 3)", "the longest span took 64 s"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary %q lacks %q", f.Summary, want)
		}
	}
	if !strings.Contains(f.Advice, "up to 300 QPS offered to an instance, under the threshold of 500") ||
		!strings.Contains(f.Advice, "at most 166 QPS at first, rising to its full share over the first 60 s") {
		t.Errorf("advice %q", f.Advice)
	}
}

// At 175 QPS the warm-up blocks only while its limit is under 175, a few
// seconds: under 5 % of the calls offered in the span, an info.
func TestWarmUpUnderFivePercentIsInfo(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("gw-1", "gateway", t0, t0)
	e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{warmUpRule(500)})
	p := newWarmProc(t, warmUpRule(500))
	p.run(e, "gw-1", t0, t0+240_000, offering(175))
	fs := warmFindings(t, e, t0+240_000)
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f, x := fs[0], fs[0].Facts.(*WarmUpFacts)
	block, offered := p.sums(f.From, f.To)
	total, _ := p.sums(t0, t0+240_000)
	if block == 0 || block != total || x.Blocked != block || x.Offered != offered {
		t.Errorf("blocked %d of %d, want %d of %d (%d in all)", x.Blocked, x.Offered, block, offered, total)
	}
	if f.Severity != Info || block*100 >= WarmUpWarnPercent*offered {
		t.Errorf("severity %v with %d of %d", f.Severity, block, offered)
	}
	if !strings.Contains(f.Advice, "nothing to change unless callers must not see them") {
		t.Errorf("advice %q", f.Advice)
	}
}

// Blocks the full threshold makes too are an overload, not the warm-up's:
// at 700 QPS from the start, the warm-up's blocks are those beyond what a
// direct 500 QPS limit blocks of the same calls; and the overload after
// the span is not attributed at all.
func TestWarmUpLeavesOverloadOut(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("gw-1", "gateway", t0, t0)
	e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{warmUpRule(500)})
	p := newWarmProc(t, warmUpRule(500))
	direct := newWarmProc(t, core.FlowRule{Resource: warmRes, Threshold: 500})
	offer := func(sec int64) int64 {
		if sec >= t0+200_000 && sec < t0+230_000 {
			return 900 // an overload long after the start
		}
		return 700
	}
	p.run(e, "gw-1", t0, t0+260_000, offer)
	direct.run(NewFeeder(Config{}), "x", t0, t0+260_000, offer)

	fs := warmFindings(t, e, t0+260_000)
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f, x := fs[0], fs[0].Facts.(*WarmUpFacts)
	if f.From != t0 || f.To >= t0+200_000 {
		t.Fatalf("span %d..%d s", (f.From-t0)/1000, (f.To-t0)/1000)
	}
	warmBlocks, offered := p.sums(f.From, f.To)
	overload, _ := direct.sums(f.From, f.To)
	if x.Blocked != warmBlocks-overload || x.Offered != offered || overload != (f.To-f.From)/1000*200 {
		t.Errorf("blocked %d of %d, want %d - %d of %d", x.Blocked, x.Offered, warmBlocks, overload, offered)
	}
	if !strings.Contains(f.Advice, "besides an overload (up to 700 QPS offered to an instance against the threshold of 500") {
		t.Errorf("advice %q", f.Advice)
	}
	if later, _ := p.sums(t0+200_000, t0+230_000); later != 30*400 {
		t.Errorf("the later overload blocked %d", later)
	}
}

// A restart is a new controller, cold again; so is a changed rule (not an
// unchanged one pushed again). The spans of an app's instances make one
// finding.
func TestWarmUpRestartsAndRuleLoads(t *testing.T) {
	e := NewFeeder(Config{})
	for _, in := range []string{"gw-1", "gw-2"} {
		e.Hello(in, "gateway", t0, t0)
		e.Rules(in, t0, "v1", nil, []core.FlowRule{warmUpRule(500)})
	}
	p1, p2 := newWarmProc(t, warmUpRule(500)), newWarmProc(t, warmUpRule(500))
	p1.run(e, "gw-1", t0, t0+120_000, offering(300))
	p2.run(e, "gw-2", t0, t0+120_000, offering(300))
	// gw-1 restarts; gw-2 gets the same rule again, then a new one.
	e.Bye("gw-1", t0+120_000)
	e.Hello("gw-1", "gateway", t0+125_000, t0+125_000)
	e.Rules("gw-1", t0+125_000, "v1", nil, []core.FlowRule{warmUpRule(500)})
	e.Rules("gw-2", t0+125_000, "v1", nil, []core.FlowRule{warmUpRule(500)})
	p1 = newWarmProc(t, warmUpRule(500))
	p1.run(e, "gw-1", t0+125_000, t0+240_000, offering(300))
	p2.run(e, "gw-2", t0+120_000, t0+180_000, offering(300))
	e.Rules("gw-2", t0+180_000, "v2", nil, []core.FlowRule{warmUpRule(600)})
	p2.load(t, warmUpRule(600))
	p2.run(e, "gw-2", t0+180_000, t0+240_000, offering(300))

	fs := warmFindings(t, e, t0+240_000)
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f, x := fs[0], fs[0].Facts.(*WarmUpFacts)
	if len(f.Instances) != 2 || x.Spans != 4 || x.Loads != 1 || f.From != t0 {
		t.Fatalf("instances %v, %d spans, %d loads, from %d", f.Instances, x.Spans, x.Loads, f.From-t0)
	}
	// 4122 blocks in each start at 300 against 500; against 600 (limit 200
	// at first) fewer.
	b1, _ := p1.sums(t0+125_000, t0+240_000)
	b2, _ := p2.sums(t0+180_000, t0+240_000)
	if b1 != 4122 || b2 == 0 || b2 >= 4122 || x.Blocked != 3*4122+b2 {
		t.Errorf("blocked %d, spans %d and %d", x.Blocked, b1, b2)
	}
	if !strings.Contains(f.Summary, "3 spans after a process start and 1 after a rule load") {
		t.Errorf("summary %q", f.Summary)
	}
}

// Where the process start is not known, neither is its warm-up: blocks
// after a first rule set are not attributed; a rule change seen is a
// known start.
func TestWarmUpNeedsAKnownStart(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("gw-1", "gateway", t0, 0)
	e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{warmUpRule(500)})
	p := newWarmProc(t, warmUpRule(500))
	p.run(e, "gw-1", t0, t0+120_000, offering(300))
	if fs := warmFindings(t, e, t0+120_000); len(fs) != 0 {
		t.Fatalf("findings with no start %+v", fs)
	}
	e.Rules("gw-1", t0+120_000, "v2", nil, []core.FlowRule{warmUpRule(600)})
	p.load(t, warmUpRule(600))
	p.run(e, "gw-1", t0+120_000, t0+240_000, offering(300))
	fs := warmFindings(t, e, t0+240_000)
	if len(fs) != 1 || fs[0].From != t0+120_000 || fs[0].Facts.(*WarmUpFacts).StartLimit != 200 {
		t.Fatalf("findings %+v", fs)
	}
	block, _ := p.sums(t0+120_000, t0+240_000)
	if got := fs[0].Facts.(*WarmUpFacts).Blocked; got != block {
		t.Errorf("blocked %d, want %d", got, block)
	}
}

// A controller already warm at the start the input gives (passing more
// than a cold one admits) is no warm-up: its blocks are an overload.
func TestWarmUpRefusesAWarmController(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("gw-1", "gateway", t0+60_000, t0+60_000) // its hello says it started at 1:00
	e.Rules("gw-1", t0+60_000, "v1", nil, []core.FlowRule{warmUpRule(500)})
	p := newWarmProc(t, warmUpRule(500))
	// Its controller warmed up over the minute before, at 450 QPS.
	p.run(NewFeeder(Config{}), "x", t0, t0+60_000, offering(450))
	p.run(e, "gw-1", t0+60_000, t0+180_000, offering(700))
	if fs := warmFindings(t, e, t0+180_000); len(fs) != 0 {
		t.Fatalf("findings %+v", fs)
	}
}

// Java Sentinel makes every flow controller anew when any flow rule
// changes; core and sentinel-golang keep an unchanged rule's.
func TestWarmUpJavaReloadsEveryController(t *testing.T) {
	for _, java := range []bool{false, true} {
		e := NewFeeder(Config{})
		r := warmUpRule(500)
		if java {
			r.LimitApp = "default"
		}
		other := core.FlowRule{Resource: "other", Threshold: 100}
		e.Hello("gw-1", "gateway", t0, t0)
		e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{r, other})
		p := newWarmProc(t, r)
		p.run(e, "gw-1", t0, t0+120_000, offering(300))
		other.Threshold = 200
		e.Rules("gw-1", t0+120_000, "v2", nil, []core.FlowRule{r, other})
		if java {
			p.load(t, r)
		}
		p.run(e, "gw-1", t0+120_000, t0+240_000, offering(300))
		fs := warmFindings(t, e, t0+240_000)
		if len(fs) != 1 {
			t.Fatalf("java %v: findings %+v", java, fs)
		}
		x := fs[0].Facts.(*WarmUpFacts)
		want := int64(1)
		if java {
			want = 2
		}
		if block, _ := p.sums(t0, t0+240_000); x.Spans != want || x.Blocked != block {
			t.Errorf("java %v: %d spans, blocked %d of %d", java, x.Spans, x.Blocked, block)
		}
	}
}

// The replay of the token bucket is core's: while a cold controller binds
// (blocks some of the calls), it passes exactly the whole calls under the
// replayed limit, second by second, for several thresholds, cold factors
// and loads; and it reaches the threshold when the replay says.
func TestWarmModelIsCore(t *testing.T) {
	for _, c := range []struct {
		threshold float64
		cf        uint32
		period    uint32
		qps       int64
	}{{500, 3, 60, 300}, {500, 3, 60, 700}, {500, 0, 60, 200}, {120, 4, 10, 100}, {1000, 2, 30, 1500}, {37, 3, 5, 30}} {
		r := core.FlowRule{Resource: warmRes, Threshold: c.threshold, TokenCalculateStrategy: core.WarmUp,
			WarmUpPeriodSec: c.period, WarmUpColdFactor: c.cf}
		p := newWarmProc(t, r)
		p.run(NewFeeder(Config{}), "x", t0, t0+300_000, offering(c.qps))
		m, ok := newWarmModel(r)
		if !ok {
			t.Fatal("no model")
		}
		bound := 0
		for sec := t0; sec < t0+300_000; sec += 1000 {
			m.sync(sec, p.pass[sec-1000])
			if m.warm() {
				break
			}
			limit := m.limit()
			if p.block[sec] > 0 {
				bound++
				if p.pass[sec] != int64(math.Floor(limit)) {
					t.Errorf("%+v: second %d passed %d, the replayed limit is %.2f", c, (sec-t0)/1000, p.pass[sec], limit)
				}
			} else if float64(p.pass[sec]) > limit {
				t.Errorf("%+v: second %d passed %d over %.2f", c, (sec-t0)/1000, p.pass[sec], limit)
			}
		}
		if bound == 0 || !m.warm() {
			t.Errorf("%+v: %d seconds bound, warm %v", c, bound, m.warm())
		}
	}
}

// Buckets that never arrived lose the replay its count: the span ends
// where they begin, and the blocks after them are not counted.
func TestWarmUpEndsAtDataNeverReceived(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("gw-1", "gateway", t0, t0)
	e.Rules("gw-1", t0, "v1", nil, []core.FlowRule{warmUpRule(500)})
	p := newWarmProc(t, warmUpRule(500))
	p.run(e, "gw-1", t0, t0+20_000, offering(300))
	p.run(NewFeeder(Config{}), "x", t0+20_000, t0+25_000, offering(300)) // sent, never received
	e.Unreceived("gw-1", t0+20_000, t0+25_000)
	p.run(e, "gw-1", t0+25_000, t0+120_000, offering(300))
	fs := warmFindings(t, e, t0+120_000)
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f, x := fs[0], fs[0].Facts.(*WarmUpFacts)
	block, offered := p.sums(t0, t0+20_000)
	if later, _ := p.sums(t0+25_000, t0+120_000); later == 0 || f.To != t0+20_000 || x.Blocked != block || x.Offered != offered {
		t.Errorf("span to %d s, blocked %d of %d, want %d of %d (%d after the gap)", (f.To-t0)/1000, x.Blocked, x.Offered, block, offered, later)
	}
}
