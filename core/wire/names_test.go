package wire

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

func bucketsFrame(instance string, resources ...string) []byte {
	b := []byte(`{"v":1,"kind":"buckets","ts":1764460800512,"instance":"` + instance + `","bucketMs":500,"items":[`)
	for i, r := range resources {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"resource":%q,"start":1764460800000,"pass":1,"block":0,"complete":1,"error":0,"slow":0,"rtSum":3,"rtMin":3,"rtMax":3,"concurrency":0}`, r)
	}
	return append(b, "]}"...)
}

// Decoders sharing a pool hand out the one copy of a name, whichever way
// they read it (the fast path for the encoder's shape, the general loop).
func TestSharedNamesAreOneCopy(t *testing.T) {
	for _, general := range []bool{false, true} {
		pool := NewNamePool(0, 0)
		var first []string
		for c := range 3 {
			d := NewDecoder(Limits{})
			d.general = general
			d.ShareNames(pool)
			for frame := range 2 { // the second frame compares with the first's names
				m, err := d.Decode(bucketsFrame(fmt.Sprintf("i-%d", c), "GET:/a", "GET:/b"))
				if err != nil {
					t.Fatal(err)
				}
				b := m.(*Buckets)
				if first == nil {
					first = []string{b.Items[0].Resource, b.Items[1].Resource}
				}
				for k, it := range b.Items {
					if it.Resource != first[k] || unsafe.StringData(it.Resource) != unsafe.StringData(first[k]) {
						t.Fatalf("general %v, connection %d, frame %d: %q is a copy of its own", general, c, frame, it.Resource)
					}
				}
			}
		}
		if st := pool.Stats(); st.Names != 5 || st.Refused != 0 { // 2 resources, 3 instances
			t.Fatalf("general %v: pool %+v, want 5 names", general, st)
		}
	}
}

// A full pool takes no more; the names it refused are still read right,
// by the Decoder's own set, and the pool keeps within its bounds.
func TestFullPoolFallsBackToTheDecoder(t *testing.T) {
	pool := NewNamePool(4, 64)
	d := NewDecoder(Limits{})
	d.ShareNames(pool)
	for f := range 40 {
		names := []string{fmt.Sprintf("res-%d", f), "GET:/a", fmt.Sprintf("other-%d-with-a-longer-name", f)}
		m, err := d.Decode(bucketsFrame("i-1", names...))
		if err != nil {
			t.Fatal(err)
		}
		for k, it := range m.(*Buckets).Items {
			if it.Resource != names[k] {
				t.Fatalf("frame %d item %d: %q read as %q", f, k, names[k], it.Resource)
			}
		}
		if st := pool.Stats(); st.Names > 4 || st.Bytes > 64 {
			t.Fatalf("frame %d: pool past its bounds: %+v", f, st)
		}
	}
	if st := pool.Stats(); st.Refused == 0 {
		t.Fatalf("pool %+v refused nothing", st)
	}
	if len(d.names.m) == 0 {
		t.Fatal("the names the pool refused were not kept by the decoder")
	}
	// What each holds is told: the pool's names and the decoder's own.
	if st := pool.Stats(); st.Held() != int64(st.Bytes+st.Names*nameEntryBytes) || st.Held() == 0 {
		t.Errorf("pool %+v holds %d", st, st.Held())
	}
	own := int64(0)
	for name := range d.names.m {
		own += int64(len(name)) + nameEntryBytes
	}
	if d.NameBytes() != own {
		t.Errorf("the decoder tells %d bytes of names, it holds %d", d.NameBytes(), own)
	}
}

// A Decoder's own names are bounded (a MiB, then emptied) and told,
// whatever a peer sends.
func TestDecoderNameBytesBounded(t *testing.T) {
	d := NewDecoder(Limits{})
	most := int64(0)
	for f := range 3000 {
		long := strings.Repeat(fmt.Sprintf("%06d", f), 80) // 480 bytes, another each frame
		if _, err := d.Decode(bucketsFrame("i-1", long)); err != nil {
			t.Fatal(err)
		}
		most = max(most, d.NameBytes())
	}
	if most < 1<<19 || most > 1<<20+(1<<20/480+1)*nameEntryBytes {
		t.Fatalf("at most %d bytes of names told, want about a MiB", most)
	}
}

// Connections decode at once on several goroutines (run with -race).
func TestNamePoolConcurrent(t *testing.T) {
	pool := NewNamePool(0, 0)
	var wg sync.WaitGroup
	got := make([]string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := NewDecoder(Limits{})
			d.ShareNames(pool)
			for f := range 200 {
				m, err := d.Decode(bucketsFrame(fmt.Sprintf("i-%d", g), "shared", fmt.Sprintf("own-%d-%d", g, f%5)))
				if err != nil {
					t.Error(err)
					return
				}
				got[g] = m.(*Buckets).Items[0].Resource
			}
		}()
	}
	wg.Wait()
	for g := range got {
		if unsafe.StringData(got[g]) != unsafe.StringData(got[0]) {
			t.Fatalf("goroutine %d holds a copy of its own of %q", g, got[g])
		}
	}
	if st := pool.Stats(); st.Names != 1+8+8*5 {
		t.Fatalf("pool %+v, want %d names", st, 1+8+8*5)
	}
}
