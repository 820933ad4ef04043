package fleetbench

import (
	"testing"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Each round encodes every instance's next bucket of every resource, a
// valid wire v1 frame that a decoder reads back as it was built.
func TestRoundsEncodeEachInstancesNextBucket(t *testing.T) {
	const t0 = int64(1764460800000)
	f := NewRounds(t0, []string{"gw-1", "gw-2"}, Names(3))
	for round := range 2 {
		if end := f.Next(); end != t0+int64(round+1)*500 {
			t.Fatalf("round %d ends at %d", round, end-t0)
		}
		for i, inst := range f.Insts {
			var dec wire.Decoder
			m, err := dec.Decode(f.Bufs[i])
			if err != nil {
				t.Fatal(err)
			}
			b := m.(*wire.Buckets)
			if b.Instance != inst || len(b.Items) != 3 || b.Items[2].Start != t0+int64(round)*500 || b.Items[2].Resource != "GET:http://svc-2/api/resource/2" {
				t.Fatalf("round %d, %s: %+v", round, inst, b)
			}
		}
	}
}
