package collector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector/record"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/deadport"
)

// gwHello is gw-1's hello at ts, of the process started at startedAt.
func gwHello(ts, startedAt int64, sdk string) wire.Message {
	return &wire.Hello{Header: wire.Header{Ts: ts, Instance: "gw-1"}, App: "gw", StartedAt: startedAt,
		SDK: sdk, BucketMs: 500}
}

// gwItems is gw-1's buckets message at ts with one call on db in the
// bucket at start.
func gwItems(ts, start int64) wire.Message {
	return &wire.Buckets{Header: wire.Header{Ts: ts, Instance: "gw-1"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "db", Start: start, Metrics: core.Metrics{Pass: 1, Complete: 1, RtSum: 10, RtMax: 10}}}}
}

// recorder is a recording in the test's folder.
func recorder(t *testing.T) (string, *record.Writer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "live.ndjson")
	rec, err := record.Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return path, rec
}

// replayedUnreceived replays a closed recording and returns what its
// collector counts as never received.
func replayedUnreceived(t *testing.T, path string) int64 {
	t.Helper()
	r, err := newReplayMessages(filepath.Base(path), readFile(t, path), nil, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r.Collector().Publish().UnreceivedMs
}

// TestUnreceivedIsWhatTheBacklogCannotBringBack feeds a process's
// messages around a reconnect: what its collector never received is the
// time between its data's end (or, for a restarted process, its first
// period) and the earlier of the 60 s wire v1 promises a new connection
// and the backlog's first period; a collector that starts late, a backlog
// that reaches back, or a Java target claim nothing.
func TestUnreceivedIsWhatTheBacklogCannotBringBack(t *testing.T) {
	const t0 = int64(1764460800000)
	const started = t0 - 3_600_000
	hello, items := gwHello, gwItems
	heartbeat := func(ts int64) wire.Message {
		return &wire.Buckets{Header: wire.Header{Ts: ts, Instance: "gw-1"}, BucketMs: 500}
	}
	const agentSDK = "sentinel-top-agent/0.1.0"
	for _, tc := range []struct {
		name string
		msgs []wire.Message
		want int64 // ms never received
	}{
		{"away 3 min, the backlog's 60 s from its oldest period", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0),
			hello(t0+180_000, started, agentSDK), items(t0+180_000, t0+120_000)}, 119_500},
		{"away 3 min, an idle backlog's oldest heartbeat", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0),
			hello(t0+180_000, started, agentSDK), heartbeat(t0 + 120_500)}, 119_500},
		{"away 3 min, a sender sending no heartbeat: 60 s as promised", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0),
			hello(t0+180_000, started, agentSDK), items(t0+180_000, t0+170_000)}, 119_500},
		{"away 3 min, a 2 min backlog", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0),
			hello(t0+180_000, started, agentSDK), heartbeat(t0 + 60_500)}, 59_500},
		{"away 3 min, a backlog reaching further back than the data", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0),
			hello(t0+180_000, started, agentSDK), items(t0+180_000, t0-10_000)}, 0},
		{"away 50 s", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0),
			hello(t0+50_000, started, agentSDK), items(t0+50_000, t0-10_000)}, 0},
		{"heartbeats count as data", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0), heartbeat(t0 + 100_200),
			hello(t0+180_000, started, agentSDK), items(t0+180_000, t0+120_000)}, 20_000},
		{"restarted 2 min before the reconnect: its first minute", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0),
			hello(t0+180_000, t0+60_100, agentSDK), items(t0+180_000, t0+120_000)}, 59_500},
		{"restarted 30 s before the reconnect", []wire.Message{
			hello(t0, started, agentSDK), items(t0+500, t0),
			hello(t0+180_000, t0+150_000, agentSDK), items(t0+180_000, t0+150_000)}, 0},
		{"a collector that starts after its agent", []wire.Message{
			hello(t0+180_000, started, agentSDK), items(t0+180_000, t0+120_000)}, 0},
		{"a Java target the collector polls", []wire.Message{
			hello(t0, 0, "java-sentinel/1.8.8"), items(t0+1000, t0),
			hello(t0+180_000, 0, "java-sentinel/1.8.8"), items(t0+181_000, t0+120_000)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0))})
			for _, m := range tc.msgs {
				if !readIngest(c, "t", m) {
					t.Fatalf("%T refused", m)
				}
			}
			s := c.Publish()
			if s.UnreceivedMs != tc.want {
				t.Fatalf("never received %d ms; want %d", s.UnreceivedMs, tc.want)
			}
			warned := false
			for _, w := range warningTexts(s.Warnings) {
				warned = warned || strings.HasPrefix(w, "no data received from gw-1")
			}
			if warned != (tc.want > 0) || (tc.want > 0) != (len(s.Unreceived) == 1) {
				t.Errorf("gaps %+v, warnings %q", s.Unreceived, warningTexts(s.Warnings))
			}
		})
	}
}

