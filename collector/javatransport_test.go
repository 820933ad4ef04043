package collector

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/waitfor"
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
	params   string  // "" answers as a service without the hot-parameter module
	version  string  // "" answers 1.8.8
	metricAt []int64 // startTime of each /metric request
	// flowPolls counts /getRules?type=flow requests; failMetric /metric
	// requests still to answer HTTP 500, and failUntil the time until
	// which every one does (an outage).
	flowPolls  int
	failMetric int
	failUntil  int64
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
		if f.failMetric > 0 || f.clock.UnixMilli() < f.failUntil {
			f.failMetric = max(f.failMetric-1, 0)
			http.Error(w, "failing", http.StatusInternalServerError)
			return
		}
		var b strings.Builder
		n := 0
		for _, l := range f.lines {
			ts, _ := strconv.ParseInt(l[:strings.IndexByte(l, '|')], 10, 64)
			if ts/1000 >= start/1000 && ts/1000 <= end/1000 {
				b.WriteString(l + "\n")
				if n++; n == 100000 { // Java's MetricsReader.MAX_LINES_RETURN
					break // Java's MetricsReader.MAX_LINES_RETURN
				}
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
			f.flowPolls++
			w.Write([]byte(f.flow))
		default:
			http.Error(w, "invalid type", http.StatusBadRequest)
		}
	case "/getParamFlowRules":
		if f.params == "" {
			http.Error(w, "Unknown command `getParamFlowRules`", http.StatusBadRequest)
			return
		}
		w.Write([]byte(f.params))
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
	javaParamJSON = `[{"burstCount":0,"clusterConfig":{"fallbackToLocalWhenFail":true,"sampleCount":1,"thresholdType":0,"windowIntervalMs":1000},` +
		`"clusterMode":false,"controlBehavior":0,"count":5.0,"durationInSec":1,"grade":1,"limitApp":"default","maxQueueingTimeMs":0,` +
		`"paramFlowItemList":[{"classType":"java.lang.String","count":50,"object":"vip-123"}],"paramIdx":0,"resource":"GET:/api|v2"}]`
	javaFlowJSON = `[{"clusterMode":false,"controlBehavior":1,"count":100.0,"grade":1,"limitApp":"default","maxQueueingTimeMs":500,"regex":false,"resource":"GET:/api|v2","strategy":0,"warmUpPeriodSec":10}]`
)

const javaT0 = 1764460830000

// javaWaitFor polls cond every 10 ms of real time for up to 30 s (a
// ceiling for a loaded machine: a 30 MB answer parsed under -race).
func javaWaitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	waitfor.Eventually(t, what, 30*time.Second, 10*time.Millisecond, cond)
}

func javaDial(t *testing.T, c *Collector, spec string) {
	t.Helper()
	targets, err := source.ParseTargets(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		dial(ctx, c, targets, source.DialOptions{Seed: 1, HandshakeTimeout: 5 * time.Second})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func javaTotals(c *Collector, instance, resource string) string {
	tp, ok := c.Totals(instance, resource)
	p, b, cpl, e, s := tp.Pass, tp.Block, tp.Complete, tp.Error, tp.Slow
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
	fake := &fakeJava{clock: clock, degrade: javaDegradeJSON, flow: javaFlowJSON, params: javaParamJSON}
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
	if st.State != TargetUp || st.Instance != host || st.Note != (TargetRemark{StatesInferred: true}) || ProblemText(st.Problem) != "" || st.Rejected != 1 {
		t.Errorf("status %+v", st)
	}
	if w := strings.Join(warningTexts(snap.Warnings), "\n"); !strings.Contains(w, "1 target: breaker states not exposed by Java Sentinel: inferred from counts where a resource has only degrade rules") {
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
	// Its hot-parameter rules are read, its hot values are unknown.
	wantParams := []core.HotParamRule{{Resource: "GET:/api_v2", MetricType: core.HotParamQPS, Threshold: 5, DurationInSec: 1,
		SpecificItems: map[string]int64{"vip-123": 50}}}
	if !reflect.DeepEqual(d.HotRules, wantParams) || !reflect.DeepEqual(in.Params, wantParams) || d.HotUnknown != "Java Sentinel" || d.Hot != nil {
		t.Errorf("hot rules %+v, instance's %+v, unknown %q, values %+v", d.HotRules, in.Params, d.HotUnknown, d.Hot)
	}
	// The next seconds arrive once each, from where the last poll ended.
	fake.add("1764460830000|GET:/api_v2|7|1|7|0|10|0|1|1", "1764460830000|db|1|0|1|0|2|0|0|0")
	javaTicking(t, clock, 1)
	clock.Advance(source.JavaMetricEvery)
	javaWaitFor(t, "second poll", func() error {
		if got := javaTotals(c, host, "GET:/api_v2"); got != "pass 29 block 3 complete 28 error 1 slow 0" {
			return fmt.Errorf("GET:/api_v2: %s", got)
		}
		return nil
	})
	if got := fake.requests(); len(got) != 2 || got[1] != 1764460830000 {
		t.Errorf("second poll asked from %v", got)
	}
	clock.Advance(source.JavaMetricEvery)
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
		clock.Advance(source.JavaMetricEvery)
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
			if ts[i].State != TargetDown || !strings.Contains(ProblemText(ts[i].Problem), want) {
				return fmt.Errorf("%s: %s %q", ts[i].Name, ts[i].State, ProblemText(ts[i].Problem))
			}
		}
		return nil
	})
	if m, rejected, _ := c.Counters(); m != 0 || rejected != 0 {
		t.Errorf("%d messages, %d rejected", m, rejected)
	}
}

// javaPolls advances the clock n seconds, waiting for each poll of every
// target to be applied to the end.
func javaPolls(t *testing.T, c *Collector, clock *core.VirtualClock, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		want := javaPollCounts(c)
		for k := range want {
			want[k]++
		}
		javaTicking(t, clock, len(want))
		clock.Advance(source.JavaMetricEvery)
		javaWaitPolls(t, c, "poll", want)
	}
}

// javaPollCounts is every target's Polls, in the order they were dialed.
func javaPollCounts(c *Collector) []int64 {
	c.mu.Lock()
	ts := slicesClone(c.targets)
	c.mu.Unlock()
	out := make([]int64, len(ts))
	for i, st := range ts {
		out[i] = st.Status().Polls
	}
	return out
}

// javaWaitPolls waits until each target has applied want[i] polls: a poll
// answered is not yet a poll applied.
func javaWaitPolls(t *testing.T, c *Collector, what string, want []int64) {
	t.Helper()
	javaWaitFor(t, what, func() error {
		got := javaPollCounts(c)
		if len(got) != len(want) {
			return fmt.Errorf("%d of %d targets", len(got), len(want))
		}
		for k := range want {
			if got[k] < want[k] {
				return fmt.Errorf("target %d: %d polls applied, want %d", k, got[k], want[k])
			}
		}
		return nil
	})
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
	first := make([]int64, len(fakes))
	for i := range first {
		first[i] = 1
	}
	javaWaitPolls(t, c, "first polls", first)
	return c, hosts
}
