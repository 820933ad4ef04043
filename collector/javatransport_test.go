package collector

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// fakeJava answers like Java Sentinel's transport command API: /metric in
// MetricNode's thin line format (names with "|" already written as "_",
// the CPU usage and load lines appended, lines selected by second as
// MetricSearcher does), /getRules as fastjson writes the rule lists,
// /basicInfo and /version; anything else is HTTP 400, as in
// SimpleHttpCommandCenter.
type fakeJava struct {
	clock core.Clock

	mu       sync.Mutex
	lines    []string
	degrade  string
	flow     string
	version  string  // "" answers 1.8.8
	metricAt []int64 // startTime of each /metric request
}

func (f *fakeJava) add(lines ...string) {
	f.mu.Lock()
	f.lines = append(f.lines, lines...)
	f.mu.Unlock()
}

func (f *fakeJava) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	switch r.URL.Path {
	case "/metric":
		start, err1 := strconv.ParseInt(r.URL.Query().Get("startTime"), 10, 64)
		end, err2 := strconv.ParseInt(r.URL.Query().Get("endTime"), 10, 64)
		if err1 != nil || err2 != nil {
			http.Error(w, "bad time", http.StatusBadRequest)
			return
		}
		f.metricAt = append(f.metricAt, start)
		var b strings.Builder
		for _, l := range f.lines {
			ts, _ := strconv.ParseInt(l[:strings.IndexByte(l, '|')], 10, 64)
			if ts/1000 >= start/1000 && ts/1000 <= end/1000 {
				b.WriteString(l + "\n")
			}
		}
		now := f.clock.UnixMilli() / 1000 * 1000
		fmt.Fprintf(&b, "%d|__system_load__|12300|0|0|0|0|0|0|0\n%d|__cpu_usage__|4100|0|0|0|0|0|0|0\n", now, now)
		w.Write([]byte(b.String()))
	case "/getRules":
		switch r.URL.Query().Get("type") {
		case "degrade":
			w.Write([]byte(f.degrade))
		case "flow":
			w.Write([]byte(f.flow))
		default:
			http.Error(w, "invalid type", http.StatusBadRequest)
		}
	case "/basicInfo":
		w.Write([]byte("{\n\t\"machine\": \"gw-host\",\n\t\"ip\": \"10.0.0.9\"\n}"))
	case "/version":
		w.Write([]byte(cmp.Or(f.version, "1.8.8")))
	default:
		http.Error(w, "Unknown command `"+strings.TrimPrefix(r.URL.Path, "/")+"`", http.StatusBadRequest)
	}
}

func (f *fakeJava) requests() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.metricAt...)
}

// Rules as fastjson writes DegradeRuleManager.getRules() and
// FlowRuleManager.getRules(): every getter, nulls left out, names as the
// application gave them (with "|").
const (
	javaDegradeJSON = `[{"count":200.0,"grade":0,"limitApp":"default","minRequestAmount":5,"regex":false,"resource":"GET:/api|v2","slowRatioThreshold":0.5,"statIntervalMs":10000,"timeWindow":10},` +
		`{"count":0.3,"grade":1,"limitApp":"default","minRequestAmount":20,"regex":false,"resource":"db","slowRatioThreshold":1.0,"statIntervalMs":1000,"timeWindow":30}]`
	javaFlowJSON = `[{"clusterMode":false,"controlBehavior":1,"count":100.0,"grade":1,"limitApp":"default","maxQueueingTimeMs":500,"regex":false,"resource":"GET:/api|v2","strategy":0,"warmUpPeriodSec":10}]`
)

const javaT0 = 1764460830000

