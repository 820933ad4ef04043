package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// started starts rp into a new collector on its clock.
func started(t *testing.T, rp *Replay) *collector.Collector {
	t.Helper()
	c := collector.New(collector.Options{Clock: rp.Clock(), Mode: collector.ModeReplay, Source: rp.Name()})
	if err := rp.Start(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOpenReplayTellsWhatItOpened: a recording file, one of the builtins
// by name, and metric logs of two processes each open as what they are;
// a name that is neither a file nor a builtin says both.
func TestOpenReplayTellsWhatItOpened(t *testing.T) {
	dir := t.TempDir()
	var rec bytes.Buffer
	w := wire.NewWriter(&rec)
	w.Write(&wire.Hello{Header: wire.Header{Ts: 1764460800000, Instance: "gw-1"}, App: "gw", BucketMs: 500})
	w.Write(&wire.Buckets{Header: wire.Header{Ts: 1764460800500, Instance: "gw-1"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "db", Start: 1764460800000, Metrics: core.Metrics{Pass: 3, Complete: 3}}}})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "rec.ndjson")
	if err := os.WriteFile(file, rec.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	opened := 0
	builtin := Builtin{Names: []string{"calm"}, Open: func(name string) (io.ReadCloser, error) {
		opened++
		return io.NopCloser(bytes.NewReader(rec.Bytes())), nil
	}}
	for _, spec := range []string{file, "calm"} {
		rp, name, coll, err := OpenReplay(spec, 0, ReplayOptions{}, builtin)
		if err != nil || name != spec || len(coll) != 0 {
			t.Fatalf("%s: %v, %q, %v", spec, err, name, coll)
		}
		started(t, rp)
		if rp.Messages() != 2 || rp.Replayable() != nil {
			t.Errorf("%s: %d messages, %v", spec, rp.Messages(), rp.Replayable())
		}
	}
	if opened != 1 {
		t.Errorf("the builtin opened %d times, want once (the file is no builtin's)", opened)
	}

	const java = "../testdata/java/"
	logs := java + "host-a/price-service-metrics.log.2026-12-01," + java + "host-b/price-service-metrics.log.2026-12-01@gw-b"
	rp, _, _, err := OpenReplay(logs, 0, ReplayOptions{}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	c := started(t, rp)
	if err := rp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := c.Publish()
	if len(snap.Rows) == 0 {
		t.Fatal("the metric logs made no rows")
	}
	from, to := rp.Range()
	if d := c.Detail(snap.Rows[0].App, snap.Rows[0].Resource, from, to); len(d.Instances) != 2 {
		t.Errorf("two processes' logs made %d instances", len(d.Instances))
	}

	_, _, _, err = OpenReplay(filepath.Join(dir, "gone.ndjson"), 0, ReplayOptions{}, builtin)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "not a built-in fixture (calm)") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestOpenReplayOfNothing: a directory, the index of a metric log, an
// empty log and a recording of nothing but rejected lines are each
// ErrNothingToReplay, saying which and why; a file that is not a metric
// log among metric logs is the spec's error.
func TestOpenReplayOfNothing(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "price-metrics.log.2026-11-30")
	idx := empty + ".idx"
	garbage := filepath.Join(dir, "garbage.ndjson")
	os.WriteFile(empty, nil, 0o600)
	os.WriteFile(idx, []byte{0, 0, 0, 0, 0x6b, 0x0e, 0x10, 0x4e, 0, 0, 0, 0, 0, 0, 1, 0xc6, '\n', 7}, 0o600)
	os.WriteFile(garbage, []byte("not json\n{\"v\":9}\n"), 0o600)
	for spec, want := range map[string]string{
		dir:   "nothing replayable in " + dir + ": it is a directory",
		idx:   "nothing replayable in " + idx + ": it is the index of a Sentinel metric log, not the log: replay " + empty,
		empty: "nothing replayable in " + empty + ": it holds no metric lines",
	} {
		_, _, _, err := OpenReplay(spec, 0, ReplayOptions{}, Builtin{})
		if !errors.Is(err, ErrNothingToReplay) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	rp, _, _, err := OpenReplay(garbage, 0, ReplayOptions{}, Builtin{})
	if err != nil {
		t.Fatal(err)
	}
	started(t, rp)
	if err := rp.Replayable(); !errors.Is(err, ErrNothingToReplay) || !strings.Contains(err.Error(), "2 lines rejected, the first at "+garbage+":1") {
		t.Errorf("all lines rejected: %v", err)
	}
	log := "../testdata/java/host-a/price-service-metrics.log.2026-12-01"
	_, _, _, err = OpenReplay(log+","+garbage, 0, ReplayOptions{}, Builtin{})
	var se *SpecError
	if !errors.As(err, &se) || errors.Is(err, ErrNothingToReplay) || !strings.Contains(err.Error(), garbage+" is not a Sentinel metric log") {
		t.Errorf("a recording among metric logs: %v", err)
	}
}
