package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// staticSource serves snapshots and details the test sets.
type staticSource struct {
	mu      sync.Mutex
	snap    *collector.Snapshot
	details map[string]*collector.Detail
	replay  *fakeReplay
	// counts of calls.
	snapshots, detailCalls int
}

func newStaticSource(s *collector.Snapshot) *staticSource {
	return &staticSource{snap: s, details: map[string]*collector.Detail{}}
}

func (s *staticSource) Snapshot() *collector.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snapshots++
	return s.snap
}

func (s *staticSource) Detail(app, res string, from, to int64) *collector.Detail {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detailCalls++
	d := s.details[app+"\x00"+res]
	if d == nil {
		return s.rowDetail(app, res, from, to)
	}
	c := *d
	c.From, c.To = from, to
	return &c
}

// rowDetail is a Detail made of a row's fixture trend (fixtureTrend: pass/s
// for the 60 s before the snapshot's time), nil without such a row.
func (s *staticSource) rowDetail(app, res string, from, to int64) *collector.Detail {
	for i := range s.snap.Rows {
		r := &s.snap.Rows[i]
		if r.App != app || r.Resource != res {
			continue
		}
		d := &collector.Detail{App: app, Resource: res, From: from, To: to, StepMs: 1000}
		tr := fixtureTrend(r.Resource)
		for at := from - from%1000; at < to; at += 1000 {
			pass, slow := 0.0, math.NaN()
			if k := len(tr) - int((s.snap.At-at)/1000); k >= 0 && k < len(tr) {
				pass, slow = tr[k], 0
			}
			d.PassQPS, d.BlockQPS = append(d.PassQPS, pass), append(d.BlockQPS, 0)
			d.SlowRatio, d.ErrorRatio, d.P99Ms = append(d.SlowRatio, slow), append(d.ErrorRatio, slow), append(d.P99Ms, slow)
		}
		return d
	}
	return nil
}

// control is the fake replay as the dashboard's options take it: nil when
// there is none.
func (s *staticSource) control() ReplayControl {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replay == nil {
		return nil
	}
	return s.replay
}

func (s *staticSource) set(snap *collector.Snapshot) {
	s.mu.Lock()
	s.snap = snap
	s.mu.Unlock()
}

func (s *staticSource) counts() (snaps, details int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshots, s.detailCalls
}

// fakeReplay records the controls used.
type fakeReplay struct {
	mu    sync.Mutex
	calls []string
}

func (r *fakeReplay) record(s string) { r.mu.Lock(); r.calls = append(r.calls, s); r.mu.Unlock() }
func (r *fakeReplay) Pause()          { r.record("pause") }
func (r *fakeReplay) Resume()         { r.record("resume") }
func (r *fakeReplay) SetSpeed(x float64) {
	r.record("speed " + fmtSpeed(x))
}
func (r *fakeReplay) SeekBy(d int64) { r.record("seek " + strconv.FormatInt(d, 10)) }
func (r *fakeReplay) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.calls, ",")
}

// t0 is the end of the test data's time range.
var t0 = time.Date(2026, 11, 30, 12, 5, 0, 0, time.UTC).UnixMilli()

// fixtureTrend is the pass/s of a fixture's resource over the 60 s before
// its snapshot's time (testSnapshot's and bigSnapshot's rows), what the
// fixtures' Details draw: nil for another resource.
func fixtureTrend(resource string) []float64 {
	switch resource {
	case "GET:/member/info":
		return trend(60, func(i int) float64 { return 150 + float64(i%10)*8 })
	case "POST:/order/create":
		return trend(60, func(i int) float64 { return 90 + 10*math.Sin(float64(i)/5) })
	case "订单查询/按用户":
		return trend(60, func(i int) float64 { return float64(i % 13) })
	case "POST:/pay/charge/with/a/rather/long/path/that/does/not/fit/anywhere":
		return trend(60, func(i int) float64 { return 1500 + float64(i) })
	case "GET:/pay/status":
		return trend(60, func(int) float64 { return 40 })
	}
	var i int
	if _, err := fmt.Sscanf(resource, "GET:/api/v1/service/%04d/items/{id}", &i); err == nil {
		return bigTrend(i)
	}
	if _, err := fmt.Sscanf(resource, "订单查询/按用户/%d", &i); err == nil {
		return bigTrend(i)
	}
	return nil
}

