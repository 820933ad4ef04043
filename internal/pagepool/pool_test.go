package pagepool

import (
	"bytes"
	"sync"
	"testing"
)

func TestPoolHandsOutDistinctPagesUpToItsBound(t *testing.T) {
	p := New(4096, 10*4096+100) // rounded down: 10 pages
	defer p.Release()
	var pages [][]byte
	for i := range 10 {
		b := p.Get()
		if b == nil {
			t.Fatalf("Get %d: nil before the bound", i)
		}
		if len(b) != 0 || cap(b) != 4096 {
			t.Fatalf("Get %d: len %d cap %d, want 0 and 4096", i, len(b), cap(b))
		}
		b = append(b, bytes.Repeat([]byte{byte(i)}, 4096)...)
		pages = append(pages, b)
	}
	if b := p.Get(); b != nil {
		t.Fatalf("Get past the bound: a page of cap %d, want nil", cap(b))
	}
	// Each page kept what was written to it: no two overlap.
	for i, b := range pages {
		if !bytes.Equal(b, bytes.Repeat([]byte{byte(i)}, 4096)) {
			t.Fatalf("page %d was overwritten", i)
		}
	}
	st := p.Stats()
	if st.Out != 10 || st.Free != 0 {
		t.Fatalf("stats %+v, want 10 out, none free", st)
	}
	if OutsideHeap && (st.Mapped != 10*4096 || st.Touched != 10*4096) {
		t.Fatalf("stats %+v: want 40960 bytes mapped and touched", st)
	}
	if !OutsideHeap && st.Mapped != 0 {
		t.Fatalf("stats %+v: nothing is mapped here", st)
	}
}

func TestPoolReusesPagesGivenBack(t *testing.T) {
	p := New(256, 2*256)
	defer p.Release()
	a, b := p.Get(), p.Get()
	a = append(a, "first"...)
	p.Put(a)
	if st := p.Stats(); st.Out != 1 || st.Free != 1 {
		t.Fatalf("after a Put: %+v, want 1 out, 1 free", st)
	}
	c := p.Get()
	if len(c) != 0 || cap(c) != 256 {
		t.Fatalf("a page given back comes back as len %d cap %d", len(c), cap(c))
	}
	if &c[:1][0] != &a[0] {
		t.Fatal("the page given back was not the one handed out next")
	}
	if p.Get() != nil {
		t.Fatal("a third page out of two")
	}
	p.Put(b)
	p.Put(c)
	if st := p.Stats(); st.Out != 0 || st.Free != 2 || (OutsideHeap && st.Touched != 512) {
		t.Fatalf("all given back: %+v, want 0 out, 2 free, 512 bytes touched", st)
	}
}

func TestPoolMapsNothingUntilAsked(t *testing.T) {
	p := New(4096, 1<<30)
	if st := p.Stats(); st.Mapped != 0 || st.Touched != 0 {
		t.Fatalf("a new pool holds %+v, want nothing", st)
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestPoolReleased(t *testing.T) {
	p := New(4096, 4*4096)
	b := p.Get()
	if err := p.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := p.Release(); err != nil {
		t.Fatalf("Release twice: %v", err)
	}
	if p.Get() != nil {
		t.Fatal("a released pool handed out a page")
	}
	p.Put(b) // taken and forgotten: its memory is gone
	if st := p.Stats(); st.Mapped != 0 || st.Free != 0 || !st.Released {
		t.Fatalf("a released pool holds %+v", st)
	}
}

func TestPoolEmptyBound(t *testing.T) {
	for _, max := range []int64{0, -1, 100} {
		p := New(4096, max)
		if b := p.Get(); b != nil {
			t.Fatalf("a pool of %d bytes handed out a page of 4096", max)
		}
		p.Release()
	}
}

func TestPoolPutOfAStranger(t *testing.T) {
	p := New(4096, 4096)
	defer p.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("Put of a slice of another size did not panic")
		}
	}()
	p.Put(make([]byte, 0, 100))
}

func TestPoolConcurrent(t *testing.T) {
	const pages = 64
	p := New(512, pages*512)
	defer p.Release()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				b := p.Get()
				if b == nil {
					continue // the others hold them all
				}
				b = append(b, byte(g), byte(i))
				if b[0] != byte(g) || b[1] != byte(i) {
					t.Errorf("page shared while out")
				}
				p.Put(b)
			}
		}()
	}
	wg.Wait()
	if st := p.Stats(); st.Out != 0 || st.Free > pages {
		t.Fatalf("after the goroutines: %+v", st)
	}
}
