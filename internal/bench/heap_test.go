package bench

import (
	"runtime"
	"testing"
)

// The window's heap samples read what runtime.MemStats.HeapInuse says,
// without stopping the world.
func TestHeapReaderIsHeapInuse(t *testing.T) {
	h := newHeapReader()
	keep := make([][]byte, 0, 64)
	for i := range 64 {
		keep = append(keep, make([]byte, 64<<10+i))
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	got := h.read()
	runtime.KeepAlive(keep)
	// Nothing of size runs between the two reads; the runtime's own
	// bookkeeping can move a span or two.
	if d := int64(got) - int64(ms.HeapInuse); got < 4<<20 || d > 256<<10 || d < -256<<10 {
		t.Fatalf("heapReader read %d, MemStats.HeapInuse %d", got, ms.HeapInuse)
	}
	if a := testing.AllocsPerRun(100, func() { h.read() }); a != 0 {
		t.Fatalf("a read allocates %v times", a)
	}
}