// TestUnreceivedWarningNamesTheLargest: the warning is one line at any
// fleet size, the largest gaps first, the rest counted.
func TestUnreceivedWarningNamesTheLargest(t *testing.T) {
	const t0 = int64(1764460800000)
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0)), MaxMemory: 1 << 30})
	const n = maxGapInstances + 6
	for i := range n {
		name := fmt.Sprintf("gw-%03d", i)
		away := int64(61_000 + 1000*i)
		for _, m := range []wire.Message{
			&wire.Hello{Header: wire.Header{Ts: t0, Instance: name}, App: "gw", StartedAt: t0 - 1, BucketMs: 500},
			&wire.Buckets{Header: wire.Header{Ts: t0 + 500, Instance: name}, BucketMs: 500},
			&wire.Hello{Header: wire.Header{Ts: t0 + away, Instance: name}, App: "gw", StartedAt: t0 - 1, BucketMs: 500},
			&wire.Buckets{Header: wire.Header{Ts: t0 + away, Instance: name}, BucketMs: 500},
		} {
			c.Ingest("t", m)
		}
	}
	s := c.Publish()
	var total int64
	for i := range n {
		total += int64(500 + 1000*i)
	}
	if s.UnreceivedMs != total || len(s.Unreceived) != maxGapInstances || s.UnreceivedOthers != 6 {
		t.Fatalf("%d ms never received, %d instances named, %d others; want %d, %d and 6",
			s.UnreceivedMs, len(s.Unreceived), s.UnreceivedOthers, total, maxGapInstances)
	}
	w := WarningText(s.Warnings[len(s.Warnings)-1])
	want := "no data received from 70 instances for 40m50s in all (gw-063 1m3.5s from 2025-11-30 00:00:00 UTC, " +
		"gw-062 1m2.5s from 2025-11-30 00:00:00 UTC, gw-061 1m1.5s from 2025-11-30 00:00:00 UTC, 67 more): " +
		"lost while out of reach (a reconnect brings back an agent's last 60 s, Java Sentinel's 10 min); unknown, not idle"
	if w != want {
		t.Errorf("warning\n %q\nwant\n %q", w, want)
	}
}

