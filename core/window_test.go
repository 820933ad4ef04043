package core

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestWindowIndexAndStart(t *testing.T) {
	w, err := NewMetricWindow(4, 2000) // 500 ms buckets
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ now, start int64 }{{0, 0}, {499, 0}, {500, 500}, {1999, 1500}, {2000, 2000}, {-1, -500}} {
		if got := w.BucketStart(tc.now); got != tc.start {
			t.Errorf("BucketStart(%d) = %d, want %d", tc.now, got, tc.start)
		}
	}
	w.Current(1200).AddPass(3)
	w.Current(1499).AddPass(1)
	w.Current(1500).AddPass(10)
	if got := SumWindow(w, 1500).Pass; got != 14 {
		t.Fatalf("sum at 1500 = %d, want 14", got)
	}
	// At 3000 the bucket [1000,1500) is 2000 old: still valid (inclusive bound);
	// at 3001 it is not.
	if got := SumWindow(w, 3000).Pass; got != 14 {
		t.Fatalf("sum at 3000 = %d, want 14 (inclusive bound)", got)
	}
	if got := SumWindow(w, 3001).Pass; got != 10 {
		t.Fatalf("sum at 3001 = %d, want 10", got)
	}
}

func TestWindowReusesStaleSlotInPlace(t *testing.T) {
	w, _ := NewMetricWindow(2, 1000)
	b1 := w.Current(100)
	b1.AddPass(5)
	b2 := w.Current(1100) // same slot, one interval later
	if b1 != b2 {
		t.Fatal("slot was not reused in place")
	}
	if got := b2.Snapshot().Pass; got != 0 {
		t.Fatalf("reused bucket kept %d passes", got)
	}
	if _, ok := w.Lookup(100); ok {
		t.Fatal("Lookup found an overwritten bucket")
	}
	if b, ok := w.Lookup(1000); !ok || b != b2 {
		t.Fatal("Lookup missed the current bucket")
	}
}

func TestWindowFutureBucketInvalid(t *testing.T) {
	w, _ := NewMetricWindow(2, 1000)
	w.Current(5000).AddPass(1)
	if got := SumWindow(w, 4000).Pass; got != 0 {
		t.Fatalf("a bucket in the future counted: %d", got)
	}
	if w.Current(4000) != nil {
		t.Fatal("writing into a slot that holds a newer bucket must be refused")
	}
}

func TestWindowValidation(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ms int64
	}{{0, 1000}, {-1, 1000}, {3, 1000}, {2, 0}} {
		if _, err := NewMetricWindow(tc.n, tc.ms); err == nil {
			t.Errorf("NewMetricWindow(%d, %d) accepted", tc.n, tc.ms)
		}
	}
}

func TestWindowConcurrentWriters(t *testing.T) {
	w, _ := NewMetricWindow(10, 1000)
	var wg sync.WaitGroup
	const writers, per = 8, 5000
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				w.Current(10_050).AddPass(1)
			}
		}()
	}
	wg.Wait()
	if got := SumWindow(w, 10_050).Pass; got != writers*per {
		t.Fatalf("lost writes: %d of %d", got, writers*per)
	}
}

func TestMetricBucketComplete(t *testing.T) {
	var b MetricBucket
	b.Reset()
	for _, rt := range []int64{3, 250, 12000, 1} {
		b.AddComplete(rt, rt > 1000, rt > 200)
	}
	m := b.Snapshot()
	want := Metrics{Complete: 4, Error: 1, Slow: 2, RtSum: 12254, RtMin: 1, RtMax: 12000}
	want.Hist[0], want.Hist[2], want.Hist[8], want.Hist[13] = 1, 1, 1, 1
	if m != want {
		t.Fatalf("snapshot\n got %+v\nwant %+v", m, want)
	}
	if q := m.Quantile(0.5); q != 5 {
		t.Errorf("p50 = %d, want 5", q)
	}
	if q := m.Quantile(0.99); q != 12000 {
		t.Errorf("p99 = %d, want 12000 (rtMax for the open slot)", q)
	}
}

