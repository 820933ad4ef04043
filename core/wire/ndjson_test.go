package wire

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestFixtureRoundTrip(t *testing.T) {
	for _, form := range []struct {
		name      string
		newWriter func(io.Writer) *Writer
	}{{"plain.ndjson", NewWriter}, {"zipped.ndjson.gz", NewGzipWriter}} {
		t.Run(form.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := form.newWriter(&buf)
			g := newGen(3)
			want := []Message{&Meta{Header: Header{Ts: 1}, Title: "fixture"}}
			for range 300 {
				m := g.message()
				if m.Kind() == KindMeta {
					continue
				}
				want = append(want, m)
			}
			for _, m := range want {
				if err := w.Write(m); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Write(&Meta{}); !errors.Is(err, ErrMetaNotFirst) {
				t.Fatalf("second meta: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if zipped := bytes.HasPrefix(buf.Bytes(), []byte{0x1f, 0x8b}); zipped != strings.HasSuffix(form.name, ".gz") {
				t.Fatalf("gzip magic %v for %s", zipped, form.name)
			}
			r := NewReader(&buf, form.name)
			i := 0
			for m, err := range r.All() {
				if err != nil {
					t.Fatal(err)
				}
				if r.Pos() != (Pos{form.name, i + 1}) {
					t.Fatalf("pos %v, want line %d", r.Pos(), i+1)
				}
				if !reflect.DeepEqual(normalize(m), normalize(want[i])) {
					t.Fatalf("line %d: got %#v want %#v", i+1, m, want[i])
				}
				i++
			}
			if i != len(want) {
				t.Fatalf("read %d messages, wrote %d", i, len(want))
			}
			if r.Meta() == nil || r.Meta().Title != "fixture" {
				t.Fatalf("meta %+v", r.Meta())
			}
		})
	}
}

// TestGzipFlushIsReadable: what a gzip Writer flushed reads back before the
// stream is ended, as a recording cut by a crash is read.
func TestGzipFlushIsReadable(t *testing.T) {
	var buf bytes.Buffer
	w := NewGzipWriter(&buf)
	for range 3 {
		if err := w.Write(&Bye{Header: Header{Ts: 1, Instance: "a"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, NewReader(bytes.NewReader(buf.Bytes()), "cut.ndjson.gz"))
	checkResults(t, got, []result{{1, KindBye, ""}, {2, KindBye, ""}, {3, KindBye, ""}, {4, "", "unexpected EOF"}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&Bye{}); err == nil {
		t.Fatal("write after close")
	}
}

// result is one outcome of Reader.Next, for comparing with a script.
type result struct {
	line int
	kind Kind   // message kind, or "" for an error
	err  string // substring of the error
}

func readAll(t *testing.T, r *Reader) []result {
	t.Helper()
	var out []result
	for m, err := range r.All() {
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Pos != r.Pos() {
				t.Fatalf("error %v is not a LineError at %v", err, r.Pos())
			}
			if !strings.HasPrefix(err.Error(), r.Pos().String()+": ") {
				t.Fatalf("error %q does not start with its position", err)
			}
			out = append(out, result{r.Pos().Line, "", err.Error()})
			continue
		}
		out = append(out, result{r.Pos().Line, m.Kind(), ""})
	}
	return out
}

func checkResults(t *testing.T, got, want []result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.line != w.line || g.kind != w.kind || !strings.Contains(g.err, w.err) || (w.err == "") != (g.err == "") {
			t.Fatalf("result %d: got %+v, want %+v", i, g, w)
		}
	}
}

// bigLine produces n bytes of one line without ever holding them.
type bigLine struct{ n int }

func (b *bigLine) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), b.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	b.n -= k
	return k, nil
}

func TestReaderKeepsGoing(t *testing.T) {
	hello := `{"v":1,"kind":"hello","ts":1,"instance":"gw","bucketMs":500}`
	meta := `{"v":1,"kind":"meta","ts":1,"title":"t"}`
	src := io.MultiReader(
		strings.NewReader(meta+"\n"+ // 1
			hello+"\r\n"+ // 2 (CRLF is fine)
			"\n"+ // 3 blank, skipped
			"{not json\n"+ // 4
			`{"v":1,"kind":"future","ts":1,"instance":"gw"}`+"\n"+ // 5
			meta+"\n"+ // 6: meta not first
			`{"v":2,"kind":"hello","ts":1,"instance":"gw","bucketMs":500}`+"\n"+ // 7
			`{"v":1,"kind":"buckets","ts":1,"instance":"gw","bucketMs":500,"items":[{"resource":"r","start":3}]}`+"\n"+ // 8
			"{"), // 9: 50 MB line follows
		&bigLine{50 << 20},
		strings.NewReader("\n"+
			baseBuckets+"\n"+ // 10
			baseBuckets[:50]), // 11: truncated last line
	)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	r := NewReader(src, "scenario.ndjson")
	got := readAll(t, r)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	checkResults(t, got, []result{
		{1, KindMeta, ""},
		{2, KindHello, ""},
		{4, "", "scenario.ndjson:4: wire: invalid character"},
		{5, "", `scenario.ndjson:5: wire: kind: "future"`},
		{6, "", "scenario.ndjson:6: meta is only valid as the first line"},
		{7, "", "scenario.ndjson:7: wire: v: is 2, want 1"},
		{8, "", "scenario.ndjson:8: wire: buckets items[0].start: 3 is not a multiple of bucketMs 500"},
		{9, "", "scenario.ndjson:9: wire: line of 52428801 bytes exceeds the limit of 1048576"},
		{10, KindBuckets, ""},
		{11, "", "scenario.ndjson:11: wire: unexpected end of JSON input (last line, no newline: truncated?)"},
	})
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("reading a 50 MB line allocated %d MB", grew>>20)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the end: %v", err)
	}
}