// javaWaitFor polls cond every 10 ms of real time for up to 10 s.
func javaWaitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func javaDial(t *testing.T, c *Collector, spec string) {
	t.Helper()
	targets, err := ParseTargets(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Dial(ctx, targets, DialOptions{Seed: 1, HandshakeTimeout: 5 * time.Second}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func javaTotals(c *Collector, instance, resource string) string {
	p, b, cpl, e, s, ok := c.Totals(instance, resource)
	if !ok {
		return "none"
	}
	return fmt.Sprintf("pass %d block %d complete %d error %d slow %d", p, b, cpl, e, s)
}

func TestJavaTargetMetricsRulesAndStatus(t *testing.T) {
	// Cleanups run last-registered first: the dial ends, then the server,
	// then no goroutine of the poller may remain.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	fake := &fakeJava{clock: clock, degrade: javaDegradeJSON, flow: javaFlowJSON}
	fake.add(
		// 20 s ago: before the backlog the first poll asks for.
		"1764460750000|GET:/api_v2|999|0|999|0|1|0|0|0",
		"1764460828000|GET:/api_v2|10|2|9|1|20|0|3|1",
		"1764460828000|__total_inbound_traffic__|15|2|14|1|17|0|3|0",
		"1764460828000|db|5|0|5|0|3", // an older Java: seven fields
		"1764460829000|GET:/api_v2|12|0|12|0|18|1|2|1",
		"1764460829000|com.foo.Svc:bar(java.lang.String)|4|0|4|2|100|0",
		"1764460829000|broken|x|0|0|0|0",
	)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	c := New(Options{Clock: clock})
	javaDial(t, c, "sentinel://"+host+"?app=order")
	javaWaitFor(t, "first poll", func() error {
		if got := javaTotals(c, host, "GET:/api_v2"); got != "pass 22 block 2 complete 21 error 1 slow 0" {
			return fmt.Errorf("GET:/api_v2: %s", got)
		}
		return nil
	})
	for res, want := range map[string]string{
		"db":                                "pass 5 block 0 complete 5 error 0 slow 0",
		"com.foo.Svc:bar(java.lang.String)": "pass 4 block 0 complete 4 error 2 slow 0",
		"__total_inbound_traffic__":         "none",
		"__cpu_usage__":                     "none",
		"__system_load__":                   "none",
		"broken":                            "none",
	} {
		if got := javaTotals(c, host, res); got != want {
			t.Errorf("%s: %s, want %s", res, got, want)
		}
	}
	if got := fake.requests(); len(got) != 1 || got[0] != javaT0-60000 {
		t.Errorf("first poll asked from %v, want the last minute (%d)", got, javaT0-60000)
	}
	snap := c.Publish()
	if len(snap.Targets) != 1 {
		t.Fatalf("targets %+v", snap.Targets)
	}
	st := snap.Targets[0]
	if st.State != TargetUp || st.Instance != host || st.Note != JavaBreakerStatesNote || st.LastError != "" || st.Rejected != 1 {
		t.Errorf("status %+v", st)
	}
	if w := strings.Join(snap.Warnings, "\n"); !strings.Contains(w, "1 target: "+JavaBreakerStatesNote) {
		t.Errorf("the snapshot does not say breaker states are unknown: %q", w)
	}
	if _, rejected, _ := c.Counters(); rejected != 1 || len(snap.Rejects) != 1 || snap.Rejects[0].Reason != "malformed" ||
		!strings.Contains(snap.Rejects[0].Last, "sentinel://"+host+"?app=order: /metric: ") {
		t.Errorf("rejects %d %+v", rejected, snap.Rejects)
	}
	// The rules of "GET:/api|v2" meet the statistics of "GET:/api_v2".
	d := c.Detail("order", "GET:/api_v2", javaT0-60000, javaT0)
	if len(d.Instances) != 1 {
		t.Fatalf("detail %+v", d)
	}
	in := d.Instances[0]
	wantBreakers := []core.BreakerRule{{Resource: "GET:/api_v2", Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000,
		MinRequestAmount: 5, StatIntervalMs: 10000, StatSlidingWindowBucketCount: 1, MaxAllowedRtMs: 200, Threshold: 0.5,
		Semantics: core.SemanticsJava}}
	wantFlows := []core.FlowRule{{Resource: "GET:/api_v2", TokenCalculateStrategy: core.WarmUp, Threshold: 100,
		WarmUpPeriodSec: 10, WarmUpColdFactor: 3}}
	if !reflect.DeepEqual(in.Breakers, wantBreakers) || !reflect.DeepEqual(in.Flows, wantFlows) || in.RulesVersion == "" {
		t.Errorf("rules\n%+v\n%+v", in.Breakers, in.Flows)
	}
	if in.State != core.Closed || len(in.Transitions) != 0 {
		t.Errorf("a Java instance has breaker transitions: %+v", in)
	}
	// The next seconds arrive once each, from where the last poll ended.
	fake.add("1764460830000|GET:/api_v2|7|1|7|0|10|0|1|1", "1764460830000|db|1|0|1|0|2|0|0|0")
	javaTicking(t, clock, 1)
	clock.Advance(JavaMetricEvery)
	javaWaitFor(t, "second poll", func() error {
		if got := javaTotals(c, host, "GET:/api_v2"); got != "pass 29 block 3 complete 28 error 1 slow 0" {
			return fmt.Errorf("GET:/api_v2: %s", got)
		}
		return nil
	})
	if got := fake.requests(); len(got) != 2 || got[1] != 1764460830000 {
		t.Errorf("second poll asked from %v", got)
	}
	clock.Advance(JavaMetricEvery)
	javaWaitFor(t, "third poll", func() error {
		if n := len(fake.requests()); n != 3 {
			return fmt.Errorf("%d polls", n)
		}
		return nil
	})
	if _, _, dups := c.Counters(); dups != 0 {
		t.Errorf("%d duplicates: seconds were fetched twice", dups)
	}
	if got := javaTotals(c, host, "db"); got != "pass 6 block 0 complete 6 error 0 slow 0" {
		t.Errorf("db: %s", got)
	}
	// The rates are those of the seconds fetched: the data is as recent as
	// the collector believes.
	rows := c.Publish().Rows
	if len(rows) != 3 || rows[0].App != "order" || rows[0].Resource != "GET:/api_v2" || !rows[0].HasBreaker ||
		rows[0].PassQPS != 29.0/5 || rows[0].Breakers != (StateCounts{Unknown: 1}) {
		t.Errorf("rows %+v", rows)
	}
}

// TestJavaRuleDriftAcrossGateways pushes a new degrade rule to 5 of 8 Java
// gateways and requires the collector to name the drift.
func TestJavaRuleDriftAcrossGateways(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	var specs []string
	for i := 0; i < 8; i++ {
		degrade := strings.Replace(javaDegradeJSON, `"count":0.3`, `"count":0.5`, 1)
		if i >= 5 {
			degrade = javaDegradeJSON // the push never reached these
		}
		fake := &fakeJava{clock: clock, degrade: degrade, flow: javaFlowJSON}
		fake.add(fmt.Sprintf("1764460825000|db|%d|0|%d|0|4|0|1|0", 10+i, 10+i))
		srv := httptest.NewServer(fake)
		t.Cleanup(srv.Close)
		specs = append(specs, "sentinel://"+strings.TrimPrefix(srv.URL, "http://")+"?app=gateway")
	}
	c := New(Options{Clock: clock})
	javaDial(t, c, strings.Join(specs, ","))
	javaWaitFor(t, "8 gateways up with rules and metrics", func() error {
		if m, _, _ := c.Counters(); m < 24 { // hello, rules, buckets each
			return fmt.Errorf("%d messages", m)
		}
		return nil
	})
	javaTicking(t, clock, 8)
	for i := 0; i < 6; i++ {
		clock.Advance(JavaMetricEvery)
	}
	var drift *triage.Finding
	for _, f := range c.Findings() {
		if f.Kind == triage.KindRuleDrift {
			drift = &f
		} else if f.Severity >= triage.Warning {
			t.Errorf("unexpected finding %+v", f)
		}
	}
	if drift == nil {
		t.Fatalf("no rule-drift finding in %+v", c.Findings())
	}
	groups := drift.Facts.(*triage.RuleDriftFacts).Groups
	if drift.App != "gateway" || drift.Resource != "db" || drift.Severity != triage.Critical || len(drift.Instances) != 8 ||
		len(groups) != 2 || len(groups[0].Instances) != 5 || len(groups[1].Instances) != 3 {
		t.Fatalf("drift %+v", drift)
	}
	if g := groups[0].Rule.Breakers; len(g) != 1 || g[0].Threshold != 0.5 || groups[1].Rule.Breakers[0].Threshold != 0.3 {
		t.Fatalf("groups %+v", groups)
	}
	snap := c.Publish()
	if snap.Apps != 1 || snap.Instances != 8 {
		t.Errorf("apps %d instances %d", snap.Apps, snap.Instances)
	}
}

func TestJavaTargetsThatAreNot(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>\n<body>hello</body>\n</html>\n"))
	}))
	defer html.Close()
	c := New(Options{})
	javaDial(t, c, "sentinel://"+strings.TrimPrefix(notFound.URL, "http://")+",sentinel://"+strings.TrimPrefix(html.URL, "http://"))
	javaWaitFor(t, "both down", func() error {
		ts := c.Publish().Targets
		if len(ts) != 2 {
			return fmt.Errorf("%d targets", len(ts))
		}
		for i, want := range []string{"not a Sentinel command API: /metric: HTTP 404", "incompatible: /metric answered 3 lines"} {
			if ts[i].State != TargetDown || !strings.Contains(ts[i].LastError, want) {
				return fmt.Errorf("%s: %s %q", ts[i].Name, ts[i].State, ts[i].LastError)
			}
		}
		return nil
	})
	if m, rejected, _ := c.Counters(); m != 0 || rejected != 0 {
		t.Errorf("%d messages, %d rejected", m, rejected)
	}
}