func TestHistogramSlotBounds(t *testing.T) {
	for i, bound := range HistogramBounds {
		if got := HistogramSlot(bound); got != i {
			t.Errorf("slot(%d) = %d, want %d", bound, got, i)
		}
		if got := HistogramSlot(bound + 1); got != i+1 {
			t.Errorf("slot(%d) = %d, want %d", bound+1, got, i+1)
		}
	}
	if HistogramSlot(0) != 0 || HistogramSlot(-5) != 0 {
		t.Error("non-positive RT not in the first slot")
	}
}

func TestMetricsAdd(t *testing.T) {
	var sum Metrics
	sum.Add(Metrics{Pass: 1, Complete: 2, RtMin: 7, RtMax: 9, Concurrency: 3})
	sum.Add(Metrics{Pass: 2}) // no completions: its RtMin must not count
	sum.Add(Metrics{Complete: 1, RtMin: 4, RtMax: 5, Concurrency: 1})
	if sum.Pass != 3 || sum.Complete != 3 || sum.RtMin != 4 || sum.RtMax != 9 || sum.Concurrency != 3 {
		t.Fatalf("sum = %+v", sum)
	}
}

func TestMetricsSince(t *testing.T) {
	was := Metrics{Pass: 3, Block: 1, Complete: 2, Error: 1, Slow: 1, RtSum: 30, RtMin: 10, RtMax: 20, Concurrency: 4}
	was.Hist[2] = 2
	now := was
	now.Add(Metrics{Pass: 2, Complete: 1, Slow: 1, RtSum: 50, RtMin: 50, RtMax: 50, Concurrency: 9})
	now.Hist[5]++
	d := now.Since(&was)
	want := Metrics{Pass: 2, Complete: 1, Slow: 1, RtSum: 50, RtMin: 10, RtMax: 50}
	want.Hist[5] = 1
	if d != want {
		t.Fatalf("since = %+v, want %+v", d, want)
	}
	var sum Metrics
	sum.Add(was)
	sum.Add(d)
	if sum.Pass != now.Pass || sum.Complete != now.Complete || sum.RtSum != now.RtSum || sum.Hist != now.Hist {
		t.Fatalf("was + since = %+v, want the counts of %+v", sum, now)
	}
}

func TestWindowNegativeTimes(t *testing.T) {
	w, _ := NewMetricWindow(4, 2000)
	for _, now := range []int64{-1 << 40, -2001, -500, -499, -1} {
		w.Current(now).AddPass(1) // must not panic
		if got := SumWindow(w, now).Pass; got < 1 {
			t.Fatalf("sum at %d = %d", now, got)
		}
	}
}

// Slot counts the buckets each slot has held: one for each bucket period
// written, taken by exactly one of the writers racing into it, and a
// reader polling meanwhile sees the count and the start move together.
func TestWindowSlotCountsBuckets(t *testing.T) {
	w, _ := NewMetricWindow(4, 2000) // 500 ms buckets
	if _, held, ok := w.Slot(1); ok || held != 0 {
		t.Fatalf("a new slot: held %d, ok %v", held, ok)
	}
	const writers, periods = 4, 200
	var wg sync.WaitGroup
	done := make(chan struct{})
	read := make(chan error, 1)
	go func() { // the reader: a slot's start and count never go back
		var last [4]struct {
			start int64
			held  uint64
		}
		for i := range last {
			last[i].start = -1
		}
		for {
			for i := range last {
				start, held, ok := w.Slot(i)
				if !ok {
					continue
				}
				if start < last[i].start || held < last[i].held || (start > last[i].start) != (held > last[i].held) {
					read <- fmt.Errorf("slot %d went from %d (held %d) to %d (held %d)", i, last[i].start, last[i].held, start, held)
					return
				}
				last[i].start, last[i].held = start, held
			}
			select {
			case <-done:
				read <- nil
				return
			default:
			}
		}
	}()
	var ready [periods]atomic.Int32 // the writers meet at each period, to race into it
	for g := range writers {
		wg.Go(func() {
			for p := range int64(periods) {
				ready[p].Add(1)
				for ready[p].Load() < writers {
					runtime.Gosched()
				}
				if b := w.Current(p*500 + int64(g)); b != nil {
					b.AddPass(1)
				}
			}
		})
	}
	wg.Wait()
	close(done)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	var total uint64
	for i := range 4 {
		start, held, ok := w.Slot(i)
		if !ok || start != int64(periods-4+i)*500 {
			t.Errorf("slot %d holds %d (ok %v), want the bucket at %d", i, start, ok, (periods-4+i)*500)
		}
		total += held
	}
	// Writers behind the others drop their sample (the slot holds a newer
	// bucket) and take none: every period is taken once, whoever comes first.
	if total != periods {
		t.Errorf("the slots held %d buckets in all; %d periods were written", total, periods)
	}
	if i := w.Index(1234); i != 2 {
		t.Errorf("Index(1234) = %d, want 2", i)
	}
}

