package wire

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// decodeSeeds are the inputs the fuzz targets start from: every table
// case and a spread of generated messages of every kind.
func decodeSeeds() [][]byte {
	var seeds [][]byte
	for _, tc := range append(append([]vcase{}, bucketCases...), otherCases...) {
		if len(tc.frame) < 4096 {
			seeds = append(seeds, []byte(tc.frame))
		}
	}
	g := newGen(7)
	for range 24 {
		line, err := Marshal(g.message())
		if err == nil && len(line) < 4096 {
			seeds = append(seeds, line)
		}
	}
	// State messages, which the scanner reads too: as the encoder writes
	// them, and with keys reordered, recased, repeated or given other
	// values, whitespace and unknown fields.
	g = newGen(13)
	for k := range 16 {
		m := g.state()
		line, _ := Marshal(m)
		if k%2 == 1 {
			line, _ = genStateFrame(g.r, m)
		}
		if len(line) < 4096 {
			seeds = append(seeds, line)
		}
	}
	return seeds
}

func readerSeeds() [][]byte {
	g := newGen(11)
	var plain bytes.Buffer
	w := NewWriter(&plain)
	_ = w.Write(&Meta{Header: Header{Ts: 1}, Title: "seed"})
	for range 5 {
		_ = w.Write(g.message())
	}
	_ = w.Close()
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(plain.Bytes())
	_ = zw.Close()
	z := zipped.Bytes()
	return [][]byte{
		plain.Bytes(),
		z,
		z[:len(z)/2],
		[]byte("\n\n" + baseBuckets + "\r\n{bad\n" + `{"v":1,"kind":"meta","ts":1}` + "\n" + baseBuckets[:30]),
		[]byte(baseBuckets + "\n" + `{"v":1,"kind":"future","ts":1,"instance":"i"}` + "\n" + baseBuckets),
	}
}

// FuzzDecode holds the decoder to its contract on any input: no panic, the
// fast path and encoding/json agree (and the fast path's plain item reader
// and its general loop, to the error message), every error is a classified
// *DecodeError, and what is accepted re-encodes to an equal message.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds() {
		f.Add(s)
	}
	var shared Decoder // reused across inputs, as a connection's decoder is
	general := Decoder{general: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := shared.Decode(data)
		ref, refErr := decodeStd(data, shared.Limits())
		// The plain item reader and the general loop: the very same result.
		if gm, gerr := general.Decode(data); fmt.Sprint(gerr) != fmt.Sprint(err) ||
			err == nil && !reflect.DeepEqual(normalize(gm), normalize(m)) {
			t.Fatalf("plain item reader: %v; general loop: %v; input %q", err, gerr, data)
		}
		if (err == nil) != (refErr == nil) {
			t.Fatalf("fast path: %v; encoding/json: %v; input %q", err, refErr, data)
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || classOf(err) == err {
				t.Fatalf("unclassified error %T %v", err, err)
			}
			return
		}
		if !reflect.DeepEqual(normalize(m), normalize(ref)) {
			t.Fatalf("values differ:\nfast %#v\njson %#v\ninput %q", m, ref, data)
		}
		if err := Validate(m, Limits{}); err != nil {
			t.Fatalf("accepted a message Validate rejects: %v", err)
		}
		line, err := Marshal(m)
		if err != nil {
			t.Fatalf("cannot re-encode an accepted message: %v", err)
		}
		var fresh Decoder
		again, err := fresh.Decode(line)
		if err != nil {
			t.Fatalf("re-encoded message rejected: %v\n%s", err, line)
		}
		if !reflect.DeepEqual(normalize(again), normalize(m)) {
			t.Fatalf("re-encoding changed the message:\n%#v\n%#v", m, again)
		}
	})
}

// FuzzReader feeds arbitrary bytes to the fixture reader (with a small
// frame limit, so long lines are common): no panic, the end is reached,
// positions only move forward, and every message it yields is valid.
func FuzzReader(f *testing.F) {
	for _, s := range readerSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReaderLimits(bytes.NewReader(data), "fuzz.ndjson", Limits{MaxFrameBytes: 256})
		last := 0
		for calls := 0; ; calls++ {
			if calls > 1100*len(data)+16 { // deflate expands at most ~1032:1
				t.Fatalf("more results than lines")
			}
			m, err := r.Next()
			if err == io.EOF {
				break
			}
			if r.Pos().Line <= last {
				t.Fatalf("position went from %d to %v", last, r.Pos())
			}
			last = r.Pos().Line
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) || le.Pos != r.Pos() {
					t.Fatalf("error %T %v is not a LineError at %v", err, err, r.Pos())
				}
				continue
			}
			if err := Validate(m, Limits{}); err != nil {
				t.Fatalf("yielded an invalid message: %v", err)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the end: %v", err)
		}
	})
}

// TestWriteFuzzCorpus rewrites the committed seed corpus from the seeds
// above: WIRE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus ./core/wire/
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("WIRE_WRITE_CORPUS") == "" {
		t.Skip("set WIRE_WRITE_CORPUS=1 to rewrite testdata/fuzz")
	}
	for target, seeds := range map[string][][]byte{"FuzzDecode": decodeSeeds(), "FuzzReader": readerSeeds()} {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds {
			sum := sha256.Sum256(s)
			name := "seed-" + hex.EncodeToString(sum[:8])
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