// TestUnreceivedOverLoopback: a real agent and collector over a loopback
// websocket. The connection is down for 3 min of the agent's clock while
// its service is called; on reconnecting, the collector counts the 2 min
// its backlog could not bring back as never received, its totals are the
// agent's less exactly those calls, and its recording replays to the same
// gap. A second outage, of 20 s, loses nothing and claims nothing.
func TestUnreceivedOverLoopback(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	fa := startFleetAgent(t, clock, "gateway-0")
	p := newProxy(t, fa.addr)
	deadAddr := deadport.Addr(t) // dialing it is refused
	recording, rec := recorder(t)
	c := New(Options{Record: rec.Writer})
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	target := source.Target{Name: p.addr(), URL: "ws://" + p.addr() + agent.StreamPath}
	go func() {
		dial(ctx, c, []source.Target{target}, source.DialOptions{Seed: 1})
		close(dialed)
	}()
	defer func() { cancel(); <-dialed }()
	resources := []string{"db"}
	period := func() {
		fa.traffic(resources, 3)
		clock.Advance(500 * time.Millisecond)
		fa.a.Ship()
	}
	state := func(want TargetState) {
		eventually(t, "target "+want.String(), func() error {
			ts := c.Publish().Targets
			if len(ts) != 1 || ts[0].State != want {
				return fmt.Errorf("targets %+v", ts)
			}
			return nil
		})
	}
	passes := func(want int64) {
		eventually(t, fmt.Sprintf("%d passes counted", want), func() error {
			if got, _ := c.Totals("gateway-0", "db"); got.Pass != want {
				return fmt.Errorf("%d passes counted", got.Pass)
			}
			return nil
		})
	}
	outage := func(periods int) {
		p.retarget(deadAddr)
		p.cut()
		state(TargetDown)
		for range periods {
			period()
		}
		p.retarget(fa.addr)
		state(TargetUp)
	}
	state(TargetUp)
	for range 6 {
		period()
	}
	passes(fa.pass["db"])

	outage(360) // 3 min: the first 2 min are gone
	lost := int64(240 * 3)
	passes(fa.pass["db"] - lost)
	s := c.Publish()
	if s.UnreceivedMs != 120_000 || len(s.Unreceived) != 1 || s.Unreceived[0].FromMs != 1764460800000+3000 {
		t.Fatalf("never received: %d ms, %+v; want 120,000 ms from the outage's start", s.UnreceivedMs, s.Unreceived)
	}
	gap := Span{From: 1764460800000 + 3000, To: 1764460800000 + 123_000}
	d := c.Detail("gateway", "db", gap.From-1000, gap.From+1000)
	if len(d.Instances) != 1 || !slices.Equal(d.Instances[0].Unreceived, []Span{gap}) {
		t.Errorf("the detail's spans never received: %+v; want %v", d.Instances, gap)
	}
	if d := c.Detail("gateway", "db", gap.To, gap.To+1000); len(d.Instances[0].Unreceived) != 0 {
		t.Errorf("a range after the gap lists %v", d.Instances[0].Unreceived)
	}
	outage(40) // 20 s: the backlog brings it all back
	passes(fa.pass["db"] - lost)
	if s := c.Publish(); s.UnreceivedMs != 120_000 || s.Unreceived[0].Gaps != 1 {
		t.Fatalf("after a 20 s outage: never received %d ms in %d gaps; want the first outage's alone", s.UnreceivedMs, s.Unreceived[0].Gaps)
	}

	cancel()
	<-dialed
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if got := replayedUnreceived(t, recording); got != 120_000 {
		t.Errorf("the recording replays to %d ms never received; live counted 120,000", got)
	}
}

// TestRecordingKeepsWhatSettledABacklog: a recording leaves out bucket
// items already received, but keeps whole the message that settled a
// reconnect's backlog, so that its replay judges the gap as the live
// collector did: here a 2 min backlog reached back past the collector's
// data, and the service was idle for the first 40 s after it.
func TestRecordingKeepsWhatSettledABacklog(t *testing.T) {
	const t0 = int64(1764460800000)
	recording, rec := recorder(t)
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0)), Record: rec.Writer})
	for _, m := range []wire.Message{gwHello(t0, t0-1, ""), gwItems(t0+500, t0),
		gwHello(t0+90_000, t0-1, ""), gwItems(t0+500, t0), gwItems(t0+90_000, t0+40_000)} {
		c.Ingest("t", m)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	live, replayed := c.Publish().UnreceivedMs, replayedUnreceived(t, recording)
	if live != 0 || replayed != 0 {
		t.Errorf("never received: live %d ms, replayed %d ms; want 0 and 0", live, replayed)
	}
}

// TestTriageDoesNotTakeUnreceivedAsIdle: the collector tells triage what
// never arrived, so rule advice's QPS leaves it out (see
// triage.TestUnreceivedIsNotIdle): 1 call a bucket (2 QPS, 20 requests in
// the rule's 10 s window, minRequestAmount 20) for 30 s, a reconnect whose
// backlog reaches back to 55 s later, and 30 s more.
func TestTriageDoesNotTakeUnreceivedAsIdle(t *testing.T) {
	const t0 = int64(1764460800000)
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0))})
	rule := core.BreakerRule{Resource: "db", Strategy: core.SlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 200,
		MinRequestAmount: 20, StatIntervalMs: 10_000, StatSlidingWindowBucketCount: 10, RetryTimeoutMs: 10_000}
	var msgs []wire.Message
	traffic := func(from, to int64) {
		for start := from; start < to; start += 500 {
			msgs = append(msgs, gwItems(start+500, start))
		}
	}
	msgs = append(msgs, gwHello(t0, t0-1, ""), &wire.Rules{Header: wire.Header{Ts: t0, Instance: "gw-1"}, Version: "v1",
		Breakers: []core.BreakerRule{rule}})
	traffic(t0, t0+30_000)
	msgs = append(msgs, gwHello(t0+145_000, t0-1, ""))
	traffic(t0+85_000, t0+115_000)
	for _, m := range msgs {
		if !c.Ingest("t", m) {
			t.Fatalf("%T refused", m)
		}
	}
	s := c.Publish()
	if s.UnreceivedMs != 55_000 {
		t.Fatalf("never received %d ms; want 55,000", s.UnreceivedMs)
	}
	for _, f := range s.Findings {
		if f.Kind == triage.KindRuleAdvice {
			t.Errorf("advice from a QPS that counted what never arrived as idle: %s", f.Summary)
		}
	}
}

