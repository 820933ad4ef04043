package sim_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures/fixturetest"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
	"github.com/sentinel-top/sentinel-top/sim"
)

// record plays s and returns its messages.
func record(t testing.TB, s *sim.Scenario) []wire.Message {
	t.Helper()
	var out []wire.Message
	if err := sim.Run(context.Background(), s, func(m wire.Message) error {
		out = append(out, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func startOf(s *sim.Scenario) int64 {
	if s.Start.IsZero() {
		return sim.DefaultStart.UnixMilli()
	}
	return s.Start.UnixMilli()
}

// oneCall is a scenario of one instance making one kind of call.
func oneCall(d *sim.Downstream, c sim.Call, dur time.Duration, rules ...sim.RuleChange) *sim.Scenario {
	d.Name = "down"
	c.Downstream = "down"
	if c.Resource == "" {
		c.Resource = "res"
	}
	return &sim.Scenario{
		Name: "test", Duration: dur, Seed: 7,
		Downstreams: []*sim.Downstream{d},
		Instances:   []*sim.Instance{{App: "app", Name: "app-1", Calls: []sim.Call{c}, Rules: rules}},
	}
}

func items(msgs []wire.Message) []wire.BucketItem {
	var out []wire.BucketItem
	for _, m := range msgs {
		if b, ok := m.(*wire.Buckets); ok {
			out = append(out, b.Items...)
		}
	}
	return out
}

func TestSameSeedSameBytes(t *testing.T) {
	s := sim.PriceFalseTrip()
	s.Duration = time.Minute
	var a, b, c bytes.Buffer
	for _, buf := range []*bytes.Buffer{&a, &b} {
		if err := sim.Record(context.Background(), s, buf); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two recordings of one scenario differ")
	}
	s.Seed++
	if err := sim.Record(context.Background(), s, &c); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("another seed gives the same recording")
	}
}

// Messages come in time order; each instance's stream opens with hello and
// rules and ends with bye; nothing is dropped.
func TestStreamShape(t *testing.T) {
	s := sim.StartupNaked()
	msgs := record(t, s)
	var last int64
	seen := map[string][]wire.Kind{}
	for _, m := range msgs {
		h := m.Head()
		if h.Ts < last {
			t.Fatalf("%s at %d after %d", m.Kind(), h.Ts, last)
		}
		last = h.Ts
		seen[h.Instance] = append(seen[h.Instance], m.Kind())
		if b, ok := m.(*wire.Buckets); ok && b.Dropped > 0 {
			t.Fatalf("%s dropped %d", h.Instance, b.Dropped)
		}
		if err := wire.Validate(m, wire.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range s.Instances {
		k := seen[in.Name]
		if len(k) < 3 || k[0] != wire.KindHello || k[1] != wire.KindRules || k[len(k)-1] != wire.KindBye {
			t.Errorf("%s: stream %v...%v", in.Name, k[:min(3, len(k))], k[len(k)-1])
		}
	}
	// The late instance opens with an empty rule set, 30 s before its rules.
	var late []*wire.Rules
	for _, m := range msgs {
		if r, ok := m.(*wire.Rules); ok && r.Instance == "gateway-5" {
			late = append(late, r)
		}
	}
	if len(late) != 2 || len(late[0].Flows) != 0 || len(late[1].Flows) != 1 || late[1].Ts-late[0].Ts != 30000 {
		t.Errorf("gateway-5 rules: %+v", late)
	}
}

// A call that takes 300 ms is in flight for 300 ms: at 20 calls per second,
// about six are in flight at any time.
func TestCallsAreConcurrent(t *testing.T) {
	s := oneCall(&sim.Downstream{Latency: sim.Fixed(300 * time.Millisecond)}, sim.Call{Traffic: sim.Constant(20)}, 30*time.Second)
	its := items(record(t, s))
	var pass, complete, conc int64
	for _, it := range its {
		pass += it.Pass
		complete += it.Complete
		conc += it.Concurrency
		if it.Complete > 0 && (it.RtMin != 300 || it.RtMax != 300) {
			t.Fatalf("response times %d..%d, want 300", it.RtMin, it.RtMax)
		}
	}
	if avg := float64(conc) / float64(len(its)); avg < 4 || avg > 8 {
		t.Errorf("%.1f calls in flight on average, want about 6", avg)
	}
	if rate := float64(pass) / 30; rate < 17 || rate > 23 {
		t.Errorf("%.1f calls per second, want about 20", rate)
	}
	if pass-complete < 0 || pass-complete > 15 {
		t.Errorf("%d passed, %d completed", pass, complete)
	}
}

// The caller's timeout ends a slow call with an error at the timeout.
func TestTimeoutFails(t *testing.T) {
	s := oneCall(&sim.Downstream{Latency: sim.Fixed(5 * time.Second)}, sim.Call{Traffic: sim.Constant(10), Timeout: time.Second}, 20*time.Second)
	for _, it := range items(record(t, s)) {
		if it.Complete > 0 && (it.Error != it.Complete || it.RtMax != 1000) {
			t.Fatalf("%+v: want every completion an error at 1000 ms", it)
		}
	}
}

// A cold pool makes the first calls pay the handshake; a pool idle past its
// timeout is cold again.
func TestColdPool(t *testing.T) {
	d := &sim.Downstream{
		Latency: sim.Fixed(10 * time.Millisecond),
		Pool:    &sim.Pool{Handshake: sim.Fixed(time.Second), IdleTimeout: 5 * time.Second},
	}
	traffic := sim.Steps{{At: 0, QPS: 5}, {At: 10 * time.Second, QPS: 0}, {At: 20 * time.Second, QPS: 5}}
	its := items(record(t, oneCall(d, sim.Call{Traffic: traffic}, 30*time.Second)))
	slowIn := func(from, to int64) (slow, all int64) {
		for _, it := range its {
			at := it.Start - sim.DefaultStart.UnixMilli()
			if at >= from && at < to && it.HasHist {
				slow += it.Hist[9] + it.Hist[10] // 500..2000 ms
				all += it.Complete
			}
		}
		return
	}
	if s, _ := slowIn(0, 2500); s == 0 {
		t.Error("no cold call at start")
	}
	if s, all := slowIn(4000, 10000); s != 0 || all == 0 {
		t.Errorf("%d of %d warm calls slow", s, all)
	}
	if s, _ := slowIn(20000, 22500); s == 0 {
		t.Error("no cold call after the pool idled out")
	}
}

// A fault's share ramps up over its onset and down over its recovery.
func TestFaultRecoveryCurve(t *testing.T) {
	d := &sim.Downstream{
		Latency: sim.Fixed(10 * time.Millisecond),
		Faults:  []sim.Fault{{From: 10 * time.Second, To: 20 * time.Second, Recovery: 20 * time.Second, ErrorRate: 1}},
	}
	its := items(record(t, oneCall(d, sim.Call{Traffic: sim.Constant(200)}, 50*time.Second)))
	share := func(from, to int64) float64 {
		var e, c int64
		for _, it := range its {
			if at := it.Start - sim.DefaultStart.UnixMilli(); at >= from && at < to {
				e += it.Error
				c += it.Complete
			}
		}
		return float64(e) / float64(c)
	}
	for _, tc := range []struct {
		from, to int64
		lo, hi   float64
	}{
		{0, 10000, 0, 0}, {10000, 20000, 1, 1}, {20000, 25000, 0.8, 0.95}, {35000, 40000, 0.05, 0.2}, {40000, 50000, 0, 0},
	} {
		if got := share(tc.from, tc.to); got < tc.lo || got > tc.hi {
			t.Errorf("error share over [%d, %d) ms: %.2f, want %.2f..%.2f", tc.from, tc.to, got, tc.lo, tc.hi)
		}
	}
}

// With Loop, faults repeat.
func TestLoopRepeatsFaults(t *testing.T) {
	d := &sim.Downstream{Latency: sim.Fixed(10 * time.Millisecond), Faults: []sim.Fault{{From: 2 * time.Second, To: 4 * time.Second, ErrorRate: 1}}}
	s := oneCall(d, sim.Call{Traffic: sim.Constant(50)}, 30*time.Second)
	s.Loop = 10 * time.Second
	var errAt []int64
	for _, it := range items(record(t, s)) {
		if it.Error > 0 {
			errAt = append(errAt, (it.Start-sim.DefaultStart.UnixMilli())/10000)
		}
	}
	if errAt = slices.Compact(errAt); !slices.Equal(errAt, []int64{0, 1, 2}) {
		t.Errorf("errors in loops %v, want 0, 1, 2", errAt)
	}
}

func TestValidate(t *testing.T) {
	ok := func() *sim.Scenario {
		return oneCall(&sim.Downstream{}, sim.Call{Traffic: sim.Constant(1)}, time.Second)
	}
	for name, break_ := range map[string]func(s *sim.Scenario){
		"no name":      func(s *sim.Scenario) { s.Name = "" },
		"no instances": func(s *sim.Scenario) { s.Instances = nil },
		"twice":        func(s *sim.Scenario) { s.Instances = append(s.Instances, s.Instances[0]) },
		"restart while up": func(s *sim.Scenario) {
			again := *s.Instances[0]
			s.Instances[0].Stop, again.Start = 2*time.Second, 2*time.Second
			s.Instances = append(s.Instances, &again)
		},
		"restart as another app": func(s *sim.Scenario) {
			again := *s.Instances[0]
			s.Instances[0].Stop, again.Start, again.App = time.Second, 2*time.Second, "other"
			s.Instances = append(s.Instances, &again)
		},
		"unknown down": func(s *sim.Scenario) { s.Instances[0].Calls[0].Downstream = "nope" },
		"no traffic":   func(s *sim.Scenario) { s.Instances[0].Calls[0].Traffic = nil },
		"bad rule": func(s *sim.Scenario) {
			s.Instances[0].Rules = []sim.RuleChange{{Breakers: []core.BreakerRule{{Resource: "res"}}}}
		},
		"throttling": func(s *sim.Scenario) {
			s.Instances[0].Rules = []sim.RuleChange{{Flows: []core.FlowRule{{Resource: "res", Threshold: 1, ControlBehavior: core.Throttling}}}}
		},
		"hot throttling": func(s *sim.Scenario) {
			s.Instances[0].Rules = []sim.RuleChange{{Params: []core.HotParamRule{{Resource: "res", MetricType: core.HotParamQPS,
				ControlBehavior: core.Throttling, Threshold: 1, DurationInSec: 1}}}}
		},
		"bad hot rule": func(s *sim.Scenario) {
			s.Instances[0].Rules = []sim.RuleChange{{Params: []core.HotParamRule{{Resource: "res", MetricType: core.HotParamQPS}}}}
		},
		"rules unordered":  func(s *sim.Scenario) { s.Instances[0].Rules = []sim.RuleChange{{At: time.Second}, {At: 0}} },
		"stop before":      func(s *sim.Scenario) { s.Instances[0].Start, s.Instances[0].Stop = 2*time.Second, time.Second },
		"bad fault":        func(s *sim.Scenario) { s.Downstreams[0].Faults = []sim.Fault{{From: 2, To: 1}} },
		"jitter no length": func(s *sim.Scenario) { s.Downstreams[0].Jitter = &sim.Jitter{Every: time.Second} },
		"no duration":      func(s *sim.Scenario) { s.Duration = 0 },
	} {
		s := ok()
		break_(s)
		err := sim.Run(context.Background(), s, func(wire.Message) error { return nil })
		if !errors.Is(err, sim.ErrScenario) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := sim.Run(context.Background(), ok(), func(wire.Message) error { return nil }); err != nil {
		t.Error(err)
	}
}

// A call with parameter values passes one per call, and a hot-parameter
// rule limits each value on its own: the one value offered 100 per second
// against 40 is blocked, the others (10 per second together) are not.
func TestParamsAreLimitedPerValue(t *testing.T) {
	rule := core.HotParamRule{Resource: "res", MetricType: core.HotParamQPS, Threshold: 40, DurationInSec: 1}
	s := oneCall(&sim.Downstream{}, sim.Call{Traffic: sim.Constant(100), Params: []string{"vip"}}, 20*time.Second,
		sim.RuleChange{Params: []core.HotParamRule{rule}})
	s.Instances[0].Calls = append(s.Instances[0].Calls, sim.Call{Resource: "res", Downstream: "down", Traffic: sim.Constant(10),
		Params: []string{"a", "b", "c", "d", "e"}})
	var vip, others wire.HotItem
	for _, it := range items(record(t, s)) {
		for _, h := range it.Hot {
			switch h.Value {
			case "vip":
				vip.Pass, vip.Block = vip.Pass+h.Pass, vip.Block+h.Block
			default:
				others.Pass, others.Block = others.Pass+h.Pass, others.Block+h.Block
			}
		}
	}
	if vip.Pass < 700 || vip.Pass > 840 || vip.Block < 1100 || others.Block != 0 || others.Pass < 150 {
		t.Fatalf("vip %+v, others %+v", vip, others)
	}
}

// A Java service's recording is what the Java poller gives: a hello of
// one-second buckets from java-sentinel, its rules with their limitApp, a
// bucket a second of every instance, no transitions; it cannot be played
// live.
func TestJavaServiceScript(t *testing.T) {
	s := sim.LimitAppSelf()
	kinds := map[wire.Kind]int{}
	var pass, block int64
	for _, m := range record(t, s) {
		kinds[m.Kind()]++
		switch m := m.(type) {
		case *wire.Hello:
			if m.BucketMs != 1000 || !strings.HasPrefix(m.SDK, "java-sentinel/") {
				t.Fatalf("hello %+v", m)
			}
		case *wire.Rules:
			if len(m.Flows) != 1 || m.Flows[0].LimitApp != "order-service" {
				t.Fatalf("rules %+v", m)
			}
		case *wire.Buckets:
			for _, it := range m.Items {
				pass, block = pass+it.Pass, block+it.Block
			}
		}
	}
	if kinds[wire.KindHello] != 2 || kinds[wire.KindRules] != 2 || kinds[wire.KindBuckets] != 240 || kinds[wire.KindState] != 0 || kinds[wire.KindBye] != 2 {
		t.Fatalf("messages %v", kinds)
	}
	if pass < 70000 || pass > 74000 || block != 0 {
		t.Fatalf("pass %d block %d: about 300 a second on each of 2 instances for 120 s, none blocked", pass, block)
	}
	if _, err := sim.StartDemo(context.Background(), s, 1); !errors.Is(err, sim.ErrScenario) {
		t.Fatalf("StartDemo: %v", err)
	}
}

func TestRunStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sim.Run(ctx, sim.HealthyBaseline(), func(wire.Message) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	boom := errors.New("boom")
	if err := sim.Run(context.Background(), sim.HealthyBaseline(), func(wire.Message) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("emit failing: %v", err)
	}
}

// states returns the recording's transitions at ms since its start.
func states(s *sim.Scenario, msgs []wire.Message) (out []struct {
	at int64
	st *wire.State
}) {
	for _, m := range msgs {
		if st, ok := m.(*wire.State); ok {
			out = append(out, struct {
				at int64
				st *wire.State
			}{st.Ts - startOf(s), st})
		}
	}
	return out
}

// price-false-trip: trips on windows of fewer than 20 requests, at least one
// probe meets the next jitter and re-trips, never three in a row.
func TestPriceFalseTripRetrips(t *testing.T) {
	s := sim.PriceFalseTrip()
	failed, run, maxRun := 0, map[string]int{}, 0
	for _, x := range states(s, record(t, s)) {
		st := x.st
		switch {
		case st.From == core.Closed && st.To == core.Open:
			if st.Snapshot.Total >= 20 {
				t.Errorf("a trip on %d requests", st.Snapshot.Total)
			}
		case st.From == core.HalfOpen && st.To == core.Open:
			failed++
			run[st.Instance]++
			maxRun = max(maxRun, run[st.Instance])
		case st.To == core.Closed:
			run[st.Instance] = 0
		}
	}
	if failed == 0 || maxRun >= 3 {
		t.Errorf("%d failed probes, up to %d in a row; want some, fewer than 3 in a row", failed, maxRun)
	}
}

// recovery-herd: before the jitter push, all eight instances enter
// HALF_OPEN within a second of each other, several times; after it, never
// three of them within a second.
func TestHerdJitterSpreadsProbes(t *testing.T) {
	s := sim.RecoveryHerd()
	var before, after []int64
	for _, x := range states(s, record(t, s)) {
		if x.st.To != core.HalfOpen {
			continue
		}
		if x.at < sim.HerdJitterAt.Milliseconds() {
			before = append(before, x.at)
		} else {
			after = append(after, x.at)
		}
	}
	// largest number of entries within any 1000 ms, and how many such
	// windows hold all eight
	crowd := func(ts []int64) (most, full int) {
		for i := range ts {
			n := 0
			for j := i; j < len(ts) && ts[j]-ts[i] <= 1000; j++ {
				n++
			}
			most = max(most, n)
			if n == 8 {
				full++
			}
		}
		return most, full
	}
	if _, full := crowd(before); full < 2 {
		t.Errorf("same timeouts: %d occasions of 8 instances probing together, want 2 or more", full)
	}
	if most, _ := crowd(after); most >= 3 {
		t.Errorf("jittered timeouts: %d instances probed within a second", most)
	}
}

// rule-push-partial: during the sales event the five gateways with the new
// rule admit about 200/s and the three without about 1000/s.
func TestPartialPushAdmits(t *testing.T) {
	s := sim.RulePushPartial()
	pass := map[string]int64{}
	for _, m := range record(t, s) {
		if b, ok := m.(*wire.Buckets); ok {
			for _, it := range b.Items {
				if at := it.Start - startOf(s); at >= 70000 && at < 100000 {
					pass[b.Instance] += it.Pass
				}
			}
		}
	}
	for i := 1; i <= 8; i++ {
		name := fmt.Sprintf("gateway-%d", i)
		qps := float64(pass[name]) / 30
		want := 200.0
		if i > 5 {
			want = 1000
		}
		if qps < want*0.9 || qps > want*1.05 {
			t.Errorf("%s admitted %.0f/s, want about %.0f", name, qps, want)
		}
	}
}

// The demo fleet, recorded for one loop and replayed through the
// collector, shows every incident it claims.
func TestDemoScenarioFindings(t *testing.T) {
	s := sim.DemoScenario()
	s.Duration = s.Loop
	var rec bytes.Buffer
	if err := sim.Record(context.Background(), s, &rec); err != nil {
		t.Fatal(err)
	}
	res, err := fixturetest.Replay(&rec, s.Name)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range res.Findings {
		got[string(f.Kind)+" "+f.App] = f.Resource
		if x, ok := f.Facts.(*triage.HotValueFacts); ok && (x.Value != "cust-100042" || x.BlockShare < 0.9 || x.QPS < 230 || x.QPS > 270 ||
			x.Suggest.SpecificItems[x.Value] < 300 || x.Suggest.SpecificItems[x.Value] > 330 || f.To-f.From < 50000) {
			t.Errorf("hot-value %+v: %+v", f, x)
		}
	}
	for _, want := range []string{
		"sawtooth order", "sync-half-open cart", "low-confidence-trip gateway", "rule-drift gateway", "shared-resource gateway",
		"hot-value order-query",
	} {
		if _, ok := got[want]; !ok {
			t.Errorf("no %s finding in %v", want, got)
		}
	}
}

// Ten minutes of eight instances at 10 to 200 calls per second, with
// breakers and flow rules, take a few seconds at most.
func TestTenMinutesOfEightInstancesIsFast(t *testing.T) {
	if racetest.Enabled {
		t.Skip("the race detector slows every atomic operation: timings mean nothing")
	}
	s := tenMinutes()
	began := time.Now()
	n := 0
	if err := sim.Run(context.Background(), s, func(wire.Message) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	t.Logf("%d messages in %v", n, took)
	if limit := 5 * time.Second; took > limit {
		t.Errorf("took %v, want under %v", took, limit)
	}
}

func tenMinutes() *sim.Scenario {
	s := sim.HealthyBaseline()
	s.Duration = 10 * time.Minute
	s.Instances = s.Instances[:8]
	return s
}

func BenchmarkTenMinutesOfEightInstances(b *testing.B) {
	s := tenMinutes()
	for b.Loop() {
		if err := sim.Run(context.Background(), s, func(wire.Message) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// WriteFixture writes NAME.ndjson (small enough) and removes a stale
// NAME.ndjson.gz.
func TestWriteFixtureReplacesTheOtherForm(t *testing.T) {
	dir := t.TempDir()
	s := oneCall(&sim.Downstream{}, sim.Call{Traffic: sim.Constant(5)}, 5*time.Second)
	stale := filepath.Join(dir, "test.ndjson.gz")
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	path, err := sim.WriteFixture(context.Background(), dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "test.ndjson" {
		t.Errorf("wrote %s", path)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale gzip form still there: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := wire.NewReader(f, path).Next()
	if err != nil || m.Kind() != wire.KindMeta {
		t.Fatalf("first line %v, %v", m, err)
	}
}

// The catalogue's scenarios are valid, distinct, described, and say what
// they must produce.
func TestCatalog(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range sim.Catalog() {
		if err := s.Validate(); err != nil {
			t.Error(err)
		}
		if seen[s.Name] || s.Title == "" || len(s.Description) < 100 || s.Expect == nil || s.Duration <= 0 {
			t.Errorf("%s: duplicate, or without title, description, expectations or duration", s.Name)
		}
		seen[s.Name] = true
		if got, ok := sim.Lookup(s.Name); !ok || got.Name != s.Name {
			t.Errorf("Lookup(%q)", s.Name)
		}
	}
	if d, ok := sim.Lookup("demo"); !ok || d.Loop <= 0 || d.Validate() != nil {
		t.Error("no looping demo scenario")
	}
	if _, ok := sim.Lookup("nope"); ok {
		t.Error("Lookup of an unknown name")
	}
}

// TestNames: Names are what Lookup finds, the demo's first and then the
// catalogue's in its order, each once.
func TestNames(t *testing.T) {
	names := sim.Names()
	catalog := sim.Catalog()
	if len(names) != 1+len(catalog) || names[0] != "demo" {
		t.Fatalf("names %q, want demo and the %d of the catalogue", names, len(catalog))
	}
	seen := map[string]bool{}
	for i, name := range names {
		if s, ok := sim.Lookup(name); !ok || s.Name != name || seen[name] {
			t.Errorf("%q: found %t, or twice", name, ok)
		}
		seen[name] = true
		if i > 0 && name != catalog[i-1].Name {
			t.Errorf("name %d %q, the catalogue's %q", i, name, catalog[i-1].Name)
		}
	}
}
