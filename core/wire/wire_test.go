package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// decodeBoth decodes frame with the Decoder (fast path for buckets) and
// with encoding/json, and fails the test unless both accept it with equal
// values or both reject it with the same error class.
func decodeBoth(t testing.TB, d *Decoder, frame []byte) (Message, error) {
	t.Helper()
	m1, err1 := d.Decode(frame)
	m2, err2 := decodeStd(frame, d.Limits())
	if err2 != nil {
		if err1 == nil {
			t.Fatalf("fast path accepts what encoding/json rejects (%v):\n%q", err2, frame)
		}
		if c1, c2 := classOf(err1), classOf(err2); c1 != c2 {
			t.Fatalf("error classes differ: fast %v, encoding/json %v:\n%q", err1, err2, frame)
		}
		return nil, err1
	}
	if err1 != nil {
		t.Fatalf("fast path rejects what encoding/json accepts (%v):\n%q", err1, frame)
	}
	if !reflect.DeepEqual(normalize(m1), normalize(m2)) {
		t.Fatalf("values differ:\nfast %#v\njson %#v\nframe %q", m1, m2, frame)
	}
	return m1, nil
}

func classOf(err error) error {
	for _, c := range []error{ErrMalformed, ErrVersion, ErrUnknownKind, ErrTooLarge, ErrInvalid} {
		if errors.Is(err, c) {
			return c
		}
	}
	return err
}

func TestRoundTrip(t *testing.T) {
	g := newGen(1)
	var d Decoder
	counts := map[Kind]int{}
	n := racetest.Cases(5000)
	for range n {
		m := g.message()
		counts[m.Kind()]++
		if err := Validate(m, Limits{}); err != nil {
			t.Fatalf("generator made an invalid %s: %v", m.Kind(), err)
		}
		line, err := Marshal(m)
		if err != nil {
			t.Fatalf("encode %s: %v", m.Kind(), err)
		}
		if !json.Valid(line) || !utf8.Valid(line) || bytes.ContainsAny(line, "\n\r") {
			t.Fatalf("encoded %s is not one line of valid JSON: %q", m.Kind(), line)
		}
		got, err := decodeBoth(t, &d, line)
		if err != nil {
			t.Fatalf("decode %s: %v\n%s", m.Kind(), err, line)
		}
		if !reflect.DeepEqual(normalize(got), normalize(m)) {
			t.Fatalf("round trip changed the %s:\nwant %#v\ngot  %#v\nline %s", m.Kind(), m, got, line)
		}
		// encoding/json sees the same message through MarshalJSON.
		var via bytes.Buffer
		enc := json.NewEncoder(&via)
		enc.SetEscapeHTML(false)
		err = enc.Encode(m)
		if viaJSON := bytes.TrimSuffix(via.Bytes(), []byte("\n")); err != nil || !bytes.Equal(viaJSON, line) {
			t.Fatalf("json.Marshal differs from Marshal: %v\n%s\n%s", err, viaJSON, line)
		}
	}
	for _, k := range []Kind{KindMeta, KindHello, KindRules, KindBuckets, KindState, KindBye} {
		if counts[k] < n/50 {
			t.Errorf("only %d %s messages generated", counts[k], k)
		}
	}
}

// TestRoundTripHostileNames sends every hostile name through every name
// field of a buckets and a state message.
func TestRoundTripHostileNames(t *testing.T) {
	var d Decoder
	for _, name := range hostileNames {
		b := &Buckets{Header: Header{Ts: 1, Instance: name}, BucketMs: 500,
			Items: []BucketItem{{Resource: name, Start: 500}, {Resource: "#2" + name, Start: 1000, Metrics: core.Metrics{Pass: 1}}}}
		if len(b.Items[1].Resource) > DefaultMaxNameBytes {
			b.Items[1].Resource = name
		}
		s := &State{Header: Header{Ts: 1, Instance: name}, Resource: name, RuleID: name, From: 0, To: 2}
		for _, m := range []Message{b, s} {
			line, err := Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeBoth(t, &d, line)
			if err != nil {
				t.Fatalf("%q: %v\n%s", name, err, line)
			}
			if !reflect.DeepEqual(normalize(got), normalize(m)) {
				t.Fatalf("%q changed:\nwant %#v\ngot  %#v", name, m, got)
			}
		}
	}
}

