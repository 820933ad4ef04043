package bench

import (
	"encoding/json"
	"testing"

	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/jsonref"
)

// The reference decodes what the fleet's agents send: a real agent's
// buckets messages, every resource in every bucket, the calls and the one
// in ten failing as made; and both decoders read the same items from them,
// so that their times are of the same work.
func TestReferenceFramesAreTheFleets(t *testing.T) {
	const resources, rate, buckets = 7, 4.0, 12
	frames, items, err := fleetFrames(resources, rate, buckets)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != buckets || items != buckets*resources {
		t.Fatalf("%d buckets messages, %d items; want %d, %d", len(frames), items, buckets, buckets*resources)
	}
	names := resourceNames(resources)
	dec := wire.NewDecoder(wire.Limits{})
	var pass, failed int64
	for i, f := range frames {
		m, err := dec.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		b, ok := m.(*wire.Buckets)
		if !ok || b.Instance != instanceName(1) || len(b.Items) != resources {
			t.Fatalf("message %d: %T with %d items, want the buckets of %s, one item a resource", i, m, len(b.Items), instanceName(1))
		}
		var j jsonref.Buckets
		if err := json.Unmarshal(f, &j); err != nil {
			t.Fatal(err)
		}
		if len(j.Items) != len(b.Items) {
			t.Fatalf("message %d: encoding/json read %d items, the wire %d", i, len(j.Items), len(b.Items))
		}
		for k, it := range b.Items {
			ji := j.Items[k]
			if it.Resource != names[k] || ji.Resource != it.Resource || ji.Pass != it.Pass || ji.Error != it.Error ||
				ji.Start != it.Start || ji.RtHist == nil || *ji.RtHist != it.Hist {
				t.Fatalf("message %d item %d: wire %+v, encoding/json %+v", i, k, it, ji)
			}
			if it.Pass != int64(rate/2) {
				t.Errorf("message %d item %d: %d calls, want %g a 500 ms bucket", i, k, it.Pass, rate/2)
			}
			pass += it.Pass
			failed += it.Error
		}
	}
	// Every resource is called once a round, rate/2 rounds a bucket, and
	// every tenth round's calls fail (the first's too).
	rounds := int64(rate / 2 * buckets)
	if want, wantFailed := rounds*resources, (rounds+9)/10*resources; pass != want || failed != wantFailed {
		t.Errorf("%d calls, %d failed; want %d, %d failed", pass, failed, want, wantFailed)
	}
	ref, err := measureReference(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ref.frames != referenceBuckets || ref.items != 3*referenceBuckets || ref.jsonNs <= 0 || ref.wireNs <= 0 {
		t.Errorf("reference %+v", ref)
	}
}