func TestJavaRulesMapping(t *testing.T) {
	degrade := `[{"resource":"a","grade":2,"count":5,"timeWindow":60},` + // Java defaults for the rest
		`{"resource":"b","grade":7,"count":1,"timeWindow":1},` +
		`{"resource":"c","grade":1,"count":1.5,"timeWindow":1},` +
		`{"resource":"d","grade":0,"count":-3,"timeWindow":1},` +
		`"nonsense"]`
	flow := `[{"resource":"e","count":10,"controlBehavior":2,"maxQueueingTimeMs":800,"warmUpPeriodSec":10},` +
		`{"resource":"f|g","count":3,"grade":0,"strategy":1,"refResource":"h|i","limitApp":"app-a","clusterMode":true},` +
		`{"resource":"j","count":30,"controlBehavior":3,"warmUpPeriodSec":20,"maxQueueingTimeMs":100},` +
		`{"resource":"k","count":1,"controlBehavior":9}]`
	breakers, flows, problems := javaRules([]byte(degrade), []byte(flow), "1.8.8")
	wantB := []core.BreakerRule{{Resource: "a", Strategy: core.ErrorCount, RetryTimeoutMs: 60000, MinRequestAmount: 5,
		StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Threshold: 5, Semantics: core.SemanticsJava}}
	wantF := []core.FlowRule{
		{Resource: "e", ControlBehavior: core.Throttling, Threshold: 10, MaxQueueingTimeMs: 800},
		{ID: "java:threads,relate=h_i,limitApp=app-a,cluster", Resource: "f_g", Threshold: 3},
		{Resource: "j", TokenCalculateStrategy: core.WarmUp, ControlBehavior: core.Throttling, Threshold: 30,
			MaxQueueingTimeMs: 100, WarmUpPeriodSec: 20, WarmUpColdFactor: 3},
	}
	if !reflect.DeepEqual(breakers, wantB) || !reflect.DeepEqual(flows, wantF) {
		t.Fatalf("breakers %+v\nflows %+v", breakers, flows)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	want := []string{"degrade: rule 1: grade 7", "degrade: rule 2: invalid rule", "degrade: rule 3: count -3",
		"degrade: rule 4: json", "flow: rule 3: controlBehavior 9"}
	if len(msgs) != len(want) {
		t.Fatalf("problems %q", msgs)
	}
	for i := range want {
		if !strings.Contains(msgs[i], want[i]) {
			t.Errorf("problem %d: %q, want %q", i, msgs[i], want[i])
		}
	}
	b, f, p := javaRules([]byte("[]"), nil, "")
	if b != nil || f != nil || p != nil {
		t.Fatalf("%v %v %v", b, f, p)
	}
	if _, _, p := javaRules([]byte("<html>"), []byte("[]"), ""); len(p) != 1 {
		t.Fatalf("%v", p)
	}
}

func TestParseJavaTargets(t *testing.T) {
	got, err := ParseTargets("sentinel://10.0.0.5:8719?app=gateway,sentinel://gw-2,sentinel://[::1]:9000/,sentinel://10.0.0.5:8719?app=gateway")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sentinel://10.0.0.5:8719?app=gateway", "sentinel://gw-2:8719", "sentinel://[::1]:9000"}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i].URL != want[i] || !isJavaTarget(got[i]) {
			t.Errorf("%d: %s, want %s", i, got[i].URL, want[i])
		}
	}
	jt, _ := javaTargetOf(got[1])
	if jt.base != "http://gw-2:8719" || jt.instance != "gw-2:8719" || jt.app != "gw-2:8719" {
		t.Errorf("%+v", jt)
	}
	for spec, msg := range map[string]string{
		"sentinel://h:1/metric":      "without a path",
		"sentinel://h:1?ap=x":        "only ?app=NAME",
		"sentinel://h:1?app=":        "empty app",
		"sentinel://h:1?app=a&app=b": "only ?app=NAME",
		"sentinel://u@h:1":           "no credentials",
		"sentinel://h:0":             "bad port",
		"sentinel:///x":              "no host",
	} {
		if _, err := ParseTargets(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", spec, err, msg)
		}
	}
}