func TestEncodeInvalidUTF8BecomesReplacement(t *testing.T) {
	b := &Buckets{Header: Header{Ts: 1, Instance: "a\xffb"}, BucketMs: 1}
	line := AppendBuckets(nil, b)
	m, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Head().Instance; got != "a\uFFFDb" {
		t.Fatalf("instance %q, want a\\uFFFDb", got)
	}
}

func TestEncodeErrors(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	for name, m := range map[string]Message{
		"nan threshold": &State{Header: Header{Instance: "i"}, Resource: "r", From: 0, To: 2, Threshold: nan},
		"bad state":     &State{Header: Header{Instance: "i"}, Resource: "r", From: 0, To: 7},
		"extra clash":   &Meta{Extra: map[string]json.RawMessage{"Title": json.RawMessage(`1`)}},
		"extra invalid": &Meta{Extra: map[string]json.RawMessage{"x": json.RawMessage(`{`)}},
		"nil":           nil,
		"nil buckets":   (*Buckets)(nil),
		"nil state":     (*State)(nil),
	} {
		dst := []byte("keep")
		out, err := Append(dst, m)
		if !errors.Is(err, ErrEncode) {
			t.Errorf("%s: err %v, want ErrEncode", name, err)
		}
		if string(out) != "keep" {
			t.Errorf("%s: dst changed to %q", name, out)
		}
	}
}

func TestNilMessages(t *testing.T) {
	for _, m := range []Message{nil, (*Buckets)(nil), (*Meta)(nil), (*Rules)(nil)} {
		if err := Validate(m, Limits{}); err == nil {
			t.Errorf("Validate(%#v) = nil", m)
		}
		if c := Clone(m); c != m {
			t.Errorf("Clone(%#v) = %#v", m, c)
		}
	}
}

func TestMetaExtraCompactedAndKept(t *testing.T) {
	line := []byte(`{"v":1,"kind":"meta","ts":5,"title":"t","expect":[ {"finding" : "flapping"} ],"Title2":1}`)
	m, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	meta := m.(*Meta)
	if got := string(meta.Extra["expect"]); got != `[{"finding":"flapping"}]` {
		t.Fatalf("extra %q", got)
	}
	out, _ := Marshal(meta)
	if want := `{"v":1,"kind":"meta","ts":5,"title":"t","Title2":1,"expect":[{"finding":"flapping"}]}`; string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
}

func TestUnmarshalJSONMethods(t *testing.T) {
	var h Hello
	err := json.Unmarshal([]byte(`{"v":1,"kind":"hello","ts":1,"instance":"a","bucketMs":500}`), &h)
	if err != nil || h.Instance != "a" || h.BucketMs != 500 {
		t.Fatalf("%v %+v", err, h)
	}
	var b Buckets
	err = json.Unmarshal([]byte(`{"v":1,"kind":"hello","ts":1,"instance":"a","bucketMs":500}`), &b)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("hello into Buckets: %v", err)
	}
	err = json.Unmarshal([]byte(`{"v":1,"kind":"buckets","ts":1,"instance":"a","bucketMs":500,"items":[{"resource":"r","start":0,"rtHist":[1,2,3,4,5,6,7,8,9,10,11,12,13,14]}]}`), &b)
	if err != nil || len(b.Items) != 1 || !b.Items[0].HasHist || b.Items[0].Hist[13] != 14 {
		t.Fatalf("%v %+v", err, b)
	}
}

