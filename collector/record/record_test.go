package record

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// fixture is a recording's worth of messages: a meta line, then a service
// starting, sending buckets, tripping a breaker and stopping.
func fixture() []wire.Message {
	const t0 = 1764460800000
	h := func(ts int64) wire.Header { return wire.Header{Ts: ts, Instance: "gateway-3"} }
	msgs := []wire.Message{
		&wire.Meta{Header: wire.Header{Ts: t0}, Title: "fixture"},
		&wire.Hello{Header: h(t0), App: "gateway", BucketMs: 500},
	}
	for k := range int64(200) {
		msgs = append(msgs, &wire.Buckets{Header: h(t0 + (k+1)*500 + 12), BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "priceService:queryPrice", Start: t0 + k*500,
				Metrics: core.Metrics{Pass: 10 + k%7, Block: k % 3, Complete: 10, Error: k % 2, RtSum: 100, RtMin: 1, RtMax: 40}}}})
	}
	return append(msgs,
		&wire.State{Header: h(t0 + 100_512), Resource: "priceService:queryPrice", Strategy: core.ErrorCount,
			From: core.Closed, To: core.Open, Threshold: 5, RetryTimeoutMs: 5000},
		&wire.Bye{Header: h(t0 + 101_000)})
}

// TestFixtureRoundTrip: what Create writes, plain or gzip by its name, Open
// reads back message for message, with the file's name in its positions.
func TestFixtureRoundTrip(t *testing.T) {
	for _, name := range []string{"plain.ndjson", "zipped.ndjson.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := Create(path, false)
			if err != nil {
				t.Fatal(err)
			}
			want := fixture()
			for _, m := range want {
				if err := w.Write(m); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Write(&wire.Meta{}); !errors.Is(err, wire.ErrMetaNotFirst) {
				t.Fatalf("second meta: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if zipped := bytes.HasPrefix(raw, []byte{0x1f, 0x8b}); zipped != strings.HasSuffix(name, ".gz") {
				t.Fatalf("gzip magic %v for %s", zipped, name)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			i := 0
			for m, err := range r.All() {
				if err != nil {
					t.Fatal(err)
				}
				if r.Pos() != (wire.Pos{File: path, Line: i + 1}) {
					t.Fatalf("pos %v, want line %d", r.Pos(), i+1)
				}
				got, _ := wire.Marshal(m)
				exp, _ := wire.Marshal(want[i])
				if !bytes.Equal(got, exp) {
					t.Fatalf("line %d: got %s want %s", i+1, got, exp)
				}
				i++
			}
			if i != len(want) {
				t.Fatalf("read %d messages, wrote %d", i, len(want))
			}
			if r.Meta() == nil || r.Meta().Title != "fixture" {
				t.Fatalf("meta %+v", r.Meta())
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("closed again: %v", err)
			}
		})
	}
}

// TestOpenMissing: a file that is not there is an error naming it, that
// errors.Is tells apart.
func TestOpenMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.ndjson")
	_, err := Open(path)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("%v", err)
	}
}

// TestCreateNeverThroughALink: a recording is never written through a
// symbolic link, overwrite or not, and never replaces a file unless told
// to.
func TestCreateNeverThroughALink(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious")
	if err := os.WriteFile(precious, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rec.ndjson")
	if err := os.Symlink(precious, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	for _, overwrite := range []bool{false, true} {
		w, err := Create(link, overwrite)
		if err == nil {
			w.Close()
			t.Fatalf("overwrite %v: a recording through a link", overwrite)
		}
		// Without overwrite, the open fails on anything already there.
		if overwrite && !strings.Contains(err.Error(), "is a symbolic link") {
			t.Errorf("overwrite: %v", err)
		}
	}
	if _, err := Create(precious, false); !errors.Is(err, ErrExists) {
		t.Errorf("an existing file without overwrite: %v", err)
	}
	if b, _ := os.ReadFile(precious); string(b) != "keep\n" {
		t.Fatalf("the file behind the link was changed: %q", b)
	}
	w, err := Create(filepath.Join(dir, "new.ndjson"), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCreateOverwrite: with overwrite, an existing file is replaced whole,
// nothing of the old content left after the new.
func TestCreateOverwrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	if err := os.WriteFile(path, bytes.Repeat([]byte("old line\n"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&wire.Bye{Header: wire.Header{Ts: 1, Instance: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"v":1,"kind":"bye","ts":1,"instance":"a"}`+"\n" {
		t.Fatalf("%q", b)
	}
}

// TestWriterTellsOfAFailedWriteAtOnce: a write the device refuses (/dev/full
// answers ENOSPC, as a full disk does) closes Failed as it happens, with
// the error in Err; before it, Err is nil and Failed open.
func TestWriterTellsOfAFailedWriteAtOnce(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	w, err := Create("/dev/full", true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(&wire.Bye{Header: wire.Header{Ts: 1, Instance: "a"}}); err != nil {
		t.Fatalf("a buffered write failed: %v", err)
	}
	select {
	case <-w.Failed():
		t.Fatal("failed before anything reached the file")
	default:
	}
	if w.Err() != nil {
		t.Fatalf("Err %v before anything reached the file", w.Err())
	}
	if err := w.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("flush to /dev/full: %v", err)
	}
	select {
	case <-w.Failed():
	default:
		t.Fatal("Failed still open after a failed write")
	}
	if !errors.Is(w.Err(), syscall.ENOSPC) {
		t.Fatalf("Err %v, want ENOSPC", w.Err())
	}
}