// FuzzJavaRules: whatever a Java target answers to /getRules, the mapping
// never panics and every rule it keeps makes a valid wire rules message.
func FuzzJavaRules(f *testing.F) {
	f.Add([]byte(javaDegradeJSON), []byte(javaFlowJSON))
	f.Add([]byte(`[{"resource":"a","grade":2,"count":1e300,"timeWindow":9223372036854775807}]`), []byte(`[{"resource":"","count":-1}]`))
	f.Add([]byte(`[{"grade":0,"count":"NaN"}]`), []byte(`{"not":"a list"}`))
	f.Add([]byte("null"), []byte(`[{"resource":"x","controlBehavior":3,"warmUpPeriodSec":-4,"strategy":2,"refResource":"\u0000"}]`))
	f.Fuzz(func(t *testing.T, degrade, flow []byte) {
		breakers, flows, _ := javaRules(degrade, flow, "")
		m := &wire.Rules{Header: wire.Header{Ts: javaT0, Instance: "i"}, Version: wire.RulesVersion(breakers, flows),
			Breakers: breakers, Flows: flows}
		if err := wire.Validate(m, wire.Limits{}); err != nil {
			t.Fatalf("%v\n%+v", err, m)
		}
	})
}

// TestJavaSlowRatioCountRounds: Java takes maxAllowedRt as Math.round(count)
// (ResponseTimeCircuitBreaker), so count 0.5, a common mistake for a ratio,
// is a 1 ms bound, and 199.6 is 200.
func TestJavaSlowRatioCountRounds(t *testing.T) {
	for count, want := range map[string]uint64{"0.5": 1, "0.4": 0, "100.4": 100, "150.5": 151, "199.6": 200, "200": 200} {
		degrade := `[{"resource":"a","grade":0,"count":` + count + `,"slowRatioThreshold":0.5,"timeWindow":10}]`
		b, _, p := javaRules([]byte(degrade), nil, "1.8.8")
		if len(p) != 0 || len(b) != 1 || b[0].MaxAllowedRtMs != want {
			t.Errorf("count %s: %+v %v, want maxAllowedRtMs %d", count, b, p, want)
		}
	}
}

