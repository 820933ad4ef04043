package source

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

const t0ms = int64(1764460800000)

// sawtoothFixture writes a small recording: one instance whose breaker trips
// and then fails four probes in a row, 10 s apart, with traffic around it.
func sawtoothFixture(t *testing.T) []byte {
	t.Helper()
	return sawtoothFixtureBytes()
}

func sawtoothFixtureBytes() []byte {
	var buf bytes.Buffer
	w := wire.NewWriter(&buf)
	write := func(m wire.Message) {
		if err := w.Write(m); err != nil {
			panic(err)
		}
	}
	rule := core.BreakerRule{Resource: "GET:/member/info", Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000,
		MinRequestAmount: 5, StatIntervalMs: 1000, MaxAllowedRtMs: 200, Threshold: 0.5}
	write(&wire.Meta{Header: wire.Header{Ts: t0ms}, Title: "sawtooth"})
	write(&wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "order-1"}, App: "order", StartedAt: t0ms - 1000, BucketMs: 500})
	write(&wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "order-1"}, Version: "v1", Breakers: []core.BreakerRule{rule}})
	state := func(ts int64, from, to core.State) {
		m := &wire.State{Header: wire.Header{Ts: ts, Instance: "order-1"}, Resource: rule.Resource, From: from, To: to,
			Threshold: 0.5, RetryTimeoutMs: 10000}
		if from == core.Closed {
			m.Snapshot = &wire.Snapshot{Total: 10, Slow: 8, Value: 0.8}
		}
		if from == core.HalfOpen {
			m.Probe = &wire.Probe{RtMs: 900}
		}
		write(m)
	}
	for i := int64(0); i < 120; i++ { // 60 s of buckets
		start := t0ms + i*500
		hist := [core.HistogramSlots]int64{}
		hist[5] = 10
		write(&wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: "order-1"}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: rule.Resource, Start: start, Metrics: core.Metrics{Pass: 10, Complete: 10, RtSum: 300, RtMin: 20, RtMax: 40, Hist: hist}, HasHist: true}}})
		switch i {
		case 2:
			state(start+500, core.Closed, core.Open)
		case 22, 42, 62, 82:
			state(start+500, core.Open, core.HalfOpen)
			state(start+501, core.HalfOpen, core.Open)
		}
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func runReplay(t *testing.T, r *replayed) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestReplayFindsSawtooth(t *testing.T) {
	r, err := newReplayed("saw.ndjson", bytes.NewReader(sawtoothFixture(t)), 0, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runReplay(t, r)
	c := r.Collector()
	snap := c.Publish()
	if snap.Mode != collector.ModeReplay || !snap.Replay.Done || snap.Messages == 0 || snap.Rejected != 0 {
		t.Fatalf("snapshot %+v", snap)
	}
	if len(snap.Rows) != 1 {
		t.Fatalf("rows %+v", snap.Rows)
	}
	row := snap.Rows[0]
	if row.App != "order" || row.Instances != 1 || row.PassQPS != 20 || row.Breakers.Open != 1 || !row.HasBreaker {
		t.Fatalf("row %+v", row)
	}
	if row.P99Ms != 40 || row.AvgRtMs != 30 {
		t.Fatalf("latency p99=%d avg=%v", row.P99Ms, row.AvgRtMs)
	}
	var kinds []string
	for _, f := range snap.Findings {
		kinds = append(kinds, string(f.Kind))
	}
	if !strings.Contains(strings.Join(kinds, ","), string(triage.KindSawtooth)) {
		t.Fatalf("findings %v", kinds)
	}
	d := c.Detail("order", "GET:/member/info", t0ms, t0ms+60000)
	if len(d.Instances) != 1 || len(d.Instances[0].Transitions) != 9 || d.Instances[0].State != core.Open || !d.HasBreaker || d.Threshold != 0.5 {
		t.Fatalf("detail %+v", d)
	}
	if d.StepMs != 1000 || len(d.PassQPS) != 60 || d.PassQPS[10] != 20 {
		t.Fatalf("detail series step %d len %d", d.StepMs, len(d.PassQPS))
	}
}

func TestReplayBadLinesCountedRestKeepsWorking(t *testing.T) {
	good := sawtoothFixture(t)
	lines := bytes.SplitAfter(good, []byte("\n"))
	var parts []io.Reader
	for i, l := range lines {
		parts = append(parts, bytes.NewReader(l))
		switch i {
		case 5:
			parts = append(parts, strings.NewReader("this is not json\n"))
		case 6:
			parts = append(parts, strings.NewReader(`{"v":2,"kind":"buckets","ts":1,"instance":"x","bucketMs":500,"items":[]}`+"\n"))
		case 7:
			// A 50 MB line, streamed: the reader must skip it without holding it.
			parts = append(parts, strings.NewReader(`{"v":1,"kind":"hello","ts":`), io.LimitReader(ones{}, 50<<20), strings.NewReader("}\n"))
		case 8:
			parts = append(parts, strings.NewReader(`{"v":1,"kind":"telemetry","ts":1,"instance":"x"}`+"\n"))
		}
	}
	parts = append(parts, strings.NewReader(`{"v":1,"kind":"bye","ts":17644608`)) // truncated last line
	r, err := newReplayed("bad.ndjson", io.MultiReader(parts...), 0, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runReplay(t, r)
	snap := r.Collector().Publish()
	if snap.Rejected != 5 {
		t.Fatalf("rejected %d: %+v", snap.Rejected, snap.Rejects)
	}
	reasons := map[string]collector.RejectCount{}
	for _, rc := range snap.Rejects {
		reasons[rc.Reason] = rc
	}
	for reason, place := range map[string]string{"malformed": "bad.ndjson:", "wrong_version": "bad.ndjson:9",
		"too_large": "bad.ndjson:11", "unknown_kind": "bad.ndjson:13"} {
		if rc, ok := reasons[reason]; !ok || !strings.HasPrefix(rc.Last, place) {
			t.Errorf("%s: %+v", reason, rc)
		}
	}
	if len(snap.Rows) != 1 || snap.Rows[0].PassQPS != 20 {
		t.Fatalf("the good lines did not all count: %+v", snap.Rows)
	}
}

// ones is an endless stream of '1'.
type ones struct{}

func (ones) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '1'
	}
	return len(p), nil
}

