package pagepool

import "sync"

// Pool is a bounded set of pages of one size. It is safe for concurrent
// use. The zero Pool is not usable: see New.
type Pool struct {
	mu       sync.Mutex
	pageSize int
	pages    int // at most, handed out at once
	// mem is the mapping pages are cut from, made at the first Get (nil
	// on systems without one, or when it failed: pages then come from the
	// heap).
	mem    []byte
	mapped bool
	next   int      // pages cut from mem so far
	free   [][]byte // pages given back, for the next Gets
	out    int      // pages handed out and not given back
	// released is set by Release: Get then hands out nothing.
	released bool
}

// Stats is what a pool holds.
type Stats struct {
	// Out is how many pages are handed out, Free how many are kept for
	// the next Gets.
	Out, Free int
	// Mapped is the size of the pool's own mapping (0: its pages are on
	// the Go heap); Touched how much of it pages were ever cut from, what
	// the system may hold in memory for it.
	Mapped, Touched int64
	// Released: Release was called.
	Released bool
}

// New is a pool of pages of pageSize bytes, at most maxBytes of them
// handed out at once (rounded down to whole pages). Nothing is mapped
// until the first Get.
func New(pageSize int, maxBytes int64) *Pool {
	if pageSize <= 0 {
		panic("pagepool: page size must be positive")
	}
	return &Pool{pageSize: pageSize, pages: int(max(maxBytes, 0) / int64(pageSize))}
}

// PageSize is the size of the pool's pages.
func (p *Pool) PageSize() int { return p.pageSize }

// Get is a page: length 0, capacity PageSize, its bytes whatever they
// were (a page given back keeps what was written to it). It is nil when
// the pool's pages are all handed out, or the pool was released.
func (p *Pool) Get() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released || p.out >= p.pages {
		return nil
	}
	p.out++
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return b
	}
	if !p.mapped {
		p.mapped = true
		p.mem = mapPages(p.pageSize * p.pages)
	}
	if p.mem != nil {
		at := p.next * p.pageSize
		p.next++
		return p.mem[at : at : at+p.pageSize]
	}
	return make([]byte, 0, p.pageSize)
}

// Put gives back a page Get handed out, for the next Get. Nothing may
// touch it after, through b or any other slice of it.
func (p *Pool) Put(b []byte) {
	if cap(b) != p.pageSize {
		panic("pagepool: Put of a slice that is not one of the pool's pages")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return
	}
	p.out--
	p.free = append(p.free, b[:0])
}

// Stats is what the pool holds now.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Out: p.out, Free: len(p.free), Mapped: int64(len(p.mem)), Touched: int64(p.next * p.pageSize), Released: p.released}
}

// Release gives the pool's mapping back to the system: no page it handed
// out may be touched after (on the heap, they are left to the GC). A
// released pool hands out nothing. Release twice is once.
func (p *Pool) Release() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return nil
	}
	p.released = true
	mem := p.mem
	p.mem, p.free = nil, nil
	if mem == nil {
		return nil
	}
	return unmapPages(mem)
}