// javaPolls advances the clock n seconds, waiting for each poll.
func javaPolls(t *testing.T, clock *core.VirtualClock, fakes []*fakeJava, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		want := make([]int, len(fakes))
		for k, f := range fakes {
			want[k] = len(f.requests()) + 1
		}
		javaTicking(t, clock, len(fakes))
		clock.Advance(JavaMetricEvery)
		javaWaitFor(t, "poll", func() error {
			for k, f := range fakes {
				if got := len(f.requests()); got < want[k] {
					return fmt.Errorf("target %d: %d polls", k, got)
				}
			}
			return nil
		})
	}
}

// javaTicking waits until n pollers wait on the clock (each creates its
// ticker after its first poll): moving the clock before would leave a
// poller a whole period behind on a loaded machine.
func javaTicking(t *testing.T, clock *core.VirtualClock, n int) {
	t.Helper()
	javaWaitFor(t, "pollers waiting", func() error {
		if got := clock.Pending(); got < n {
			return fmt.Errorf("%d of %d pollers waiting", got, n)
		}
		return nil
	})
}

// javaServe serves fakes and dials them as one app.
func javaServe(t *testing.T, clock core.Clock, app string, fakes ...*fakeJava) (*Collector, []string) {
	t.Helper()
	var specs, hosts []string
	for _, f := range fakes {
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		host := strings.TrimPrefix(srv.URL, "http://")
		hosts = append(hosts, host)
		specs = append(specs, "sentinel://"+host+"?app="+app)
	}
	c := New(Options{Clock: clock})
	javaDial(t, c, strings.Join(specs, ","))
	javaWaitFor(t, "first polls", func() error {
		for _, f := range fakes {
			if len(f.requests()) == 0 {
				return fmt.Errorf("not polled")
			}
		}
		return nil
	})
	return c, hosts
}