func TestCloneOwnsItsMemory(t *testing.T) {
	var d Decoder
	frame := func(name string, h int) []byte {
		return []byte(`{"v":1,"kind":"buckets","ts":1,"instance":"i","bucketMs":10,"items":[{"resource":"` + name +
			`","start":10,"rtHist":[` + strings.Repeat("0,", 13) + string(rune('0'+h)) + `]}]}`)
	}
	m1, err := d.Decode(frame("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	kept := Clone(m1).(*Buckets)
	if _, err := d.Decode(frame("b", 2)); err != nil {
		t.Fatal(err)
	}
	if kept.Items[0].Resource != "a" || kept.Items[0].Hist[13] != 1 {
		t.Fatalf("clone changed: %+v", kept.Items[0])
	}
	// The decoder's own message was reused, as documented.
	if m1.(*Buckets).Items[0].Resource != "b" {
		t.Fatalf("expected reuse of the decoder's buckets")
	}
	// Hot values too: a clone keeps its own.
	hot := func(v string) []byte {
		return []byte(`{"v":1,"kind":"buckets","ts":1,"instance":"i","bucketMs":10,"items":[` +
			`{"resource":"a","start":10,"hot":[{"value":"` + v + `","pass":1}]},{"resource":"b","start":10,"hot":[{"value":"` + v + v + `"}]}]}`)
	}
	m2, err := d.Decode(hot("x"))
	if err != nil {
		t.Fatal(err)
	}
	keptHot := m2.(*Buckets).Clone()
	if _, err := d.Decode(hot("y")); err != nil {
		t.Fatal(err)
	}
	if h := keptHot.Items; h[0].Hot[0].Value != "x" || h[1].Hot[0].Value != "xx" || len(h[0].Hot) != 1 || cap(h[0].Hot) != 1 {
		t.Fatalf("clone changed: %+v", h)
	}
	if m2.(*Buckets).Items[0].Hot[0].Value != "y" {
		t.Fatalf("expected reuse of the decoder's hot items")
	}
}

func TestInternIsBounded(t *testing.T) {
	d := NewDecoder(Limits{InternNames: 16})
	for i := 0; i < 1000; i++ {
		b := &Buckets{Header: Header{Ts: 1, Instance: "i"}, BucketMs: 1, Items: []BucketItem{{Resource: strings.Repeat("r", i%300+1), Start: 1}}}
		if _, err := d.Decode(AppendBuckets(nil, b)); err != nil {
			t.Fatal(err)
		}
		if len(d.names.m) > 16 {
			t.Fatalf("%d names interned, limit 16", len(d.names.m))
		}
	}
	// Long distinct names: the memory bound holds too.
	var dd Decoder
	for i := 0; i < 3000; i++ {
		b := &Buckets{Header: Header{Ts: 1, Instance: "i"}, BucketMs: 1,
			Items: []BucketItem{{Resource: fmt.Sprintf("%04d", i) + strings.Repeat("r", 1000), Start: 1}}}
		if _, err := dd.Decode(AppendBuckets(nil, b)); err != nil {
			t.Fatal(err)
		}
		if dd.names.bytes > maxInternBytes {
			t.Fatalf("%d bytes interned, limit %d", dd.names.bytes, maxInternBytes)
		}
	}
	// A churn of hot values is bounded apart and leaves the names alone.
	d = NewDecoder(Limits{InternNames: 16})
	for i := 0; i < 1000; i++ {
		b := &Buckets{Header: Header{Ts: 1, Instance: "i"}, BucketMs: 1,
			Items: []BucketItem{{Resource: "r", Start: 1, Hot: []HotItem{{Value: fmt.Sprint("customer-", i)}}}}}
		if _, err := d.Decode(AppendBuckets(nil, b)); err != nil {
			t.Fatal(err)
		}
		if len(d.values.m) > 16 || len(d.names.m) != 2 {
			t.Fatalf("%d values and %d names interned, limit 16, 2 names", len(d.values.m), len(d.names.m))
		}
	}
}

// TestDecodeAllocs holds the fast path to its promise: decoding buckets
// with names seen before allocates nothing.
func TestDecodeAllocs(t *testing.T) {
	frame := benchFrame(50, true)
	var d Decoder
	if _, err := d.Decode(frame); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := d.Decode(frame); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per decode, want 0", allocs)
	}
	// Unknown fields, escapes and case-folded names cost nothing either.
	odd := []byte(strings.Replace(string(frame), `"pass"`, `"future":{"a":[1,"\u00e9",null]},"PASS"`, -1))
	odd = []byte(strings.Replace(string(odd), `"resource":"GET`, `"resource":"\"GET\u00e9`, -1))
	if _, err := d.Decode(odd); err != nil {
		t.Fatal(err)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := d.Decode(odd); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per decode of a frame with unknown fields and escapes, want 0", allocs)
	}
	// Hot values seen before cost nothing, even past the names' bound.
	hot := benchBuckets(50, true)
	for i := range hot.Items {
		hot.Items[i].Hot = []HotItem{{Value: fmt.Sprintf("customer-%d", i), Pass: 3}, {Value: "vip-123", Block: 2}, {Value: HotOther, Pass: 9}}
	}
	hotFrame := AppendBuckets(nil, hot)
	if _, err := d.Decode(hotFrame); err != nil {
		t.Fatal(err)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := d.Decode(hotFrame); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per decode of a frame with hot values, want 0", allocs)
	}
	b := &Buckets{}
	m, _ := d.Decode(frame)
	*b = *m.(*Buckets)
	buf := AppendBuckets(nil, b)
	allocs = testing.AllocsPerRun(100, func() { buf = AppendBuckets(buf[:0], b) })
	if allocs != 0 {
		t.Fatalf("%v allocations per encode, want 0", allocs)
	}
}

// TestItemKeysInAnyShape: the decoder tries an item's keys in the
// encoder's order before scanning them; keys in another order, with
// whitespace, escaped, in another case, repeated or unknown decode exactly
// as encoding/json's path decodes them, and the count lands in its field.
func TestItemKeysInAnyShape(t *testing.T) {
	head := `{"v":1,"kind":"buckets","ts":1000,"instance":"i","bucketMs":500,"items":[`
	for _, item := range []string{
		`{"resource":"r","start":500,"pass":3,"block":1,"complete":3,"error":0,"slow":0,"rtSum":30,"rtMin":5,"rtMax":20,"concurrency":0}`,
		`{"pass":3,"resource":"r","start":500,"complete":3,"block":1,"rtSum":30,"rtMax":20,"rtMin":5}`,
		`{"resource":"r","start":500 ,"pass" :3,"block": 1,"complete":3,"rtSum":30,"rtMin":5,"rtMax":20}`,
		`{"resource":"r","start":500,"p\u0061ss":3,"block":1,"complete":3,"rtSum":30,"rtMin":5,"rtMax":20}`,
		`{"resource":"r","start":500,"PASS":3,"Block":1,"complete":3,"rtSum":30,"rtMin":5,"rtMax":20}`,
		`{"resource":"r","start":500,"pass":3,"pass":4,"block":1,"complete":3,"rtSum":30,"rtMin":5,"rtMax":20}`,
		`{"resource":"r","start":500,"passes":9,"pass":3,"block":1,"complete":3,"rtSum":30,"rtMin":5,"rtMax":20}`,
		`{"resource":"r","start":500,"pass":3,"block":1,"complete":3,"rtSum":30,"rtMin":5,"rtMax":20,"concurrency":0,"rtHist":[0,1,2,0,0,0,0,0,0,0,0,0,0,0]}`,
	} {
		var d Decoder
		m, err := decodeBoth(t, &d, []byte(head+item+`]}`))
		if strings.Contains(item, `"pass":4`) {
			if err == nil {
				t.Errorf("a repeated key was accepted: %s", item)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", item, err)
			continue
		}
		it := m.(*Buckets).Items[0]
		if it.Pass != 3 || it.Block != 1 || it.Complete != 3 || it.RtSum != 30 || it.RtMax != 20 {
			t.Errorf("%s: decoded %+v", item, it.Metrics)
		}
	}
}