func TestReaderClassifiesErrors(t *testing.T) {
	r := NewReader(strings.NewReader(`{"v":1,"kind":"future","ts":1,"instance":"gw"}`+"\n"), "f")
	_, err := r.Next()
	if !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("unknown kind through the reader: %v", err)
	}
}

func TestReaderLastLineWithoutNewline(t *testing.T) {
	r := NewReader(strings.NewReader(baseBuckets+"\n"+baseBuckets), "f")
	checkResults(t, readAll(t, r), []result{{1, KindBuckets, ""}, {2, KindBuckets, ""}})
}

func TestReaderTruncatedGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for range 2000 {
		zw.Write([]byte(baseBuckets + "\n"))
	}
	zw.Close()
	whole := buf.Bytes()
	r := NewReader(bytes.NewReader(whole[:len(whole)*3/4]), "cut.ndjson.gz")
	got := readAll(t, r)
	if len(got) < 100 {
		t.Fatalf("only %d results before the cut", len(got))
	}
	for _, res := range got[:len(got)-1] {
		if res.kind != KindBuckets {
			t.Fatalf("line %d before the cut: %+v", res.line, res)
		}
	}
	last := got[len(got)-1]
	if last.kind != "" || !strings.Contains(last.err, "unexpected EOF") {
		t.Fatalf("the cut: %+v", last)
	}
	// A gzip stream cut inside its header.
	r = NewReader(bytes.NewReader(whole[:5]), "tiny.gz")
	checkResults(t, readAll(t, r), []result{{1, "", "tiny.gz:1: unexpected EOF"}})
}

func TestReaderLongLineAtEOF(t *testing.T) {
	r := NewReaderLimits(strings.NewReader(baseBuckets+"\n"+strings.Repeat("y", 5000)), "f", Limits{MaxFrameBytes: 1000})
	checkResults(t, readAll(t, r), []result{{1, KindBuckets, ""}, {2, "", "exceeds the limit of 1000"}})
}

func TestWriterPlainAndFlush(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(&Bye{Header: Header{Ts: 1, Instance: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != `{"v":1,"kind":"bye","ts":1,"instance":"a"}`+"\n" {
		t.Fatalf("%q", got)
	}
	if err := w.Write(&Meta{}); !errors.Is(err, ErrMetaNotFirst) {
		t.Fatalf("meta after a line: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&Bye{}); err == nil {
		t.Fatal("write after close")
	}
}
