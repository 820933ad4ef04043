package triage

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// A traffic log at its bound turns over through the chunks it evicts: a
// bucket taken then allocates nothing, and the log holds no more than its
// bound.
func TestTrafficLogTurnsOverWithoutAllocating(t *testing.T) {
	e := NewFeeder(Config{TraceBytes: 16 << 10})
	appFleet(e, "order", 3, t0, "v1", slowRule("db"))
	start := t0
	feed := func() {
		start += 500
		for _, in := range []string{"order-1", "order-2", "order-3"} {
			e.Bucket(in, bucketAt("db", start, hist(10, 3), 8))
		}
	}
	for range 5000 { // well past the bound
		feed()
	}
	// 600 buckets a run: several chunks' worth, so that one chunk
	// allocated a run shows (AllocsPerRun rounds down).
	if allocs := testing.AllocsPerRun(20, func() {
		for range 200 {
			feed()
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations per 600 buckets at the bound", allocs)
	}
	if used := e.TraceBytes(); used > 16<<10 || used < 8<<10 {
		t.Fatalf("the log holds %d bytes, bound %d", used, 16<<10)
	}
	if e.traces.dropped == 0 {
		t.Fatal("nothing was evicted: the test proves nothing")
	}
}

// A series' hot values, at their longest (8 values of 128 bytes and the
// rest's sum a bucket), go to the same bound, turn over without
// allocating, and decode back to the value's own entries.
func TestTrafficLogKeepsHotValuesWithinItsBound(t *testing.T) {
	e := NewFeeder(Config{TraceBytes: 64 << 10})
	hotApp(e, "o-1")
	long := func(i int) string { return strings.Repeat(string(rune('a'+i)), wire.MaxHotValueBytes) }
	hot := make([]wire.HotItem, 0, wire.MaxHotValues+1)
	for i := range wire.MaxHotValues {
		hot = append(hot, wire.HotItem{Value: long(i), Pass: int64(10 + i), Block: int64(i)})
	}
	hot = append(hot, wire.HotItem{Value: wire.HotOther, Pass: 500})
	start := t0
	feed := func() {
		start += 500
		hotBuckets(e, "o-1", start, start+500, func(int64) (int64, []wire.HotItem) { return 28, hot })
	}
	for range 2000 {
		feed()
	}
	if allocs := testing.AllocsPerRun(20, func() {
		for range 100 {
			feed()
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations per 100 buckets at the bound", allocs)
	}
	if used := e.TraceBytes(); used > 64<<10 || used < 32<<10 || e.traces.dropped == 0 {
		t.Fatalf("the log holds %d bytes, bound %d, %d chunks dropped", used, 64<<10, e.traces.dropped)
	}
	s := e.instList[0].series[hotRes]
	tr, from := s.paramTrace(0, long(3))
	if len(tr.Buckets) < 30 || from <= t0 || !s.logTrimmed() {
		t.Fatalf("%d buckets kept from %d", len(tr.Buckets), from)
	}
	for _, b := range tr.Buckets {
		if !b.Listed || b.Pass != 13 || b.Block != 3 || b.Ms != 500 {
			t.Fatalf("bucket %+v", b)
		}
	}
	if tr, _ := s.paramTrace(0, "absent"); len(tr.Buckets) == 0 || tr.Buckets[0].Listed {
		t.Fatalf("a value never listed: %+v", tr.Buckets[:1])
	}
}

// A series' log decodes to the buckets it took, in order, whatever its
// chunks went through: written across chunk boundaries, its oldest
// evicted, and (a bound smaller than a series' full set of chunks) the
// chunk being written evicted itself, the next record starting a new one.
func TestTrafficLogDecodesWhatItTook(t *testing.T) {
	for _, bound := range []int64{3 << 10, 16 << 10, 1 << 20} {
		e := NewFeeder(Config{TraceBytes: bound})
		appFleet(e, "order", 1, t0, "v1", slowRule("db"))
		const n = 3000
		start := t0
		for i := range n {
			start += 500
			b := bucketAt("db", start, hist(int64(i%7+1), i%5), int64(i))
			e.Bucket("order-1", b)
		}
		s := e.instList[0].series["db"]
		tr, from := s.trace()
		if len(tr.Buckets) == 0 {
			t.Fatalf("bound %d: nothing decoded", bound)
		}
		if bound < 1<<20 && (!s.logTrimmed() || e.traces.dropped == 0) {
			t.Fatalf("bound %d: nothing evicted: the case proves nothing", bound)
		}
		first := n - len(tr.Buckets) // the buckets kept are the latest
		if from != tr.Buckets[0].Start {
			t.Errorf("bound %d: from %d, first bucket at %d", bound, from, tr.Buckets[0].Start)
		}
		for k, b := range tr.Buckets {
			i := first + k
			want := bucketAt("db", t0+int64(i+1)*500, hist(int64(i%7+1), i%5), int64(i))
			if b.Start != want.Start || b.Pass != want.Pass || b.RtMax != want.RtMax || b.Hist != want.Hist || b.Ms != 500 {
				t.Fatalf("bound %d: bucket %d of %d decoded %+v, want start %d pass %d rtMax %d hist %v",
					bound, k, len(tr.Buckets), b, want.Start, want.Pass, want.RtMax, want.Hist)
			}
		}
	}
}

// An app's series of a resource share its log, each record naming its series: each
// decodes its own buckets and spells, in order, alone or read together,
// whatever the budget dropped; a series whose first record came after
// the chunks dropped says it was not trimmed. Once every series of the
// resource is forgotten, its log's bytes go back to the budget, and
// another resource's log is read as before.
func TestTrafficLogSharedByAResource(t *testing.T) {
	e := NewFeeder(Config{TraceBytes: 32 << 10})
	insts := appFleet(e, "order", 3, t0, "v1", slowRule("db"))
	const n, late = 1500, 1350
	start := t0
	for i := range n {
		start += 500
		for k, in := range insts {
			if k == 2 && i < late {
				continue
			}
			e.Bucket(in, bucketAt("db", start, hist(int64(1000*(k+1)+i%500), 1), int64(i)))
		}
		e.Bucket(insts[0], bucketAt("other", start, hist(7, 1), 1))
		if i == n-100 {
			e.Transition(insts[1], trans("db", core.Closed, core.Open, start+10))
		}
		if i == n-50 {
			e.Transition(insts[1], trans("db", core.Open, core.Closed, start+20))
		}
	}
	if e.traces.dropped == 0 {
		t.Fatal("nothing was evicted: the test proves nothing")
	}
	ss := make([]*series, len(insts))
	for k := range insts {
		ss[k] = e.inst(insts[k]).series["db"]
	}
	together, froms := tracesOf(append(ss, ss[1])) // one asked for twice
	for k, s := range ss {
		alone, from := s.trace()
		if !reflect.DeepEqual(alone, together[k]) || from != froms[k] {
			t.Fatalf("series %d: read alone and together differ", k)
		}
		bs := alone.Buckets
		if len(bs) == 0 || alone.Instance != insts[k] || from != bs[0].Start {
			t.Fatalf("series %d: %d buckets of %q from %d", k, len(bs), alone.Instance, from)
		}
		first := n - len(bs) // the buckets kept are its latest
		if k == 2 && first != late {
			t.Fatalf("the late series kept %d of its %d buckets", len(bs), n-late)
		}
		for j, b := range bs {
			i := first + j
			if b.Start != t0+int64(i+1)*500 || b.Pass != int64(1000*(k+1)+i%500) || b.RtMax != int64(i) {
				t.Fatalf("series %d: bucket %d decoded %+v, want round %d", k, j, b, i)
			}
		}
		if trimmed := s.logTrimmed(); trimmed != (k < 2) {
			t.Errorf("series %d: trimmed %v", k, trimmed)
		}
	}
	end := t0 + int64(n-100+1)*500 + 10
	if sp := together[1].Spells; len(sp) != 1 || sp[0].From != end || sp[0].To != end+50*500+10 {
		t.Fatalf("spells %+v", sp)
	}
	if sp := together[3].Spells; len(sp) != 1 {
		t.Fatalf("the series asked for twice: spells %+v", sp)
	}
	if len(together[0].Spells)+len(together[2].Spells) != 0 {
		t.Fatal("another series' spell decoded as theirs")
	}
	other := e.inst(insts[0]).series["other"]
	before, _ := other.trace()
	used := e.TraceBytes()
	for _, in := range insts[1:] {
		e.Bye(in, start+1000)
	}
	e.ForgetTraffic(start + 2000)
	if got := e.TraceBytes(); got != used {
		t.Fatalf("the log of a resource a live series still writes gave back %d bytes", used-got)
	}
	if tr, _ := ss[1].trace(); len(tr.Buckets) != 0 || !ss[1].logTrimmed() {
		t.Fatalf("a forgotten series decodes %d buckets", len(tr.Buckets))
	}
	e.Bye(insts[0], start+1000)
	e.ForgetTraffic(start + 2000)
	after, _ := other.trace()
	if got := e.TraceBytes(); got != 0 || len(after.Buckets) != 0 {
		t.Fatalf("every series forgotten: %d bytes held, %d buckets decoded", got, len(after.Buckets))
	}
	if len(before.Buckets) == 0 {
		t.Fatal("the other resource decoded nothing before")
	}
}

// Reading one series out of a resource's log that 2,000 series write (a
// plan of one instance on a resource the fleet shares), and all of them
// at once (a plan of the fleet's rule): the first steps over the others'
// records by their lengths.
func BenchmarkTrafficLogRead(b *testing.B) {
	e := NewFeeder(Config{TraceBytes: 256 << 20})
	insts := appFleet(e, "order", 2000, t0, "v1", slowRule("db"))
	for i := range 120 {
		for _, in := range insts {
			e.Bucket(in, bucketAt("db", t0+int64(i+1)*500, hist(int64(10+i%7), 1), int64(i)))
		}
	}
	ss := make([]*series, len(insts))
	for k, in := range insts {
		ss[k] = e.inst(in).series["db"]
	}
	b.Run("one", func(b *testing.B) {
		for b.Loop() {
			if tr, _ := ss[7].trace(); len(tr.Buckets) != 120 {
				b.Fatal(len(tr.Buckets))
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			if trs, _ := tracesOf(ss); len(trs[7].Buckets) != 120 {
				b.Fatal(len(trs[7].Buckets))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)*120), "ns/bucket")
	})
}

// Each app keeps its own log of a resource that other apps' instances
// report under the same name: a series decodes its own buckets, in order,
// from its app's log, which holds only that app's records (a plan of the
// app's rule reads none of the other's); an instance whose buckets came
// before its hello moved it into its app keeps the records it wrote, and
// writes on where they are; and once every series of one app is
// forgotten, its log's bytes go back to the budget while the other's
// traces are as before.
func TestTrafficLogOneAnApp(t *testing.T) {
	e := NewFeeder(Config{TraceBytes: 64 << 20})
	order := appFleet(e, "order", 2, t0, "v1", slowRule("db"))
	pay := appFleet(e, "pay", 2, t0, "v1", slowRule("db"))
	const n = 200
	pass := func(k, i int) int64 { return int64(1000*(k+1) + i) }
	all := append(append([]string{"order-late"}, order...), pay...)
	for i := range n {
		if i == n/2 {
			e.Hello("order-late", "order", t0+int64(i)*500, t0-1000)
		}
		for k, in := range all {
			b := bucketAt("db", t0+int64(i+1)*500, hist(int64(10+i%7), 1), int64(i))
			b.Pass = pass(k, i)
			e.Bucket(in, b)
		}
	}
	series := func(in string) *series { return e.inst(in).series["db"] }
	for k, in := range all {
		tr, _ := series(in).trace()
		if len(tr.Buckets) != n {
			t.Fatalf("%s: %d buckets decoded, want %d", in, len(tr.Buckets), n)
		}
		for i, b := range tr.Buckets {
			if b.Start != t0+int64(i+1)*500 || b.Pass != pass(k, i) {
				t.Fatalf("%s: bucket %d decoded start %d pass %d, want %d and %d", in, i, b.Start, b.Pass, t0+int64(i+1)*500, pass(k, i))
			}
		}
	}
	ol, pl := series(order[0]).log, series(pay[0]).log
	if ol == pl || series(order[1]).log != ol || series(pay[1]).log != pl {
		t.Fatal("the apps' series of db do not each share their app's log")
	}
	if pl.series != 2 {
		t.Fatalf("pay's log names %d series, want its 2", pl.series)
	}
	if late := series("order-late"); late.log == ol || late.log == pl || late.ar != arOf(e, "order", "db") {
		t.Fatalf("the instance moved into order: log %p (order's %p, pay's %p)", late.log, ol, pl)
	}
	before, _ := series(order[0]).trace()
	used := e.TraceBytes()
	var payBytes int64
	for _, c := range pl.chunks {
		payBytes += int64(cap(c.b))
	}
	for _, in := range pay {
		e.Bye(in, t0+int64(n+2)*500)
	}
	e.ForgetTraffic(t0 + int64(n+4)*500)
	if got := e.TraceBytes(); got != used-payBytes || payBytes == 0 {
		t.Fatalf("pay forgotten: %d bytes held, want %d less %d (its log)", got, used, payBytes)
	}
	if after, _ := series(order[0]).trace(); !reflect.DeepEqual(after, before) {
		t.Fatal("order's trace changed when pay's log went")
	}
}

// arOf is the engine's state of resource within app.
func arOf(e *Feeder, app, resource string) *appRes { return e.ars[arKey{app, resource}] }

// Reading one app's series of a resource that ten apps of 200 instances
// each report under the same name, 2 minutes of 500 ms buckets: a plan of
// one app's rule (bench's fleet: 2,000 targets in 10 apps, 20 resource
// names shared). What it costs grows with the app's traffic, not the
// fleet's.
func BenchmarkTrafficLogReadOneApp(b *testing.B) {
	e := NewFeeder(Config{TraceBytes: 256 << 20})
	var apps [][]string
	for a := range 10 {
		apps = append(apps, appFleet(e, fmt.Sprintf("app-%d", a), 200, t0, "v1", slowRule("db")))
	}
	for i := range 240 {
		for _, insts := range apps {
			for _, in := range insts {
				e.Bucket(in, bucketAt("db", t0+int64(i+1)*500, hist(int64(10+i%7), 1), int64(i)))
			}
		}
	}
	ss := make([]*series, len(apps[3]))
	for k, in := range apps[3] {
		ss[k] = e.inst(in).series["db"]
	}
	for b.Loop() {
		if trs, _ := tracesOf(ss); len(trs[7].Buckets) != 240 {
			b.Fatal(len(trs[7].Buckets))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)*240), "ns/bucket")
}

// Every value of a bucket comes back from the traffic log as it was taken
// (a negative one as 0), whichever of them the record left out as usual:
// random buckets of three lengths, with and without a histogram, zero
// counts and rtMin = rtMax often, on a resource under a slow-ratio
// breaker (its bound logged) and one under none.
func TestTrafficLogBucketsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 15))
	e := NewFeeder(Config{TraceBytes: 64 << 20})
	appFleet(e, "order", 1, t0, "v1", slowRule("db"), core.BreakerRule{Resource: "cache", Strategy: core.ErrorRatio,
		Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 5000})
	pick := func(zero int) int64 { // 0 one time in zero, else -3 .. 999
		if rng.IntN(zero) == 0 {
			return 0
		}
		return rng.Int64N(1003) - 3
	}
	want := map[string][]whatif.Bucket{}
	start := t0
	for range 3000 {
		res := []string{"db", "cache"}[rng.IntN(2)]
		bm := []int64{500, 1000, 250, 0}[rng.IntN(4)]
		start += 1000
		b := BucketStat{Resource: res, Start: start, BucketMs: bm, Metrics: core.Metrics{Pass: pick(4), Block: pick(2), Complete: pick(4),
			Error: pick(2), Slow: pick(2), RtMin: pick(3)}, HasHist: rng.IntN(3) > 0}
		b.RtMax = b.RtMin
		if rng.IntN(2) == 0 {
			b.RtMax = pick(3)
		}
		w := whatif.Bucket{Start: start, Ms: bm, Pass: max(b.Pass, 0), Block: max(b.Block, 0), Complete: max(b.Complete, 0),
			Error: max(b.Error, 0), Slow: max(b.Slow, 0), RtMin: max(b.RtMin, 0), RtMax: max(b.RtMax, 0), HasHist: b.HasHist}
		if bm == 0 {
			w.Ms = core.ResourceBucketMs
		}
		if res == "db" {
			w.SlowBoundMs = int64(slowRule("db").MaxAllowedRtMs)
		}
		if b.HasHist {
			for i := range b.Hist {
				b.Hist[i] = pick(2)
				w.Hist[i] = max(b.Hist[i], 0)
			}
		}
		e.Bucket("order-1", b)
		want[res] = append(want[res], w)
	}
	for res, ws := range want {
		tr, _ := e.instList[0].series[res].trace()
		if len(tr.Buckets) != len(ws) {
			t.Fatalf("%s: %d buckets decoded, %d taken", res, len(tr.Buckets), len(ws))
		}
		for i, w := range ws {
			if got := tr.Buckets[i]; got != w {
				t.Fatalf("%s: bucket %d decoded\n%+v\nwant\n%+v", res, i, got, w)
			}
		}
	}
}