func TestReplaySeekAndPause(t *testing.T) {
	r, err := newReplayed("saw.ndjson", bytes.NewReader(sawtoothFixture(t)), 100, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	r.SeekBy(30000)
	eventually(t, "seek forward", func() error {
		if pos := r.Collector().Publish().Replay.Pos; pos < t0ms+30000 {
			return fmt.Errorf("at %d", pos-t0ms)
		}
		return nil
	})
	r.Pause()
	time.Sleep(50 * time.Millisecond)
	at := r.Collector().Publish().Replay.Pos
	time.Sleep(100 * time.Millisecond)
	if r.Collector().Publish().Replay.Pos != at || !r.Collector().Publish().Replay.Paused {
		t.Fatal("paused replay moved")
	}
	before, _, _ := r.Collector().Counters()
	r.SeekBy(-25000)
	eventually(t, "seek back", func() error {
		if pos := r.Collector().Publish().Replay.Pos; pos > t0ms+10000 {
			return fmt.Errorf("at %d", pos-t0ms)
		}
		return nil
	})
	after, _, _ := r.Collector().Counters()
	if after >= before {
		t.Fatalf("seeking back kept what came after: %d then %d messages", before, after)
	}
	r.Resume()
	r.SetSpeed(0)
	eventually(t, "finish", func() error {
		if !r.Done() {
			return fmt.Errorf("not done")
		}
		return nil
	})
	if m, _, _ := r.Collector().Counters(); m != int64(r.Messages()) {
		t.Fatalf("%d messages after seeking around, want %d", m, r.Messages())
	}
}

// TestReplayPublishAndDetailWhileFeeding reads the collector the way the
// dashboard, /metrics and /report do (Publish, Detail, collector.Snapshot) in a loop
// while a replay feeds it, seeks and pauses. A lock held by the replay while
// it calls the collector, and one held by the collector while it asks the
// replay, once made this hang in its first round.
func TestReplayPublishAndDetailWhileFeeding(t *testing.T) {
	r, err := newReplayed("saw.ndjson", bytes.NewReader(sawtoothFixture(t)), 1000, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	c := r.Collector()
	from, to := r.Range()
	readers := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { readers <- struct{}{} }()
			for ctx.Err() == nil {
				s := c.Publish()
				for _, row := range s.Rows {
					c.Detail(row.App, row.Resource, from, to)
				}
				_ = c.Snapshot()
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := range 200 {
			switch i % 4 {
			case 0:
				r.SeekBy(20_000)
			case 1:
				r.Pause()
			case 2:
				r.Resume()
			case 3:
				r.SeekBy(-15_000)
			}
		}
		r.SetSpeed(0)
		for !r.Done() {
			time.Sleep(time.Millisecond)
		}
	}()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("replay and readers made no progress in 30 s: a lock cycle")
	}
	cancel()
	<-done
	for range 4 {
		<-readers
	}
	if s := c.Publish(); !s.Replay.Done || s.Replay.Pos < from {
		t.Fatalf("replay status after the end: %+v", s.Replay)
	}
}

// TestReplaySeekBackAfterTheEnd: once everything was fed, paused or not,
// seeking back still works (the dashboard's [ after the end); unpaused, it
// plays on from there.
func TestReplaySeekBackAfterTheEnd(t *testing.T) {
	for _, paused := range []bool{false, true} {
		r, err := newReplayed("saw.ndjson", bytes.NewReader(sawtoothFixture(t)), 0, collector.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.Stay() // as the dashboard does
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		eventually(t, "the end", func() error {
			if !r.Done() {
				return fmt.Errorf("not done")
			}
			return nil
		})
		if paused {
			r.Pause()
		}
		r.SetSpeed(1)
		_, to := r.Range()
		r.SeekBy(-10_000)
		eventually(t, "seek back after the end", func() error {
			if pos := r.Collector().Publish().Replay.Pos; pos < to-10_000 || pos > to-8_000 || (paused && pos != to-10_000) {
				return fmt.Errorf("paused=%v: at %d, want %d", paused, pos-to, -10_000)
			}
			return nil
		})
		cancel()
		<-done
	}
}
