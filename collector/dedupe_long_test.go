package collector_test

import (
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestDedupeLongSeries feeds one instance x resource for 30 minutes of
// 500 ms buckets on a virtual clock, far past the 512 s over which the
// collector tells a re-sent bucket from a new one, the way a flaky
// connection delivers them: every buckets message twice, and after every
// message a reconnect's backlog, the messages of up to the last 60 s again.
// Every bucket counts once, every copy is a duplicate, and a copy from
// before the window (a very late backlog) counts nothing.
func TestDedupeLongSeries(t *testing.T) {
	const (
		inst     = "order-1"
		res      = "GET:http://member-service/api/user/info"
		bucketMs = 500
		buckets  = 30 * 60 * 1000 / bucketMs // 3,600: three and a half windows
		backlog  = 60 * 1000 / bucketMs      // a reconnect re-sends up to 60 s
	)
	t0 := time.UnixMilli(1764460800000)
	clock := core.NewVirtualClock(t0)
	c := collector.New(collector.Options{Clock: clock})
	var messages, dups int64
	ingest := func(m wire.Message) {
		t.Helper()
		if !c.Ingest(inst, m) {
			t.Fatalf("%s turned away", m.Kind())
		}
		messages++
	}
	ingest(&wire.Hello{Header: wire.Header{Ts: t0.UnixMilli(), Instance: inst}, App: "order",
		StartedAt: t0.UnixMilli() - 60_000, BucketMs: bucketMs})

	// Bucket k's counts vary with k, so a bucket counted twice or lost, or
	// another's counted in its place, shows in every sum.
	item := func(k int64) wire.BucketItem {
		pass := 1 + k%13
		return wire.BucketItem{Resource: res, Start: t0.UnixMilli() + k*bucketMs,
			Metrics: core.Metrics{Pass: pass, Block: k % 5, Complete: pass, Error: k % 3 % (pass + 1), Slow: k % 2, RtSum: pass * 20, RtMin: 20, RtMax: 20}}
	}
	var sent []*wire.Buckets
	var want [5]int64
	for k := int64(0); k < buckets; k++ {
		clock.Advance(bucketMs * time.Millisecond)
		it := item(k)
		m := &wire.Buckets{Header: wire.Header{Ts: clock.UnixMilli(), Instance: inst}, BucketMs: bucketMs,
			Items: []wire.BucketItem{it}}
		sent = append(sent, m)
		for i, v := range []int64{it.Pass, it.Block, it.Complete, it.Error, it.Slow} {
			want[i] += v
		}
		ingest(m)
		ingest(m)
		dups++
		// The backlog's depth sweeps 0 to 60 s in steps that do not divide
		// the window, so every distance behind the newest bucket is re-sent.
		depth := k * 37 % (backlog + 1)
		for _, old := range sent[max(0, int64(len(sent))-1-depth) : len(sent)-1] {
			ingest(old)
			dups++
		}
		if k%100 == 99 || k == buckets-1 {
			checkTotals(t, c, inst, res, k, want, messages, dups)
		}
	}

	// A backlog from before the window: refused, not counted again.
	for _, old := range sent[:10] {
		ingest(old)
	}
	checkTotals(t, c, inst, res, buckets, want, messages, dups)
}

func checkTotals(t *testing.T, c *collector.Collector, inst, res string, k int64, want [5]int64, messages, dups int64) {
	t.Helper()
	var got [5]int64
	var ok bool
	var tm core.Metrics
	tm, ok = c.Totals(inst, res)
	got = [5]int64{tm.Pass, tm.Block, tm.Complete, tm.Error, tm.Slow}
	if !ok || got != want {
		t.Fatalf("after bucket %d (%.0f s): totals (pass, block, complete, error, slow) %v, want %v", k, float64(k+1)/2, got, want)
	}
	gotMessages, rejected, gotDups := c.Counters()
	if gotMessages != messages || rejected != 0 || gotDups != dups {
		t.Fatalf("after bucket %d (%.0f s): %d messages, %d rejected, %d duplicates; want %d, 0, %d",
			k, float64(k+1)/2, gotMessages, rejected, gotDups, messages, dups)
	}
}