// TestJavaLateSecondsAreNotEmpty: Java writes a second's lines when its
// metric timer runs; under load that is over a second late, and a poll in
// between finds nothing new. The seconds not written yet are not read as
// seconds without traffic (the rates would read low), until they are over
// javaGrace late.
func TestJavaLateSecondsAreNotEmpty(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	line := func(sec int64) string { return fmt.Sprintf("%d|r|85|0|85|0|20|0|0|0", javaT0+sec*1000) }
	fake := &fakeJava{clock: clock}
	fake.add(line(-6), line(-5), line(-4), line(-3), line(-2)) // the second before now is not written yet
	c, _ := javaServe(t, clock, "app", fake)
	qps := func() float64 {
		rows := c.Publish().Rows
		if len(rows) != 1 {
			t.Fatalf("rows %+v", rows)
		}
		return rows[0].PassQPS
	}
	if got := qps(); got != 85 {
		t.Errorf("first poll: %.1f/s", got)
	}
	javaPolls(t, clock, []*fakeJava{fake}, 1) // the timer is late: nothing new
	if got := qps(); got != 85 {
		t.Errorf("a poll that found nothing new: %.1f/s, want 85 (a second not written is not a second without traffic)", got)
	}
	fake.add(line(-1), line(0))
	javaPolls(t, clock, []*fakeJava{fake}, 1)
	if got := qps(); got != 85 {
		t.Errorf("after the late seconds: %.1f/s", got)
	}
	// Nothing written for javaGrace: the seconds are still only late.
	javaPolls(t, clock, []*fakeJava{fake}, 2)
	if got := qps(); got != 85 {
		t.Errorf("within the grace: %.1f/s", got)
	}
	// Nothing written for longer: the second is empty.
	javaPolls(t, clock, []*fakeJava{fake}, 1)
	if got := qps(); got != 85*4.0/5 {
		t.Errorf("after the grace: %.1f/s, want %.1f", got, 85*4.0/5)
	}
	if w := strings.Join(c.Publish().Warnings, "\n"); strings.Contains(w, "clock of") {
		t.Errorf("a polled instance's data lag is not a clock skew: %q", w)
	}
}

// TestJavaLinesOfOneNameAreSummed: "x|y" and "x_y" both arrive as x_y
// lines of one second; Sentinel's dashboard adds them, and so does the
// poller, saying so once.
func TestJavaLinesOfOneNameAreSummed(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	fake := &fakeJava{clock: clock}
	fake.add("1764460828000|x_y|10|0|10|1|20|0|0|0", "1764460828000|x_y|5|2|4|0|40|0|0|0", "1764460828000|z|1|0|1|0|1|0|0|0",
		"1764460829000|x_y|3|0|3|0|5|0|0|0", "1764460829000|x_y|4|0|4|0|5|0|0|0")
	c, hosts := javaServe(t, clock, "app", fake)
	javaWaitFor(t, "totals", func() error {
		if got := javaTotals(c, hosts[0], "x_y"); got != "pass 22 block 2 complete 21 error 1 slow 0" {
			return fmt.Errorf("x_y: %s", got)
		}
		return nil
	})
	snap := c.Publish()
	if len(snap.Notices) != 1 || snap.Notices[0] != (Notice{Kind: NoticeNameCollision, Instance: hosts[0], Resource: "x_y",
		At: 1764460828000, Count: 2}) {
		t.Fatalf("notices %+v", snap.Notices)
	}
	if _, _, dups := c.Counters(); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
}