// javaRig is a fake Java target writing lines every second, dialed by a
// collector on a virtual clock, that the test can cut off for a while.
type javaRig struct {
	t        *testing.T
	clock    *core.VirtualClock
	fake     *fakeJava
	c        *Collector
	instance string
	written  int64                // the next second to write
	line     func(int64) []string // the lines of a second
	passes   int64                // db's passes written (1 a second)
}

// newJavaRig writes 5 s of lines (extra more each second than db's) and
// dials the target.
func newJavaRig(t *testing.T, line func(sec int64) []string) *javaRig {
	r := &javaRig{t: t, clock: core.NewVirtualClock(time.UnixMilli(javaT0)), written: javaT0 - 5000, line: line}
	r.fake = &fakeJava{clock: r.clock, degrade: "[]", flow: "[]"}
	r.write()
	c, hosts := javaServe(t, r.clock, "order", r.fake)
	r.c, r.instance = c, hosts[0]
	return r
}

// write adds the lines of every second before now.
func (r *javaRig) write() {
	for ; r.written < r.clock.UnixMilli()-999; r.written += 1000 {
		r.fake.add(fmt.Sprintf("%d|db|1|0|1|0|5|0|0|0", r.written))
		r.fake.add(r.line(r.written)...)
		r.passes++
	}
}

func (r *javaRig) counted() int64 { tp, _ := r.c.Totals(r.instance, "db"); return tp.Pass }

// polls moves the clock n seconds, each poll applied.
func (r *javaRig) polls(n int) {
	r.t.Helper()
	for range n {
		javaTicking(r.t, r.clock, 1)
		r.write()
		javaPolls(r.t, r.c, r.clock, 1)
	}
}

// pending1 waits until one timer is pending and also holds.
func (r *javaRig) pending1(what string, also func(TargetStatus) bool) {
	r.t.Helper()
	javaWaitFor(r.t, what, func() error {
		if st := r.c.Publish().Targets[0]; r.clock.Pending() != 1 || !also(*st) {
			return fmt.Errorf("%d timers, %+v", r.clock.Pending(), st)
		}
		return nil
	})
}

// outage fails every /metric for d, the clock moving a second at a time,
// until the target is back with its first poll applied (its ticker is
// created after it; a backoff timer fires and is gone at once, so one
// timer pending again is the next one).
func (r *javaRig) outage(d time.Duration) {
	r.t.Helper()
	r.fake.mu.Lock()
	r.fake.failUntil = r.clock.UnixMilli() + d.Milliseconds()
	r.fake.mu.Unlock()
	was := r.c.Publish().Targets[0].Reconnects
	javaTicking(r.t, r.clock, 1)
	r.write()
	r.clock.Advance(time.Second) // the poll that fails
	r.pending1("a reconnect scheduled", func(st TargetStatus) bool { return st.Reconnects > was && st.State != TargetUp })
	for range 2 * int(d/time.Second) {
		r.write()
		r.clock.Advance(time.Second)
		r.pending1("a backoff or a ticker", func(TargetStatus) bool { return true })
		if st := r.c.Publish().Targets[0]; st.State == TargetUp {
			return
		}
	}
	r.t.Fatalf("not back after the outage: %+v", r.c.Publish().Targets[0])
}

