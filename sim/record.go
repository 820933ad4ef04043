package sim

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// GzipAbove is the size over which a fixture is written gzip-compressed, as
// NAME.ndjson.gz instead of NAME.ndjson.
const GzipAbove = 1 << 20

// checkEvery is how much simulated time passes between looks at the context.
const checkEvery = int64(time.Second)

// Run plays s from its start to its Duration as fast as it can, on a
// virtual clock, and passes every wire message its instances' agents send to
// emit, in time order: each instance's hello and rules when it starts, its
// buckets at every bucket boundary, its transitions, and its bye when it
// stops or the scenario ends. The messages belong to emit. The same scenario
// gives the same messages, byte for byte, every time.
//
// Run stops early with ctx's error, or with emit's.
func Run(ctx context.Context, s *Scenario, emit func(wire.Message) error) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Duration <= 0 {
		return scenarioErr(s, "a recording needs a positive Duration")
	}
	if s.Script != nil {
		return s.Script(s.start(), s, func(m wire.Message) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return emit(m)
		})
	}
	f := newFleet(s, s.start(), true)
	f.emit = emit
	err := f.play(ctx, int64(s.Duration))
	for _, in := range f.insts {
		if in.up {
			in.agent.Close()
			in.up = false
		}
	}
	return err
}

func (f *fleet) play(ctx context.Context, end int64) error {
	for t := int64(0); t < end; {
		if err := ctx.Err(); err != nil {
			return err
		}
		t = min(t+checkEvery, end)
		if err := f.runUntil(t); err != nil {
			return err
		}
	}
	// The end: what is left in the streams, then bye from every instance.
	for _, in := range f.insts {
		if err := f.drain(in); err != nil {
			return err
		}
	}
	for _, in := range f.insts {
		if err := f.stopInstance(in); err != nil {
			return err
		}
	}
	return f.flush()
}

// Meta returns the meta line of s's recording: title, description, and in
// its extra fields the scenario's name, seed and duration, the findings it
// must produce ("expect") and the rule plans ("expectPlans", when it
// must produce any).
func (s *Scenario) Meta() (*wire.Meta, error) {
	expect := s.Expect
	if expect == nil {
		expect = []Expect{}
	}
	ex, err := json.Marshal(expect)
	if err != nil {
		return nil, err
	}
	extra := map[string]json.RawMessage{
		"expect":     ex,
		"scenario":   mustJSON(s.Name),
		"seed":       mustJSON(s.Seed),
		"durationMs": mustJSON(s.Duration.Milliseconds()),
	}
	if len(s.ExpectPlans) > 0 {
		plans, err := json.Marshal(s.ExpectPlans)
		if err != nil {
			return nil, err
		}
		extra["expectPlans"] = plans
	}
	return &wire.Meta{
		Header:      wire.Header{Ts: s.start().UnixMilli()},
		Title:       s.Title,
		Description: s.Description,
		RecordedBy:  RecordedBy,
		Extra:       extra,
	}, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and integers always encode
	}
	return b
}

// Record writes s's recording to w as a fixture: its meta line, then every
// message in time order, one per line.
func Record(ctx context.Context, s *Scenario, w io.Writer) error {
	meta, err := s.Meta()
	if err != nil {
		return err
	}
	ww := wire.NewWriter(w)
	if err := ww.Write(meta); err != nil {
		return err
	}
	if err := Run(ctx, s, ww.Write); err != nil {
		return err
	}
	return ww.Close()
}

// Fixture returns s's fixture: its file name (NAME.ndjson, or NAME.ndjson.gz
// when the recording is larger than GzipAbove) and its bytes.
func Fixture(ctx context.Context, s *Scenario) (name string, data []byte, err error) {
	var buf bytes.Buffer
	if err := Record(ctx, s, &buf); err != nil {
		return "", nil, err
	}
	if buf.Len() <= GzipAbove {
		return s.Name + ".ndjson", buf.Bytes(), nil
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return "", nil, err
	}
	// No name and no time in the header: the same recording, the same bytes.
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return "", nil, err
	}
	if err := zw.Close(); err != nil {
		return "", nil, err
	}
	return s.Name + ".ndjson.gz", gz.Bytes(), nil
}

// WriteFixture records s into dir and returns the path written. The other
// form of the same fixture (compressed or not), if present, is removed.
func WriteFixture(ctx context.Context, dir string, s *Scenario) (string, error) {
	name, data, err := Fixture(ctx, s)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	other := filepath.Join(dir, s.Name+".ndjson")
	if other == path {
		other += ".gz"
	}
	if err := os.Remove(other); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("sim: removing the stale %s: %w", other, err)
	}
	return path, nil
}