// TestJavaRegexRules: a regex rule governs every resource of the app its
// pattern fully matches, on every instance that has it (whether that
// instance saw the resource or not), each listed with its pattern; a
// literal rule for a matched resource is another rule, and drift says so.
func TestJavaRegexRules(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	const regex = `[{"count":3.0,"grade":2,"limitApp":"default","minRequestAmount":5,"regex":true,"resource":"GET:/api/(a|b|c)","statIntervalMs":1000,"timeWindow":4}]`
	const flow = `[{"controlBehavior":0,"count":20.0,"grade":1,"limitApp":"default","regex":true,"resource":"GET:/api/.*","strategy":0}]`
	a := &fakeJava{clock: clock, degrade: regex, flow: flow}
	b := &fakeJava{clock: clock, degrade: regex, flow: flow}
	lit := &fakeJava{clock: clock, degrade: strings.Replace(strings.Replace(regex, `"regex":true`, `"regex":false`, 1), "(a|b|c)", "a", 1), flow: flow}
	for i, f := range []*fakeJava{a, b, lit} {
		f.add(fmt.Sprintf("1764460828000|GET:/api/a|%d|0|5|0|10|0|0|0", 5+i), "1764460828000|other|1|0|1|0|1|0|0|0")
	}
	a.add("1764460829000|GET:/api/b|4|0|4|0|10|0|0|0")
	c, hosts := javaServe(t, clock, "gw", a, b, lit)
	javaPolls(t, clock, []*fakeJava{a, b, lit}, 2)
	for _, h := range hosts[:2] {
		c.mu.Lock()
		in := c.insts[h]
		br, fl := in.breakers["GET:/api/b"], in.flows["GET:/api/b"]
		other, pattern := len(in.breakers["other"]), len(in.breakers["GET:/api/(a|b|c)"])+len(in.flows["GET:/api/.*"])
		c.mu.Unlock()
		if len(br) != 1 || br[0].Resource != "GET:/api/b" || br[0].Pattern != "GET:/api/(a|b|c)" || br[0].Strategy != core.ErrorCount ||
			len(fl) != 1 || fl[0].Pattern != "GET:/api/.*" || other != 0 || pattern != 0 {
			t.Errorf("%s: breakers %+v flows %+v (other: %d, under the pattern: %d)", h, br, fl, other, pattern)
		}
	}
	d := c.Detail("gw", "GET:/api/b", javaT0-60000, javaT0+10000)
	if len(d.Instances) != 1 || d.Instances[0].Breakers[0].Pattern != "GET:/api/(a|b|c)" {
		t.Errorf("detail %+v", d.Instances)
	}
	// A resource seen later is governed from then on.
	a.add("1764460830000|GET:/api/c|4|0|4|0|10|0|0|0", "1764460830000|GET:/api/d|4|0|4|0|10|0|0|0")
	javaPolls(t, clock, []*fakeJava{a, b, lit}, 8)
	c.mu.Lock()
	got := fmt.Sprint(len(c.insts[hosts[1]].breakers["GET:/api/c"]), len(c.insts[hosts[1]].breakers["GET:/api/d"]),
		len(c.insts[hosts[1]].flows["GET:/api/d"]))
	c.mu.Unlock()
	if got != "1 0 1" {
		t.Errorf("rules of GET:/api/c and /d on the instance that never saw them: %s", got)
	}
	drifts := map[string]int{}
	for _, f := range c.Findings() {
		if f.Kind == triage.KindRuleDrift {
			drifts[f.Resource] = len(f.Facts.(*triage.RuleDriftFacts).Groups)
		}
	}
	// The literal rule differs from the regex rule on /a; on /b and /c the
	// instance with the literal rule has none. No pattern is a resource.
	if fmt.Sprint(drifts) != "map[GET:/api/a:2 GET:/api/b:2 GET:/api/c:2]" {
		t.Errorf("drift %v", drifts)
	}
}