// TestJavaReconnectReadsItsGapBack: a Java target out of reach for 3 min
// is read back from where the collector's data ends (Java keeps its
// metric logs), every call counted and nothing claimed lost; out of reach
// for 12 min, the first poll reads the last 10 min, and the time before
// them is counted as never received, exactly the seconds whose calls are
// missing.
func TestJavaReconnectReadsItsGapBack(t *testing.T) {
	r := newJavaRig(t, func(int64) []string { return nil })
	r.polls(5)
	if got := r.counted(); got != r.passes {
		t.Fatalf("%d passes counted of %d", got, r.passes)
	}

	r.outage(3 * time.Minute)
	r.polls(2)
	if got, s := r.counted(), r.c.Publish(); got != r.passes || s.UnreceivedMs != 0 {
		t.Fatalf("after a 3 min outage: %d passes counted of %d, %d ms never received; want all, and 0 ms", got, r.passes, s.UnreceivedMs)
	}

	r.outage(12 * time.Minute)
	r.polls(2)
	s := r.c.Publish()
	if s.UnreceivedMs < 120_000 || s.UnreceivedMs > 151_000 || r.counted() != r.passes-s.UnreceivedMs/1000 {
		t.Fatalf("after a 12 min outage: %d ms never received, %d passes counted of %d; want 2 to 2.5 min, and its seconds' passes missing",
			s.UnreceivedMs, r.counted(), r.passes)
	}
}

// TestJavaCatchUpCutShort: a reconnect's first answer holds at most
// javaMaxLines (Java's MAX_LINES_RETURN), here about 166 s of 600
// resources' 180 s: the collector's data ends where the answer was cut,
// not at the poll's time, so the seconds still to come are not read as
// seconds without traffic (db's rate stays 1 a second); the next poll
// brings them, every call counted.
func TestJavaCatchUpCutShort(t *testing.T) {
	filler := func(sec int64) []string {
		out := make([]string, 0, 600)
		for k := range 600 {
			out = append(out, fmt.Sprintf("%d|r%03d|1|0|1|0|5|0|0|0", sec, k))
		}
		return out
	}
	r := newJavaRig(t, func(int64) []string { return nil })
	r.polls(2)
	r.line = filler
	r.outage(3 * time.Minute)
	d := r.c.Detail("order", "db", r.clock.UnixMilli()-300_000, r.clock.UnixMilli())
	if len(d.Instances) != 1 || d.Instances[0].PassQPS != 1 {
		t.Fatalf("after the cut answer db's rate is %+v; want 1 a second (its data end at the cut)", d.Instances)
	}
	if r.counted() >= r.passes-5 {
		t.Fatalf("%d of %d passes counted after the first answer: it was not cut short", r.counted(), r.passes)
	}
	r.polls(2)
	if got := r.counted(); got != r.passes {
		t.Errorf("%d passes counted of %d once caught up", got, r.passes)
	}
}

// TestBreakerStatesSurviveAReconnect: a real agent's breaker trips while
// its collector is away for 20 s, and closes while it is away for 3 min,
// long after the minute a backlog brings back: after each reconnect the
// collector shows the breaker's state and when it began, each transition
// once; a collector that starts while the breaker is open shows it open.
func TestBreakerStatesSurviveAReconnect(t *testing.T) {
	const t0 = int64(1764460800000)
	clock := core.NewVirtualClock(time.UnixMilli(t0))
	fa := startFleetAgent(t, clock, "gateway-0")
	if err := fa.a.LoadRules([]core.BreakerRule{{Resource: "db", Strategy: core.ErrorCount, Threshold: 3,
		MinRequestAmount: 1, StatIntervalMs: 1000, RetryTimeoutMs: 60_000}}, nil); err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, fa.addr)
	deadAddr := deadport.Addr(t)
	dial := func(addr string) *Collector { return dialOne(t, New(Options{}), addr) }
	c := dial(p.addr())
	call := func(fail bool) {
		if e, err := fa.a.Entry("db"); err == nil {
			var cause error
			if fail {
				cause = fmt.Errorf("db down")
			}
			e.Exit(cause)
		}
	}
	periods := func(n int, fail bool) {
		for range n {
			call(fail)
			clock.Advance(500 * time.Millisecond)
			fa.a.Ship()
		}
	}
	up := func(c *Collector, want bool) {
		eventually(t, fmt.Sprintf("target up %v", want), func() error {
			ts := c.Publish().Targets
			if len(ts) != 1 || (ts[0].State == TargetUp) != want {
				return fmt.Errorf("targets %+v", ts)
			}
			return nil
		})
	}
	shows := func(c *Collector, state core.State, since int64, steps []string) {
		t.Helper()
		breakerShows(t, c, clock, t0, state, since, steps)
	}
	outage := func(during func()) {
		p.retarget(deadAddr)
		p.cut()
		up(c, false)
		during()
		p.retarget(fa.addr)
		up(c, true)
	}
	up(c, true)
	periods(4, false)

	// Away 20 s: the trip (5 failures at 4 s) comes with the backlog.
	outage(func() {
		periods(8, false)
		for range 5 {
			call(true)
		}
		periods(32, false) // blocked: the breaker is open
	})
	tripped := t0 + 6000
	trip := fmt.Sprintf("CLOSED>OPEN@%d", tripped-t0)
	shows(c, core.Open, tripped, []string{trip})

	// A collector that starts now learns it is open, and since when.
	late := dial(fa.addr)
	shows(late, core.Open, tripped, []string{trip})

	// Away 3 min: the probe at 66 s closes it, 2 min before the reconnect.
	outage(func() {
		periods(100, false) // to 70 s: the probe at 66 s succeeds
		periods(360, false) // to 250 s
	})
	closed := tripped + 60_000
	shows(c, core.Closed, closed, []string{trip, fmt.Sprintf("HALF_OPEN>CLOSED@%d", closed-t0)})

	// Away 20 s once more, nothing happening: nothing is doubled.
	outage(func() { periods(40, false) })
	periods(2, false)
	shows(c, core.Closed, closed, []string{trip, fmt.Sprintf("HALF_OPEN>CLOSED@%d", closed-t0)})
	// The state shown is the same before and after the backlog is read:
	// its duplicates are waited for, not assumed read.
	eventually(t, "a duplicate counted", func() error {
		if _, _, dups := c.Counters(); dups == 0 {
			return errors.New("none: the backlog's transitions were not sent again")
		}
		return nil
	})
	shows(c, core.Closed, closed, []string{trip, fmt.Sprintf("HALF_OPEN>CLOSED@%d", closed-t0)})
}

