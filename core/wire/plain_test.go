package wire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// ends reports whether data[i] ends a count where the plain reader looks
// for it: before the next field, the end of an item or of a histogram.
func ends(data []byte, i int) bool {
	return i < len(data) && (data[i] == ',' || data[i] == '}' || data[i] == ']')
}

// TestPlainDigitsAgreesWithSmallInt: a count the plain reader accepts
// (its digits and the byte that ends it) is one smallInt reads, to the
// same value and index, and strconv too; and smallInt reads no count so
// ended that the plain reader declines.
func TestPlainDigitsAgreesWithSmallInt(t *testing.T) {
	check := func(in string) {
		t.Helper()
		b := []byte(in)
		v, next, ok := plainDigits(b, 0)
		plain := ok && ends(b, next)
		sNext, sv, sok := smallInt(b, 0)
		small := sok && ends(b, sNext)
		if plain != small || plain && (v != sv || next != sNext) {
			t.Fatalf("%q: plain %d at %d (%v), smallInt %d at %d (%v)", in, v, next, plain, sv, sNext, small)
		}
		if plain {
			if n, err := strconv.ParseInt(in[:next], 10, 64); err != nil || n != v {
				t.Fatalf("%q: %d, strconv %d (%v)", in, v, n, err)
			}
		}
	}
	for _, in := range []string{"0,", "0}", "0]", "00,", "01,", "0.5,", "0e1,", "7,", "10}", "999999999999999999,",
		"1234567890123456789,", "9223372036854775807]", "1.5,", "1e3,", "2E1}", "-1,", ",", "", "5", "0", "x,", "12 ,"} {
		check(in)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		var b strings.Builder
		if r.IntN(8) == 0 {
			b.WriteByte('0')
		}
		for n := r.IntN(21); n > 0; n-- {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		b.WriteString([]string{",", "}", "]", ".", "e", "E", "x", " ", "", "0,", "7]"}[r.IntN(11)])
		check(b.String())
	}
}

// TestPlainItemReadsEncoderOutput: an item as AppendBuckets writes it,
// its name plain ASCII and without hot values, is read by the plain
// reader to its end, every field in place; with hot values, it stops at
// them and leaves them to the general loop; a name with an escape is left
// to the general loop from the start.
func TestPlainItemReadsEncoderOutput(t *testing.T) {
	g := newGen(9)
	for k := range 2000 {
		it := g.item(500)
		plainName := isPlainString(it.Resource) && !strings.ContainsFunc(it.Resource, func(r rune) bool { return r >= 0x80 }) &&
			len(it.Resource) <= Limits{}.withDefaults().MaxNameBytes
		long := -1 // the first count of more than 18 digits
		for f := iConcurrency; f >= iStart; f-- {
			if *it.intField(f) >= 1e18 {
				long = f
			}
		}
		enc := appendItem(nil, &it)
		var d Decoder
		d.lim = d.lim.withDefaults()
		d.sc = &d.own
		d.sc.b.Items = []BucketItem{{}}
		next, fld, seen, done := d.readPlainItem(enc, 1, 0)
		got := d.sc.b.Items[0]
		switch {
		case !plainName:
			if done || fld != -1 || seen != 0 {
				t.Fatalf("item %d: name %q read by the plain reader (to field %d)", k, it.Resource, fld)
			}
			continue
		case long >= 0:
			// A count of 19 digits is left to the general loop, which
			// reads every number.
			if done || fld != long-1 || !bytes.HasPrefix(enc[next:], itemKeys[long]) {
				t.Fatalf("item %d: stopped at field %d, %q, want %d before the long count", k, fld, enc[next:], long-1)
			}
			continue
		case len(it.Hot) > 0:
			want := iConcurrency
			if it.HasHist {
				want = iRtHist
			}
			if done || fld != want || !bytes.HasPrefix(enc[next:], []byte(`"hot":[`)) {
				t.Fatalf("item %d: stopped at field %d, %q, want %d before the hot values", k, fld, enc[next:], want)
			}
			it.Hot = nil
		default:
			if !done || next != len(enc) {
				t.Fatalf("item %d: read to field %d, %d of %d bytes, done %v:\n%s", k, fld, next, len(enc), done, enc)
			}
		}
		if seen != 1<<(fld+1)-1 {
			t.Fatalf("item %d: fields %b marked, read to %d", k, seen, fld)
		}
		if !reflect.DeepEqual(got, it) {
			t.Fatalf("item %d:\nread %+v\nwant %+v", k, got, it)
		}
	}
}

// mutations are the bytes the differential test puts into frames: number,
// string and structure syntax, escapes, keys in another case, long and
// leading-zero counts.
var mutations = []string{"0", "1", "9", "-", ".", "e", "E", `"`, `\`, ",", ":", "}", "]", "[", "{", " ", "\n", "a",
	"null", `\u0041`, `\"`, "00", "1234567890123456789", "\x01", "é", `"PASS":`, `"pass":`, `"rtHist":[`, `"hot":[]`}

// mutate changes one to three places in frame's items, and sometimes cuts
// it short.
func mutate(r *rand.Rand, frame []byte) []byte { return mutateWith(r, frame, mutations) }

// mutateWith is mutate with the given mutations: in a frame without
// items, anywhere.
func mutateWith(r *rand.Rand, frame []byte, mutations []string) []byte {
	out := slices.Clone(frame)
	lo := max(0, bytes.Index(out, []byte(`"items":[`)))
	for n := 1 + r.IntN(3); n > 0 && len(out) > lo+1; n-- {
		p := lo + r.IntN(len(out)-lo)
		s := []byte(mutations[r.IntN(len(mutations))])
		switch r.IntN(5) {
		case 4: // whitespace where JSON allows it, after a comma or colon
			if q := bytes.IndexAny(out[p:], ",:"); q >= 0 {
				out = slices.Insert(out, p+q+1, " \n\t\r"[r.IntN(4)])
			}
		case 0:
			out = slices.Insert(out, p, s...)
		case 1:
			out = slices.Delete(out, p, p+1)
		case 2:
			out = slices.Replace(out, p, p+1, s...)
		default: // repeat a stretch: a key, a value, a whole field
			end := min(len(out), p+1+r.IntN(40))
			out = slices.Insert(out, p, out[p:end]...)
		}
	}
	if r.IntN(20) == 0 {
		out = out[:r.IntN(len(out))]
	}
	return out
}

// renamed gives m prev's instance and the names of prev's items by index,
// as a sender's next frame has them, some of them changed by a byte or
// cut or grown, so that a name is compared with the previous frame's in
// every way.
func renamed(r *rand.Rand, m, prev *Buckets) {
	m.Instance = changed(r, prev.Instance)
	for i := range m.Items {
		if i >= len(prev.Items) {
			return
		}
		m.Items[i].Resource = changed(r, prev.Items[i].Resource)
	}
}

// changed is name, or name changed by a byte, cut or grown.
func changed(r *rand.Rand, name string) string {
	switch r.IntN(6) {
	case 0:
		if name != "" {
			name = name[:r.IntN(len(name))]
		}
	case 1:
		name += mutations[r.IntN(len(mutations))]
	case 2:
		if name != "" {
			p := r.IntN(len(name))
			name = name[:p] + mutations[r.IntN(len(mutations))] + name[p+1:]
		}
	}
	return name
}

// decodeAlike decodes frame with fast (the plain reader on) and general
// (off), and fails unless both return equal messages or the very same
// error: kind, field and message.
func decodeAlike(t *testing.T, fast, general *Decoder, frame []byte) error {
	t.Helper()
	m1, err1 := fast.Decode(frame)
	m2, err2 := general.Decode(frame)
	if fmt.Sprint(err1) != fmt.Sprint(err2) {
		t.Fatalf("errors differ:\nplain   %v\ngeneral %v\nframe %q", err1, err2, frame)
	}
	if err1 == nil && !reflect.DeepEqual(normalize(m1), normalize(m2)) {
		t.Fatalf("values differ:\nplain   %+v\ngeneral %+v\nframe %q", m1, m2, frame)
	}
	return err1
}

// TestPlainItemAgreesWithGeneral holds the plain item reader to the
// general loop it stands in for, on a stream of frames from one sender
// (names repeated, changed and cut at the same index, so the comparison
// with the previous frame's name is exercised) and on the same frames
// damaged: the same values, or the same error, every time.
func TestPlainItemAgreesWithGeneral(t *testing.T) {
	g := newGen(5)
	r := g.r
	var fast Decoder
	general := Decoder{general: true}
	prev := g.buckets()
	var ok, failed int
	n := racetest.Cases(6000)
	for k := range n {
		m := g.buckets()
		if r.IntN(4) > 0 {
			renamed(r, m, prev)
		}
		frame := AppendBuckets(nil, m)
		if r.IntN(2) == 0 {
			frame = mutate(r, frame)
		}
		if err := decodeAlike(t, &fast, &general, frame); err != nil {
			failed++
		} else {
			ok++
		}
		if k%3 > 0 {
			prev = m
		}
	}
	// A name that cannot be compared as bytes: a backslash at its end
	// would match the start of `a\",...`, whose value goes on past it.
	for _, names := range [][2]string{{`a\`, `a","start":1000,"pass":1}`}, {`a"`, `a"`}, {"x\x01", "x\x01"}, {"é", "é"}} {
		for _, name := range names {
			m := &Buckets{Header: Header{Ts: 1000, Instance: name}, BucketMs: 500, Items: []BucketItem{{Resource: name, Start: 1000}}}
			frame := AppendBuckets(nil, m)
			decodeAlike(t, &fast, &general, frame)
			decodeAlike(t, &fast, &general, []byte(strings.Replace(string(frame), `\\"`, `\"`, 1)))
		}
	}
	if ok < n/4 || failed < n/4 {
		t.Fatalf("%d frames accepted, %d rejected: the stream should hold many of both", ok, failed)
	}
}