// TestJavaRulesBefore18: Sentinel 1.6.3's degrade rules, as its
// /getRules answered, keep their meaning: grade 0 is an average response
// time (never a slow-request ratio), grade 1 the exception ratio of the
// last second, grade 2 the exceptions of the last minute; a cut-off
// resource has no probe.
func TestJavaRulesBefore18(t *testing.T) {
	degrade, err := os.ReadFile("testdata/java/legacy-1.6.3/getRules-degrade.json")
	if err != nil {
		t.Fatal(err)
	}
	flow, err := os.ReadFile("testdata/java/legacy-1.6.3/getRules-flow.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []core.BreakerRule{
		{Resource: "queryPrice", Strategy: core.AverageRT, Threshold: 100, RetryTimeoutMs: 5000, MinRequestAmount: 5,
			StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Semantics: core.SemanticsJava16},
		{Resource: "checkStock", Strategy: core.ErrorRatio, Threshold: 0.5, RetryTimeoutMs: 10000, MinRequestAmount: 5,
			StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Semantics: core.SemanticsJava16},
		{Resource: "payOrder", Strategy: core.ErrorCount, Threshold: 3, RetryTimeoutMs: 30000,
			StatIntervalMs: 60000, StatSlidingWindowBucketCount: 1, Semantics: core.SemanticsJava16},
	}
	for _, version := range []string{"1.6.3", "1.7.2", ""} { // "": told by the fields
		b, f, p := javaRules(degrade, flow, version)
		if len(p) != 0 || len(f) != 1 || !reflect.DeepEqual(b, want) {
			t.Errorf("version %q: %+v %+v %v", version, b, f, p)
		}
	}
	if b, _, _ := javaRules([]byte(javaDegradeJSON), nil, ""); b[0].Semantics != core.SemanticsJava || b[0].Strategy != core.SlowRequestRatio {
		t.Errorf("a 1.8 rule without a version: %+v", b[0])
	}
	if b, _, _ := javaRules(degrade, nil, "1.8.0"); b[0].Strategy != core.SlowRequestRatio {
		t.Errorf("a 1.8 service's grade 0: %+v", b[0])
	}
	// Such rules travel and are shown, and core refuses to enforce them.
	m := &wire.Rules{Header: wire.Header{Ts: javaT0, Instance: "i"}, Version: wire.RulesVersion(want, nil), Breakers: want}
	if err := wire.Validate(m, wire.Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.NewBreaker(want[0]); err == nil || !strings.Contains(err.Error(), "before 1.8") {
		t.Errorf("NewBreaker: %v", err)
	}
	if err := core.NewGuard(core.GuardOptions{}).LoadBreakerRules(want); err == nil {
		t.Error("a guard took a 1.6 rule")
	}

	// A 1.6.3 service's cut-offs: OPEN while it blocks, CLOSED at its
	// first pass, no HALF_OPEN.
	clock := core.NewVirtualClock(time.UnixMilli(1796083770000))
	fake := &fakeJava{clock: clock, degrade: string(degrade), flow: string(flow), version: "1.6.3"}
	log, err := os.ReadFile("testdata/java/legacy-1.6.3/price-legacy-metrics.log.2026-12-01")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		l, err := metriclog.ParseFat(line)
		if err != nil {
			t.Fatal(err)
		}
		fake.add(fmt.Sprintf("%d|%s|%d|%d|%d|%d|%d", l.Timestamp, l.Resource, l.Pass, l.Block, l.Success, l.Exception, l.Rt))
	}
	c, hosts := javaServe(t, clock, "legacy", fake)
	javaPolls(t, clock, []*fakeJava{fake}, 4)
	d := c.Detail("legacy", "queryPrice", clock.UnixMilli()-120000, clock.UnixMilli())
	if len(d.Instances) != 1 || d.Instances[0].Instance != hosts[0] || d.Instances[0].Provenance != ProvenanceInferred {
		t.Fatalf("detail %+v", d.Instances)
	}
	var steps []string
	for _, tr := range d.Instances[0].Transitions {
		steps = append(steps, short(tr.From)+">"+short(tr.To))
	}
	if s := strings.Join(steps, " "); !strings.HasPrefix(s, "C>O O>C C>O") || strings.Contains(s, "H") {
		t.Errorf("transitions %s", s)
	}
}

func short(s core.State) string {
	return map[core.State]string{core.Closed: "C", core.Open: "O", core.HalfOpen: "H"}[s]
}