// dialOne has c dial one stream target at addr until the test ends, and
// returns c.
func dialOne(t *testing.T, c *Collector, addr string) *Collector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		dial(ctx, c, []source.Target{{Name: addr, URL: "ws://" + addr + source.DefaultStreamPath}}, source.DialOptions{Seed: 1})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// breakerShows waits until c's view of gateway's db breaker, from t0 on,
// is state since since, after exactly steps transitions ("FROM>TO@ms"
// after t0).
func breakerShows(t *testing.T, c *Collector, clock *core.VirtualClock, t0 int64, state core.State, since int64, steps []string) {
	t.Helper()
	eventually(t, "the breaker "+state.String(), func() error {
		d := c.Detail("gateway", "db", t0, clock.UnixMilli()+1)
		if len(d.Instances) != 1 {
			return fmt.Errorf("%d instances", len(d.Instances))
		}
		in := d.Instances[0]
		var got []string
		for _, tr := range in.Transitions {
			got = append(got, fmt.Sprintf("%s>%s@%d", tr.From, tr.To, tr.AtMs-t0))
		}
		if in.State != state || in.StateSince != since || !slices.Equal(got, steps) {
			return fmt.Errorf("%s since %d after %v; want %s since %d after %v", in.State, in.StateSince-t0, got, state, since-t0, steps)
		}
		return nil
	})
}

// TestRestreamCarriesBreakerStates: a collector reading another's
// re-served stream shows a breaker that opened before it connected, a
// minute or more before (past the backlog), open since its trip, with
// the transitions the backlog holds once each.
func TestRestreamCarriesBreakerStates(t *testing.T) {
	const t0 = int64(1764460800000)
	clock := core.NewVirtualClock(time.UnixMilli(t0))
	fa := startFleetAgent(t, clock, "gateway-0")
	if err := fa.a.LoadRules([]core.BreakerRule{{Resource: "db", Strategy: core.ErrorCount, Threshold: 3,
		MinRequestAmount: 1, StatIntervalMs: 1000, RetryTimeoutMs: 600_000}}, nil); err != nil {
		t.Fatal(err)
	}
	mid := New(Options{Clock: clock})
	addr, closeSrv := serveRestream(t, mid.Restream(RestreamOptions{}))
	t.Cleanup(closeSrv) // after the dial ends: cleanups run last first
	dialOne(t, mid, fa.addr)
	top := func() *Collector { return dialOne(t, New(Options{}), addr) }
	eventually(t, "the agent's hello", func() error {
		if m, _, _ := mid.Counters(); m < 2 {
			return fmt.Errorf("%d messages", m)
		}
		return nil
	})
	for range 5 {
		if e, err := fa.a.Entry("db"); err == nil {
			e.Exit(fmt.Errorf("db down"))
		}
	}
	trip := []string{"CLOSED>OPEN@0"}
	breakerShows(t, mid, clock, t0, core.Open, t0, trip)
	breakerShows(t, top(), clock, t0, core.Open, t0, trip) // from the backlog and the last transitions

	blocked := int64(2) // the calls after the trip
	for range 150 {     // 75 s of blocked calls: the trip leaves the backlog
		if _, err := fa.a.Entry("db"); err != nil {
			blocked++
		}
		clock.Advance(500 * time.Millisecond)
		fa.a.Ship()
	}
	eventually(t, "75 s of buckets", func() error {
		if tp, _ := mid.Totals("gateway-0", "db"); tp.Block != blocked {
			return fmt.Errorf("%d blocks counted, want %d", tp.Block, blocked)
		}
		return nil
	})
	late := top()
	breakerShows(t, late, clock, t0, core.Open, t0, trip)
	if _, _, dups := late.Counters(); dups != 0 {
		t.Errorf("%d duplicates: the trip came twice though the backlog no longer holds it", dups)
	}
}

