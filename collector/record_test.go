package collector

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/record"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestRecordingStartsWhenRecorded: a service up for an hour sends a hello
// and rules stamped an hour ago; the recording places them at its own start,
// so its replay covers the seconds recorded, not the service's uptime.
func TestRecordingStartsWhenRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	w, err := record.Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc, Record: w.Writer})
	hourAgo := t0ms - 3_600_000
	c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: hourAgo, Instance: "a-1"}, App: "a", StartedAt: hourAgo, BucketMs: 500})
	c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: hourAgo, Instance: "a-1"}, Version: "v1"})
	for k := int64(0); k < 24; k++ {
		vc.Set(time.UnixMilli(t0ms + (k+1)*500))
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + (k+1)*500, Instance: "a-1"}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "r", Start: t0ms + k*500, Metrics: core.Metrics{Pass: 3}}}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, m := range readFile(t, path) {
		switch m.(type) {
		case *wire.Hello, *wire.Rules:
			if ts := m.Head().Ts; ts != t0ms {
				t.Fatalf("%s recorded at %d, want the recording's start %d", m.Kind(), ts, t0ms)
			}
		}
	}
	g, _ := os.Open(path)
	defer g.Close()
	r, err := newReplay("rec", g, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if from, to := r.Range(); from != t0ms || to != t0ms+12_000 {
		t.Fatalf("replay range %d..%d, want the 12 s recorded", from-t0ms, to-t0ms)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tm, _ := r.Collector().Totals("a-1", "r"); tm.Pass != 72 {
		t.Fatalf("replayed %d passes, want 72", tm.Pass)
	}
}

// TestDedupeAcrossBucketLengths: an instance that changes its bucket
// length keeps every distinct bucket. Dedupe counts buckets by index
// (start / bucketMs): across lengths, indexes collide (start 1000 of 500 ms
// and 2000 of 1000 ms are both 2) or jump back by half (here, so far that
// the bucket would be refused as older than dedupe can tell).
func TestDedupeAcrossBucketLengths(t *testing.T) {
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms))})
	c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 1500, Instance: "a"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "r", Start: t0ms + 1000, Metrics: core.Metrics{Pass: 1}}}})
	c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 3000, Instance: "a"}, BucketMs: 1000,
		Items: []wire.BucketItem{{Resource: "r", Start: t0ms + 2000, Metrics: core.Metrics{Pass: 2}}}})
	if tm, _ := c.Totals("a", "r"); tm.Pass != 3 {
		t.Fatalf("%d passes, want 3", tm.Pass)
	}
}
