package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/fifo"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// TestReplayStreamsALargeRecording: a 48 MiB recording on disk is
// replayed holding one message at a time: the heap grows by a few MiB
// when the replay is opened (a replay that loaded it grew by more than
// the file), and stays so to the end, every message fed.
func TestReplayStreamsALargeRecording(t *testing.T) {
	if racetest.Enabled {
		t.Skip("a claim of memory, which the race detector bloats: .ci/run runs it without -race")
	}
	path := filepath.Join(t.TempDir(), "large.ndjson")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := wire.NewWriter(f)
	write := func(m wire.Message) {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	write(&wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "order-1"}, App: "order", StartedAt: t0ms, BucketMs: 500})
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("GET:/api/%0100d", i)
	}
	messages := 1
	for st, _ := f.Stat(); st.Size() < 48<<20; st, _ = f.Stat() {
		for range 100 {
			start := t0ms + int64(messages)*500
			b := &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: "order-1"}, BucketMs: 500}
			for _, n := range names {
				b.Items = append(b.Items, wire.NewBucketItem(n, start, core.Metrics{Pass: 3, Complete: 3}, false))
			}
			write(b)
			messages++
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	before := heap()
	r, err := newReplayed(path, in, 0, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opened := heap() - before
	runReplay(t, r)
	fed, rejected, _ := r.Collector().Counters()
	ran := heap() - before
	t.Logf("%d messages; the heap grew %d KiB when opened, %d KiB after the replay", messages, opened>>10, ran>>10)
	if fed != int64(messages) || r.Messages() != messages || rejected != 0 {
		t.Fatalf("%d messages fed (%d rejected) of %d (%d counted)", fed, rejected, messages, r.Messages())
	}
	if opened > 8<<20 || ran > 16<<20 {
		t.Fatalf("the heap grew %d MiB when opened, %d MiB after the replay of a 48 MiB recording", opened>>20, ran>>20)
	}
	runtime.KeepAlive(r)
}

// TestReplayFromAFIFO: a gzipped recording written into a FIFO (a stream
// that cannot be read twice) replays whole, and seeking back replays it
// again, from the copy the first reading made.
func TestReplayFromAFIFO(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "recording.ndjson.gz")
	if err := fifo.Make(pipe, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(sawtoothFixture(t))
	zw.Close()
	wrote := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(pipe, os.O_WRONLY, 0)
		if err == nil {
			_, err = w.Write(gz.Bytes())
			w.Close()
		}
		wrote <- err
	}()
	in, err := os.Open(pipe)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	var r *replayed
	go func() { r, err = newReplayed(pipe, in, 0, collector.Options{}); opened <- err }()
	select {
	case err = <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("NewReplay is stuck: reading the FIFO a second time?")
	}
	in.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if n, place, err := r.Rejects(); n != 0 || r.Messages() < 10 || r.Meta() == nil {
		t.Fatalf("%d messages, %d rejects (%s: %v)", r.Messages(), n, place, err)
	}
	r.Stay()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Error("the replay did not end: a pass is stuck opening its input")
		}
	}()
	fedAll := func(what string) {
		t.Helper()
		eventually(t, what, func() error {
			if m, rej, _ := r.Collector().Counters(); !r.Done() || m != int64(r.Messages()) || rej != 0 {
				return fmt.Errorf("done %v, %d of %d messages, %d rejected", r.Done(), m, r.Messages(), rej)
			}
			return nil
		})
	}
	fedAll("the whole recording")
	from, to := r.Range()
	r.Pause()
	r.SeekBy(-(to - from))
	eventually(t, "back at the start", func() error {
		if m, _, _ := r.Collector().Counters(); m >= int64(r.Messages()) || r.Clock().UnixMilli() != from {
			return fmt.Errorf("%d messages at %d", m, r.Clock().UnixMilli())
		}
		return nil
	})
	r.Resume()
	fedAll("the whole recording again")
	if r.Collector().Publish().Rows[0].PassQPS == 0 {
		t.Errorf("no traffic after replaying from the copy")
	}
}

// TestReplayInputIsBounded: a gzip bomb, /dev/zero and a long stream of
// garbage end with an error naming the bound, in bounded memory, instead
// of reading on.
func TestReplayInputIsBounded(t *testing.T) {
	if racetest.Enabled {
		t.Skip("a claim of memory, which the race detector bloats: .ci/run runs it without -race")
	}
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zero := make([]byte, 1<<20)
	for range 64 { // 64 MiB of zeros in about 64 KiB
		zw.Write(zero)
	}
	zw.Close()
	inputs := map[string]io.Reader{
		"bomb.ndjson.gz": &bomb,
		"garbage":        io.LimitReader(ones{}, 40<<20),
	}
	if f, err := os.Open("/dev/zero"); err == nil {
		defer f.Close()
		inputs["/dev/zero"] = f
	}
	for name, src := range inputs {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := NewReplay(name, src, 0, ReplayOptions{MaxBytes: 16 << 20})
		if !errors.Is(err, wire.ErrInputTooLarge) || !strings.Contains(err.Error(), "split the recording") {
			t.Fatalf("%s: %v", name, err)
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
			t.Fatalf("%s: the heap grew %d MiB", name, grew>>20)
		}
	}
}