func trend(n int, f func(i int) float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

// testSnapshot is a small fleet: two apps, a flapping breaker, a resource
// named in Chinese, a long name, and findings of each severity.
func testSnapshot() *collector.Snapshot {
	rows := []collector.ResourceRow{
		{App: "order", Resource: "GET:/member/info", Instances: 4, PassQPS: 182.5, BlockQPS: 61.2,
			Completed: 1820, SlowRatio: 0.42, ErrorRatio: 0.01, AvgRtMs: 140, P50Ms: 90, P99Ms: 812, HasP99: true,
			Breakers: collector.StateCounts{Closed: 1, HalfOpen: 1, Open: 2}, HasBreaker: true,
			LastTransition: t0 - 4000, Worst: triage.Critical, HasFinding: true},
		{App: "order", Resource: "POST:/order/create", Instances: 4, PassQPS: 96.4, Completed: 964, SlowRatio: 0.02,
			ErrorRatio: 0, P50Ms: 20, P99Ms: 75, HasP99: true, Breakers: collector.StateCounts{Closed: 4}, HasBreaker: true,
			Worst: triage.Warning, HasFinding: true},
		{App: "order", Resource: "订单查询/按用户", Instances: 4, PassQPS: 12.25, Completed: 122, SlowRatio: 0, ErrorRatio: 0.05,
			P50Ms: 8, P99Ms: 31, HasP99: true, Breakers: collector.StateCounts{Closed: 4}, HasBreaker: true},
		{App: "payment", Resource: "POST:/pay/charge/with/a/rather/long/path/that/does/not/fit/anywhere", Instances: 2,
			PassQPS: 1520, BlockQPS: 0, Completed: 15200, SlowRatio: 0.003, ErrorRatio: 0.002, P50Ms: 45, P99Ms: 230, HasP99: true,
			Breakers: collector.StateCounts{Closed: 2}, HasBreaker: true, Worst: triage.Info, HasFinding: true},
		{App: "payment", Resource: "GET:/pay/status", Instances: 2, PassQPS: 40, Completed: 400, P50Ms: 3, P99Ms: 9, HasP99: true,
			HasBreaker: false},
	}
	findings := []triage.Finding{
		{Kind: triage.KindSawtooth, Severity: triage.Critical, App: "order", Resource: "GET:/member/info",
			Instances: []string{"order-1", "order-2"}, From: t0 - 170_000, To: t0 - 10_000,
			Facts:   &triage.SawtoothFacts{Count: 6, PeriodMs: 10040},
			Summary: "6 failed half-open probes in a row, every 10.0 s",
			Advice:  "the downstream stayed down for >= 120 s: raise retryTimeoutMs from 10000 to 30000 and give each instance its own value (30000-40000 ms; Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds)"},
		{Kind: triage.KindRuleDrift, Severity: triage.Warning, App: "order", Resource: "POST:/order/create",
			Instances: []string{"order-1", "order-2", "order-3", "order-4"}, From: t0 - 250_000, To: t0,
			Facts: &triage.RuleDriftFacts{Groups: []triage.RuleGroup{
				{Version: "v12", Instances: []string{"order-1", "order-2", "order-4"}},
				{Version: "v11", Instances: []string{"order-3"}},
			}},
			Summary: "1 of 4 instances runs rules version v11 instead of v12",
			Advice:  "push the rules again to the instances still on the old version"},
		{Kind: triage.KindRuleAdvice, Severity: triage.Info, App: "payment",
			Resource:  "POST:/pay/charge/with/a/rather/long/path/that/does/not/fit/anywhere",
			Instances: []string{"payment-1", "payment-2"}, From: t0 - 300_000, To: t0,
			Facts:   &triage.RuleAdviceFacts{QPS: 760, WindowRequests: 760, P99Ms: 230, RtOverP99: 0.87},
			Summary: "maxAllowedRtMs 200 is under the observed p99 of 230 ms",
			Advice:  "raise maxAllowedRtMs to at least 460 (2x p99)"},
	}
	return &collector.Snapshot{
		At: t0, Seq: 42, Mode: collector.ModeLive, Source: "4 targets",
		Targets: []*collector.TargetStatus{
			{Name: "10.0.0.1:8719", State: collector.TargetUp, Since: t0 - 600_000, Instance: "order-1",
				Messages: 24_001, Bytes: 9_800_000, LastMessageAt: t0 - 300},
			{Name: "10.0.0.2:8719", State: collector.TargetUp, Since: t0 - 95_000, Instance: "order-2",
				Messages: 1_900, Bytes: 770_000, Reconnects: 1, LastMessageAt: t0 - 1_200},
			{Name: "sentinel://10.0.0.3:8719?app=payment", State: collector.TargetUp, Since: t0 - 600_000,
				Instance: "payment-1", Note: collector.TargetRemark{StatesInferred: true}, Messages: 600, Bytes: 120_000,
				LastMessageAt: t0 - 75_000},
			{Name: "10.0.0.4:8719", State: collector.TargetDown, Since: t0 - 12_000, DownSince: t0 - 103_000, RetryAt: t0 + 4_000, Reconnects: 5,
				Problem: feed.Problem{Kind: feed.ProblemRefused, Where: "10.0.0.4:8719"}},
		},
		Apps: 2, Instances: 6, Resources: 5, Messages: 48213, Rows: rows, Findings: findings,
	}
}

func replaySnapshot(paused bool) *collector.Snapshot {
	s := testSnapshot()
	s.Mode = collector.ModeReplay
	s.Source = "fixtures/sawtooth.ndjson"
	s.Targets = nil
	s.Replay = collector.ReplayStatus{Active: true, Paused: paused, Speed: 4, From: t0 - 300_000, To: t0 + 60_000, Pos: t0}
	return s
}

// testDetail is GET:/member/info over five minutes: two instances
// sawtoothing, one recovered, one with drifted rules.
func testDetail() *collector.Detail {
	const n = 300
	from := t0 - n*1000
	nan := math.NaN()
	d := &collector.Detail{
		App: "order", Resource: "GET:/member/info", From: from, To: t0, StepMs: 1000,
		PassQPS:    trend(n, func(i int) float64 { return 180 + 20*math.Sin(float64(i)/9) - float64(i/60)*10 }),
		BlockQPS:   trend(n, func(i int) float64 { return float64(max(0, i-130)%10) * 6 }),
		SlowRatio:  trend(n, func(i int) float64 { return 0.1 + 0.5*float64(i%37)/37 }),
		ErrorRatio: trend(n, func(int) float64 { return 0.01 }),
		P99Ms: trend(n, func(i int) float64 {
			if i < 5 {
				return nan
			}
			return 150 + float64(i%40)*20
		}),
		HasBreaker: true, Strategy: core.SlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 200,
	}
	rule := core.BreakerRule{Resource: d.Resource, Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000,
		MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, MaxAllowedRtMs: 200, Threshold: 0.5}
	flow := core.FlowRule{Resource: d.Resource, Threshold: 200}
	saw := func(start int64) []collector.Transition {
		tr := []collector.Transition{{AtMs: start, From: core.Closed, To: core.Open, RuleID: "slow",
			Snapshot: &core.WindowSnapshot{Total: 5, Bad: 3, Value: 0.6}}}
		at := start
		for i := 0; i < 6; i++ {
			at += 10_000
			tr = append(tr, collector.Transition{AtMs: at, From: core.Open, To: core.HalfOpen, RuleID: "slow"})
			tr = append(tr, collector.Transition{AtMs: at + 40, From: core.HalfOpen, To: core.Open, RuleID: "slow",
				Probe: &core.Probe{RtMs: 812}})
			at += 40
		}
		return tr
	}
	drifted := rule
	drifted.RetryTimeoutMs = 5000
	d.Instances = []collector.InstanceDetail{
		{Instance: "order-1", State: core.Open, StateSince: t0 - 4000, HasBreaker: true, Start: core.Closed,
			Transitions: saw(t0 - 170_000), Breakers: []core.BreakerRule{rule}, Flows: []core.FlowRule{flow},
			RulesVersion: "v12", PassQPS: 45, BlockQPS: 30, SlowRatio: 0.5},
		{Instance: "order-2", State: core.HalfOpen, StateSince: t0 - 100, HasBreaker: true, Start: core.Closed,
			Transitions: saw(t0 - 150_000), Breakers: []core.BreakerRule{rule}, Flows: []core.FlowRule{flow},
			RulesVersion: "v12", PassQPS: 45, BlockQPS: 31, SlowRatio: 0.5},
		{Instance: "order-3", State: core.Closed, StateSince: t0 - 60_000, HasBreaker: true, Start: core.Closed,
			Transitions: []collector.Transition{
				{AtMs: t0 - 90_000, From: core.Closed, To: core.Open, Snapshot: &core.WindowSnapshot{Total: 40, Bad: 30, Value: 0.75}},
				{AtMs: t0 - 80_000, From: core.Open, To: core.HalfOpen},
				{AtMs: t0 - 79_990, From: core.HalfOpen, To: core.Closed, Probe: &core.Probe{RtMs: 35}},
			},
			Breakers: []core.BreakerRule{drifted}, RulesVersion: "v11", Drift: true, PassQPS: 46},
		{Instance: "order-4", State: core.Open, StateSince: t0 - 8000, HasBreaker: true, Start: core.Open,
			Breakers: []core.BreakerRule{rule}, Flows: []core.FlowRule{flow}, RulesVersion: "v12", PassQPS: 46},
	}
	for i := range d.Instances {
		d.Instances[i].KnownFrom = from - 3_600_000 // seen long before the range
	}
	d.Findings = []triage.Finding{testSnapshot().Findings[0]}
	d.Findings[0].Timelines = []triage.Timeline{
		{Instance: "order-1", Start: core.Closed, Steps: []triage.Step{{AtMs: t0 - 170_000, To: core.Open},
			{AtMs: t0 - 160_000, To: core.HalfOpen}, {AtMs: t0 - 159_960, To: core.Open},
			{AtMs: t0 - 150_000, To: core.HalfOpen}, {AtMs: t0 - 149_960, To: core.Open}}},
	}
	return d
}

// newTestModel is a model over src in plain text, UTC, with a tick that
// never fires by itself (tests send ticks).
func newTestModel(src Source, w, h int) *Model {
	opts := Options{Profile: ColorNone, Location: time.UTC}
	if s, ok := src.(interface{ control() ReplayControl }); ok {
		opts.Replay = s.control()
	}
	m := newModel(src, opts)
	m.noTick = true
	send(m, tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// send feeds a message and runs the commands it returns (a test model has
// no timer, so they all answer at once).
func send(m *Model, msg tea.Msg) {
	_, cmd := m.Update(msg)
	runCmd(m, cmd)
}

func runCmd(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	select {
	case msg := <-ch:
		switch msg := msg.(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				runCmd(m, c)
			}
		case nil:
		default:
			send(m, msg)
		}
	case <-time.After(5 * time.Second):
		panic("a command did not answer")
	}
}

// keys turns a string into key messages: a rune each, or a named key in
// angle brackets ("<enter>").
func keys(s string) []tea.Msg {
	var out []tea.Msg
	for len(s) > 0 {
		if s[0] == '<' {
			if end := strings.IndexByte(s, '>'); end > 1 {
				out = append(out, namedKey(s[1:end]))
				s = s[end+1:]
				continue
			}
		}
		r := []rune(s)[0]
		if r == ' ' {
			out = append(out, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
		} else {
			out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
		}
		s = s[len(string(r)):]
	}
	return out
}

func namedKey(n string) tea.KeyMsg {
	m := map[string]tea.KeyType{
		"enter": tea.KeyEnter, "esc": tea.KeyEsc, "tab": tea.KeyTab, "up": tea.KeyUp, "down": tea.KeyDown,
		"f2": tea.KeyF2, "pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp, "backspace": tea.KeyBackspace, "ctrl+c": tea.KeyCtrlC,
		"f1": tea.KeyF1, "f10": tea.KeyF10, "shift+tab": tea.KeyShiftTab,
	}
	return tea.KeyMsg{Type: m[n]}
}

func press(m *Model, s string) {
	for _, k := range keys(s) {
		send(m, k)
	}
}

// screenText is the frame as the user reads it.
func screenText(m *Model) string { return ansi.Strip(m.View()) }

// checkFrame asserts a frame has exactly h lines of at most w cells.
func checkFrame(t *testing.T, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Errorf("frame has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i+1, lw, w, ansi.Strip(l))
		}
	}
}

// sizeMsg is a terminal of w x h cells.
func sizeMsg(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }
