package wire

import (
	"reflect"
	"testing"
)

// Decoders sharing a Scratch, taking turns as a poller's connections do,
// decode every message as a Decoder of its own does, hot items and all;
// the message one returned is the Scratch's, rewritten by the next Decode
// of any of them, as documented; and a Decoder told nil decodes into its
// own again.
func TestDecodersShareScratch(t *testing.T) {
	g := newGen(7)
	var sc Scratch
	shared := make([]*Decoder, 3)
	alone := make([]*Decoder, 3)
	for i := range shared {
		shared[i], alone[i] = NewDecoder(Limits{}), NewDecoder(Limits{})
		shared[i].ShareScratch(&sc)
	}
	buckets, hot := 0, 0
	for k := range 3000 {
		m := g.message()
		line, err := Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		i := k % len(shared)
		got, gerr := shared[i].Decode(line)
		want, werr := alone[i].Decode(line)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Fatalf("message %d (%s): shared %v %#v, alone %v %#v", k, m.Kind(), gerr, got, werr, want)
		}
		if b, ok := got.(*Buckets); ok {
			buckets++
			if b != &sc.b {
				t.Fatalf("message %d: buckets decoded outside the shared scratch", k)
			}
			for _, it := range b.Items {
				hot += len(it.Hot)
			}
		}
	}
	if buckets < 1000 || hot == 0 {
		t.Fatalf("%d buckets messages, %d hot items: the case does not exercise the scratch", buckets, hot)
	}
	shared[0].ShareScratch(nil)
	line, _ := Marshal(g.buckets())
	m, err := shared[0].Decode(line)
	if err != nil || m.(*Buckets) == &sc.b {
		t.Fatalf("told nil, the decoder still decodes into the shared scratch (%v)", err)
	}
}