// TestGapSpanOfAbsurdTimes: a peer's times far apart (up to year 9999)
// print as a duration, never a negative one.
func TestGapSpanOfAbsurdTimes(t *testing.T) {
	for ms, want := range map[int64]string{500: "500ms", 130_500: "2m10.5s", math.MaxInt64: "2562047h47m16.854s"} {
		if got := gapSpan(ms); got != want {
			t.Errorf("gapSpan(%d) = %q, want %q", ms, got, want)
		}
	}
}

// TestRestreamForgetsReplacedBreakers: once a rule change replaced an open
// breaker (it starts CLOSED, saying nothing), a collector that connects to
// the re-served stream, within the minute its backlog holds or after,
// does not take the old breaker's transitions for the new one's state.
func TestRestreamForgetsReplacedBreakers(t *testing.T) {
	const t0 = int64(1764460800000)
	clock := core.NewVirtualClock(time.UnixMilli(t0 + 1000))
	mid := New(Options{Clock: clock})
	addr, closeSrv := serveRestream(t, mid.Restream(RestreamOptions{}))
	defer closeSrv()
	rule := core.BreakerRule{Resource: "db", Strategy: core.ErrorCount, Threshold: 3, MinRequestAmount: 1,
		StatIntervalMs: 1000, RetryTimeoutMs: 600_000}
	rules := func(ts int64, r core.BreakerRule) *wire.Rules {
		return &wire.Rules{Header: wire.Header{Ts: ts, Instance: "gateway-0"}, Version: fmt.Sprint(r.Threshold),
			Breakers: []core.BreakerRule{r}}
	}
	for _, m := range []wire.Message{
		&wire.Hello{Header: wire.Header{Ts: t0, Instance: "gateway-0"}, App: "gateway", StartedAt: t0 - 1, BucketMs: 500},
		rules(t0, rule),
		&wire.State{Header: wire.Header{Ts: t0 + 100, Instance: "gateway-0"}, Resource: "db", Strategy: core.ErrorCount,
			From: core.Closed, To: core.Open, Threshold: 3, RetryTimeoutMs: 600_000},
	} {
		if !mid.Ingest("t", m) {
			t.Fatalf("%T refused", m)
		}
	}
	top := func() *Collector { return dialOne(t, New(Options{}), addr) }
	breakerShows(t, top(), clock, t0, core.Open, t0+100, []string{"CLOSED>OPEN@100"})
	rule.Threshold = 5
	mid.Ingest("t", rules(t0+200, rule))
	mid.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0 + 1000, Instance: "gateway-0"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "db", Start: t0 + 500, Metrics: core.Metrics{Pass: 1, Complete: 1}}}})
	late := top()
	eventually(t, "the rules and buckets", func() error {
		if m, _, _ := late.Counters(); m < 3 {
			return fmt.Errorf("%d messages", m)
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond) // what else the stream would bring
	if d := late.Detail("gateway", "db", t0, t0+1000); len(d.Instances) != 1 || d.Instances[0].State != core.Closed ||
		len(d.Instances[0].Transitions) != 0 {
		t.Errorf("after the rule change a new reader shows %+v; want the new breaker CLOSED, no transition", d.Instances)
	}
}