// A write reaching a sealed bucket is a late write; one in a bucket not
// sealed yet is not, and a seal never moves back.
func TestWindowSealCountsLateWrites(t *testing.T) {
	w, err := NewMetricWindow(20, 10000)
	if err != nil {
		t.Fatal(err)
	}
	w.Wrote(1000) // nothing sealed yet
	if n := w.LateWrites(); n != 0 {
		t.Fatalf("%d late writes before any seal", n)
	}
	w.Seal(1500)
	for _, at := range []int64{1000, 1499, 1500, 1999} {
		w.Current(at).AddPass(1)
		w.Wrote(at)
	}
	if n := w.LateWrites(); n != 2 {
		t.Fatalf("%d late writes, want 2 (at 1000 and 1499)", n)
	}
	w.Seal(1000) // a reader whose clock went back
	w.Wrote(1200)
	if n := w.LateWrites(); n != 3 {
		t.Fatalf("the seal moved back: %d late writes, want 3", n)
	}
}

// Every write a Guard makes to a resource's statistic is told to it
// (Window.Wrote), on every path: a pass, a completion, and a block by a
// flow rule, a breaker and a hot-parameter rule. A shipper reads its
// sealed buckets again only on a late write, so a path that wrote without
// telling would lose the count of a caller paused between reading the
// clock and adding.
func TestGuardTellsEveryWrite(t *testing.T) {
	g, _, _ := newTestGuard(t)
	if err := g.LoadFlowRules([]FlowRule{{Resource: "flow", Threshold: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := g.LoadBreakerRules([]BreakerRule{{Resource: "db", Strategy: ErrorCount, RetryTimeoutMs: 60000,
		StatIntervalMs: 1000, Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := g.LoadHotParamRules([]HotParamRule{qpsRule(1, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	// Every bucket of every resource is sealed: each write is late.
	for _, name := range []string{"a", "flow", "db", "api"} {
		g.resource(name).Stat().Seal(math.MaxInt64)
	}
	steps := []struct {
		name, resource string
		writes         uint64
		do             func() error
	}{
		{"a pass and its completion", "a", 2, func() error {
			e, err := g.Entry("a")
			if err == nil {
				e.Exit(nil)
			}
			return err
		}},
		{"a flow rule's block", "flow", 1, func() error { _, err := g.Entry("flow"); return blockedBy(err, ErrFlow) }},
		{"a pass and a failed completion", "db", 2, func() error {
			e, err := g.Entry("db")
			if err == nil {
				e.Exit(errors.New("timeout")) // trips the breaker
			}
			return err
		}},
		{"a breaker's block", "db", 1, func() error { _, err := g.Entry("db"); return blockedBy(err, ErrOpen) }},
		{"a pass with a parameter", "api", 1, func() error { _, err := g.EntryWithParam("api", "alice"); return err }},
		{"a hot-parameter rule's block", "api", 1, func() error {
			_, err := g.EntryWithParam("api", "alice")
			return blockedBy(err, ErrHotParam)
		}},
	}
	for _, s := range steps {
		w := g.resource(s.resource).Stat()
		before := w.LateWrites()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := w.LateWrites() - before; got != s.writes {
			t.Errorf("%s: %d writes told, want %d", s.name, got, s.writes)
		}
	}
}

func blockedBy(err, want error) error {
	if !errors.Is(err, want) {
		return fmt.Errorf("got %v, want %w", err, want)
	}
	return nil
}
