package wire

import "sync"

// NamePool is a set of names shared by the Decoders of many connections,
// such as a collector's: a fleet sends the same few resource names on every
// connection, and with a pool each is kept once. Comparing a frame's names
// with the ones its Decoder read last then reads bytes the other
// connections keep in the processor's caches, and what the decoded names
// are stored under compares by pointer. A Decoder without one keeps its
// own copies.
//
// It is bounded: once it holds its most names or bytes it takes no more,
// and a Decoder keeps a name it refused in its own set, so that a peer
// sending endless random names fills the pool once and then costs its own
// connection alone. Safe for concurrent use.
type NamePool struct {
	mu       sync.Mutex
	m        map[string]string
	bytes    int
	maxNames int
	maxBytes int
	refused  int64
}

// The default bounds of a NamePool.
const (
	DefaultPoolNames = 1 << 16
	DefaultPoolBytes = 4 << 20
)

// NewNamePool returns a pool of at most maxNames names and maxBytes bytes
// of them; a bound <= 0 takes its default (DefaultPoolNames,
// DefaultPoolBytes).
func NewNamePool(maxNames, maxBytes int) *NamePool {
	if maxNames <= 0 {
		maxNames = DefaultPoolNames
	}
	if maxBytes <= 0 {
		maxBytes = DefaultPoolBytes
	}
	return &NamePool{m: map[string]string{}, maxNames: maxNames, maxBytes: maxBytes}
}

// Intern returns the pool's copy of b, adding it when there is room; false
// when b is not in the pool and does not fit. b is not kept.
func (p *NamePool) Intern(b []byte) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.m[string(b)]; ok {
		return s, true
	}
	if len(p.m) >= p.maxNames || p.bytes+len(b) > p.maxBytes {
		p.refused++
		return "", false
	}
	s := string(b)
	p.m[s] = s
	p.bytes += len(s)
	return s, true
}

// PoolStats is what a NamePool holds.
type PoolStats struct {
	Names, Bytes int
	// Refused counts the names it had no room for.
	Refused int64
}

// Held estimates the memory the names take: their bytes and a map entry
// each.
func (s PoolStats) Held() int64 { return int64(s.Bytes) + int64(s.Names)*nameEntryBytes }

// nameEntryBytes estimates what a kept name costs beyond its bytes: the
// map entry holding it (two string headers and the map's own).
const nameEntryBytes = 48

// Stats returns what the pool holds.
func (p *NamePool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Names: len(p.m), Bytes: p.bytes, Refused: p.refused}
}

// NameBytes estimates the memory of the names the Decoder keeps itself:
// all it has read without a pool, those the pool had no room for with
// one. At most a MiB of names and their map entries.
func (d *Decoder) NameBytes() int64 {
	return int64(d.names.bytes) + int64(len(d.names.m))*nameEntryBytes
}

// ShareNames makes the Decoder take its resource and instance names from p
// (nil: its own set again). Hot-parameter values, which vary by request, are
// kept by the Decoder alone.
func (d *Decoder) ShareNames(p *NamePool) { d.names.pool = p }
