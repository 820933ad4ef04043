//go:build linux

package source

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/quietsys"
)

// pollBatch is the least time between two looks of a poller at its
// connections: what arrived meanwhile is read in one pass, so the cost of
// waking for a message is shared by the messages of pollBatch, and a
// message waits at most that long more (snapshots are 250 ms apart).
const pollBatch = 10 * time.Millisecond

// pollers read the connections of plain (ws://) targets past their
// handshake: a few goroutines, one per processor, each waiting on its own
// epoll set, where each connection would have its own goroutine woken by the
// runtime for every message. A target's dial loop still runs its
// connection's life: it hands the connection over (serve) and waits for its
// end. TLS connections are read by their own goroutine.
type pollers struct {
	loops []*pollLoop
	wg    sync.WaitGroup
}

// A new connection goes to the first poller that holds fewer than
// connsPerLoop connections and spent less than busyPerMille of the last
// second reading and ingesting: a fleet one poller reads easily is read by
// one. The store's lock serializes what the pollers ingest anyway, so two
// pollers reading a small fleet only hand the lock and the store's shared
// parts (an app's rings, which its every instance writes) back and forth
// between two processors' caches at every message: at 2,000 targets one
// poller cost 12 % less CPU an item than two, 9 runs each (docs/BENCHMARKS.md). A
// connection that carries much (a re-served fleet) makes its poller busy,
// and the next goes to another.
const (
	connsPerLoop = 2500
	busyPerMille = 250
)

// newPollers starts one loop per processor; nil (each connection read by
// its goroutine) when the system refuses an epoll set.
func newPollers() *pollers {
	p := &pollers{}
	napping := new(atomic.Int32)
	for range runtime.GOMAXPROCS(0) {
		l, err := newPollLoop()
		if err != nil {
			p.close()
			return nil
		}
		l.napping = napping
		p.loops = append(p.loops, l)
	}
	for _, l := range p.loops {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			l.run()
		}()
	}
	return p
}

// close ends the loops, and any connection still read by one; they close
// their descriptors before returning.
func (p *pollers) close() {
	if p == nil {
		return
	}
	for _, l := range p.loops {
		l.mu.Lock()
		l.stop = true
		l.mu.Unlock()
		l.wakeUp()
	}
	p.wg.Wait()
	for _, l := range p.loops {
		l.close()
	}
}

// serve reads a connection until it ends, from fd (its own descriptor of
// the socket, which serve closes) after rest (what was read with the
// handshake), messages at most maxFrame bytes, dropped when silent for
// idle; it returns why it ended.
func (p *pollers) serve(ctx context.Context, s *stream, fd int, rest []byte, maxFrame int, idle time.Duration) error {
	now := time.Now()
	ps := &polled{s: s, fd: fd, fr: frameReader{max: maxFrame}, idle: idle, maxFrame: maxFrame, last: now, now: now, done: make(chan struct{})}
	// Its reads must never wait (quietsys.Recv): made so here, whatever the
	// descriptor was given as.
	if err := syscall.SetNonblock(fd, true); err != nil {
		ps.finish(fmt.Errorf("poller: %w", err))
		return ps.err
	}
	if len(rest) > 0 {
		used, err := ps.fr.feed(rest, ps)
		if err != nil {
			ps.finish(err)
			return ps.err
		}
		ps.keep(rest[used:])
	}
	l := p.pick()
	if err := l.add(ps); err != nil {
		ps.finish(err)
		return ps.err
	}
	select {
	case <-ps.done:
	case <-ctx.Done():
		l.remove(ps, ctx.Err())
		<-ps.done
	}
	return ps.err
}

// pick is the poller a new connection joins: the first with room (fewer
// than connsPerLoop connections, less than busyPerMille busy); else the
// one with the fewest connections among those not busy; else the least
// busy.
func (p *pollers) pick() *pollLoop {
	var fewest, idlest *pollLoop
	for _, l := range p.loops {
		n, busy := l.conns.Load(), l.busy.Load()
		if busy < busyPerMille {
			if n < connsPerLoop {
				return l
			}
			if fewest == nil || n < fewest.conns.Load() {
				fewest = l
			}
		}
		if idlest == nil || busy < idlest.busy.Load() {
			idlest = l
		}
	}
	if fewest != nil {
		return fewest
	}
	return idlest
}

// pollLoop is one poller: an epoll set and the connections in it. Its
// goroutine reads and ingests with mu held; adding and removing a
// connection take mu too.
//
// The connections are in the set edge-triggered: a look reports a
// connection when data arrived since it was last reported, not again
// while data waits. A connection is read until a read comes back short
// (nothing more waited then: what arrives after is a new edge), or up to
// readsPerPass buffers, and then it is read again on the next pass
// without waiting for an edge (later). Once the peer closed its side, no
// edge follows: the connection is read to its end (polled.hup).
// Level-triggered, the kernel polled every connection read in a pass once
// more at the next look, only to find it empty: at 2,000 targets those
// polls of cold sockets were 3.5 % of the collector's CPU
// (docs/BENCHMARKS.md).
type pollLoop struct {
	epfd    int
	wake    [2]int // a pipe whose read end is in the set as id 0
	mu      sync.Mutex
	streams connTable
	conns   atomic.Int32 // streams.n, read without mu (pollers.pick)
	// busy is the share of the last second (per mille) its goroutine
	// spent in passes, reading and ingesting (pollers.pick); busyNs and
	// busyFrom are the second under way, the goroutine's own.
	busy   atomic.Int32
	busyNs int64
	// events counts the events its looks took in the second under way;
	// looking says the last second's were keepLookingEvents or more.
	events   int
	looking  atomic.Bool
	waits    atomic.Int64 // looks that could wait in the set
	busyFrom time.Time
	// later are the connections a pass left data unread in, read again
	// by the next pass (polled.later says a connection is here).
	later  []*polled
	stop   bool
	failed error  // why the loop ended while the collector was not stopping
	buf    []byte // read into, for connections with no frame begun
	// batch makes a pass's first reads of the connections its look found
	// readable in one system call (nil where the kernel refuses it: each
	// is read with a call of its own); slots are their buffers, batchSlot
	// bytes each, and ready and queued the pass's connections and reads.
	batch  *quietsys.Batch
	slots  []byte
	ready  []*polled
	queued []queuedRead
	// batched counts the reads made in batches, for the tests; retired is
	// a batch whose ring failed (quietsys.Batch.Broken), kept with the
	// buffers the kernel may still write for the loop's life, its ring
	// left open (close does not close it).
	batched int64
	retired *quietsys.Batch
	// scratch is what its connections' decoders decode buckets into: one
	// for them all, in the caches, since its goroutine ingests each
	// message before it reads the next (wire.Scratch).
	scratch wire.Scratch
	sweep   time.Duration // how often silent connections are looked for
	// napping counts the loops of its pollers napping holding their
	// processors (nap).
	napping *atomic.Int32
}

func newPollLoop() (*pollLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	l := &pollLoop{epfd: epfd, buf: make([]byte, 64<<10), sweep: time.Second, napping: new(atomic.Int32)}
	if b, err := quietsys.NewBatch(batchReads); err == nil {
		l.batch = b
	}
	if err := syscall.Pipe2(l.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		l.close()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wake[0], &ev); err != nil {
		l.close()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	return l, nil
}

// close releases the loop's descriptors, once its goroutine has ended
// (or never ran).
func (l *pollLoop) close() {
	syscall.Close(l.epfd)
	if l.wake != [2]int{} {
		syscall.Close(l.wake[0])
		syscall.Close(l.wake[1])
	}
	if l.batch != nil {
		l.batch.Close()
	}
}

// epollET is EPOLLET as the events' type holds it (syscall.EPOLLET is a
// negative int).
const epollET = 1 << 31

// connTable is a loop's connections, by the id its epoll set reports
// each with: the index of its slot plus one in the id's low 32 bits (0 is
// the loop's wake pipe), and in its high ones the table's count of
// connections added when it came, so that an event taken for a
// connection since ended finds no other in its slot. Finding a readable
// connection is one load from a slice; a map's lookup was 1.4 % of the
// collector's CPU at 2,000 targets (docs/BENCHMARKS.md).
type connTable struct {
	slots []*polled
	free  []uint32 // slots of connections ended, to be taken again
	added uint32
	n     int // connections held
}

// add gives ps a slot and its id (ps.id).
func (t *connTable) add(ps *polled) {
	var i uint32
	if k := len(t.free); k > 0 {
		i, t.free = t.free[k-1], t.free[:k-1]
	} else {
		i = uint32(len(t.slots))
		t.slots = append(t.slots, nil)
	}
	t.added++
	t.slots[i] = ps
	ps.id = uint64(i+1) | uint64(t.added)<<32
	t.n++
}

// get is the connection of id, nil when none is held under it.
func (t *connTable) get(id uint64) *polled {
	i := uint32(id) - 1
	if int(i) < len(t.slots) {
		if ps := t.slots[i]; ps != nil && ps.id == id {
			return ps
		}
	}
	return nil
}

// remove takes ps out, when it is held.
func (t *connTable) remove(ps *polled) {
	if t.get(ps.id) != ps {
		return
	}
	i := uint32(ps.id) - 1
	t.slots[i] = nil
	t.free = append(t.free, i)
	t.n--
}

func (l *pollLoop) wakeUp() { syscall.Write(l.wake[1], []byte{0}) }

func (l *pollLoop) add(ps *polled) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return fmt.Errorf("poller: %w", l.failed)
	}
	if l.stop {
		return errors.New("the collector is stopping")
	}
	l.streams.add(ps)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET, Fd: int32(uint32(ps.id)), Pad: int32(uint32(ps.id >> 32))}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, ps.fd, &ev); err != nil {
		l.streams.remove(ps)
		return fmt.Errorf("epoll: %w", err)
	}
	l.conns.Store(int32(l.streams.n))
	ps.s.dec.ShareScratch(&l.scratch)
	// A silent connection is dropped within half its idle timeout of it.
	l.sweep = min(l.sweep, max(ps.idle/2, time.Millisecond))
	return nil
}

// remove ends a connection that is still read, with err.
func (l *pollLoop) remove(ps *polled, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams.get(ps.id) == ps {
		l.end(ps, err)
	}
}

// end takes a connection out of the set and finishes it; mu is held.
func (l *pollLoop) end(ps *polled, err error) {
	l.streams.remove(ps)
	l.conns.Store(int32(l.streams.n))
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, ps.fd, nil)
	ps.s.dec.ShareScratch(nil)
	ps.finish(err)
}

func (l *pollLoop) run() {
	evs := make([]syscall.EpollEvent, batchReads)
	swept := time.Now()
	for {
		l.mu.Lock()
		wait := int(l.sweep.Milliseconds())
		l.mu.Unlock()
		// A look that may wait is the one system call of a pass the
		// scheduler is told of (internal/quietsys), made only when the set has
		// nothing now and the loop is not busy.
		n, err := quietsys.EpollNow(l.epfd, evs)
		if n == 0 && err == nil && !l.keepLooking() && len(l.later) == 0 {
			l.waits.Add(1)
			n, err = syscall.EpollWait(l.epfd, evs, wait)
		}
		l.events += max(n, 0)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			// Not seen: the set is the loop's own. End what it reads, and
			// take no more; their dial loops connect them again.
			l.mu.Lock()
			l.stop, l.failed = true, fmt.Errorf("epoll: %w", err)
			for _, ps := range l.streams.slots {
				if ps != nil {
					l.end(ps, fmt.Errorf("epoll: %w", err))
				}
			}
			l.mu.Unlock()
			return
		}
		now := time.Now()
		l.mu.Lock()
		l.readLeft(now)
		l.ready = l.ready[:0]
		for _, ev := range evs[:max(n, 0)] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if id == 0 {
				var b [64]byte
				quietsys.Read(l.wake[0], b[:])
			} else if ps := l.streams.get(id); ps != nil {
				if ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
					ps.hup = true
				}
				l.ready = append(l.ready, ps)
			}
		}
		l.readReady(now)
		if now.Sub(swept) >= l.sweep {
			swept = now
			for _, ps := range l.streams.slots {
				if ps != nil && now.Sub(ps.last) > ps.idle {
					l.end(ps, fmt.Errorf("stalled: nothing received for %s", ps.idle))
				}
			}
		}
		stop := l.stop
		if stop {
			for _, ps := range l.streams.slots {
				if ps != nil {
					l.end(ps, errors.New("the collector is stopping"))
				}
			}
		}
		l.mu.Unlock()
		if stop {
			return
		}
		took := time.Since(now)
		l.account(now, took)
		if d := pollBatch - took; (n > 0 || l.keepLooking() || len(l.later) > 0) && d > 0 {
			l.nap(d)
		}
	}
}

// nap waits d (less than pollBatch) between two passes of l, in a
// system call that holds the loop's processor, after letting any other
// goroutine waiting for a processor run first. time.Sleep parked the
// goroutine instead, and each of its 100 wakes a second went through the
// runtime's scheduler: the timer, the runtime's network poller waiting
// out the sleep, and another thread woken to look for work and put back
// to sleep (at 2,000 targets, over 12 s: 7,926 epoll_pwait calls against
// 2,282 with naps, 3,925 futex calls against 2,535, 9,095 context
// switches against 6,207; docs/BENCHMARKS.md). The scheduler is told of
// the call, so a goroutine that needs the processor meanwhile gets it
// from the runtime's monitor thread (within its 10 ms tick at most), and
// a collection does not wait for the call to end. The yield first is
// what keeps that monitor quiet: a goroutine that never yields looks to
// it like one running without end, whose processor it takes back every
// 10 ms, checking every 20 µs for a millisecond after.
// Naps hold all processors but one at most (napping counts the loops
// holding one): a loop that would hold the last sleeps as before, so that
// the other goroutines always have one. A goroutine that wants another
// while that one is busy (a snapshot being made) waits for the monitor to
// take a napping loop's, within its tick (at most 10 ms).
func (l *pollLoop) nap(d time.Duration) {
	procs := runtime.GOMAXPROCS(0)
	for {
		n := l.napping.Load()
		if int(n)+1 >= procs {
			time.Sleep(d)
			return
		}
		if l.napping.CompareAndSwap(n, n+1) {
			break
		}
	}
	defer l.napping.Add(-1)
	runtime.Gosched()
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil) // woken early (a signal): the next pass is early
}

// keepLooking says whether the loop looks at its set again after
// pollBatch rather than waiting in it: while its looks found at least
// keepLookingEvents readable connections a second over its last second,
// when waiting would cost more than looking (internal/quietsys).
func (l *pollLoop) keepLooking() bool { return l.looking.Load() }

// keepLookingEvents is the rate of events (a connection found readable
// by a look, a second) from which a loop looks every pollBatch rather
// than wait: two a look. Below it, a loop whose set has nothing waits.
const keepLookingEvents = 2 * int(time.Second/pollBatch)

// account adds a pass begun at start that took d to the second under way,
// and tells busy once the second is over.
func (l *pollLoop) account(start time.Time, d time.Duration) {
	l.busyNs += int64(d)
	if el := start.Sub(l.busyFrom); el >= time.Second {
		l.busy.Store(int32(min(l.busyNs*1000/int64(el), 1000)))
		l.looking.Store(int64(l.events)*int64(time.Second)/int64(el) >= int64(keepLookingEvents))
		l.busyNs, l.busyFrom, l.events = 0, start, 0
	}
}

// batchReads and batchSlot are the most reads of a pass made in one
// system call, as many as a look takes, and the buffer of each. At 2,000
// targets a pass finds 40 connections readable on average, but the
// fleet's messages come in bursts after each bucket's end, and many
// passes find more than 128. A message of up to 20 resources
// (4.3 KB) fits a slot whole; a larger one is read on by readOnce. The
// slots, 4 MiB at most, are taken as passes need them.
const (
	batchReads = 256
	batchSlot  = 16 << 10
)

// queuedRead is a read of a pass's batch: its connection, and the bytes
// held of a frame begun, which the read's bytes follow.
type queuedRead struct {
	ps         *polled
	data, into []byte
}

// readReady reads the connections a look found readable, in its order:
// the first read of each in one system call (a batch) when there are two
// or more and the kernel allows it, then on as read does. mu is held.
func (l *pollLoop) readReady(now time.Time) {
	ready := l.ready
	if l.batch == nil || len(ready) < 2 {
		for _, ps := range ready {
			l.read(ps, now)
		}
		return
	}
	k := min(len(ready), l.batch.Cap())
	if len(l.slots) < k*batchSlot {
		// Doubled, up to the batch's room: a fleet's passes settle on
		// a few sizes.
		l.slots = make([]byte, min(max(k, 2*len(l.slots)/batchSlot), l.batch.Cap())*batchSlot)
	}
	l.batch.Reset()
	l.queued = l.queued[:0]
	for i, ps := range ready[:k] {
		ps.now = now
		data, into := ps.readRoom(l.slots[i*batchSlot : (i+1)*batchSlot])
		l.batch.Recv(ps.fd, into)
		l.queued = append(l.queued, queuedRead{ps: ps, data: data, into: into})
	}
	l.batch.Do()
	l.batched += int64(len(l.queued))
	for i, q := range l.queued {
		// Each connection is still read: the pass holds mu, and a read
		// ends no connection but its own. A read the kernel kept
		// (quietsys.ErrKept: never, but for a failed ring) ends its
		// connection, as any read's error does.
		n, err := l.batch.Result(i)
		if l.took(q.ps, q.data, q.into, n, err) {
			l.read(q.ps, now)
		}
	}
	if l.batch.Broken() {
		// Its slots may still be written: the batch holds them, and the
		// loop holds the batch; reads go one call each from now on.
		l.retired, l.batch, l.slots = l.batch, nil, nil
	}
	// The slots and connections are not kept from the collector; those
	// past the batch's room (none while a look takes no more than a
	// batch holds) are read one call each.
	clear(l.queued)
	for _, ps := range ready[k:] {
		l.read(ps, now)
	}
	clear(ready)
}

// readsPerPass bounds the reads of one connection in one pass: a
// connection with more waiting than a buffer (a reconnect's backlog) is
// read up to this many buffers before the next connection's turn.
const readsPerPass = 8

// read takes what a readable connection has: a read, and more while each
// fills its buffer, up to readsPerPass; a connection left with data
// unread is read again on the loop's next pass (later), since no edge
// reports it again. mu is held.
func (l *pollLoop) read(ps *polled, now time.Time) {
	for range readsPerPass {
		if !l.readOnce(ps, now) {
			return
		}
	}
	if !ps.later {
		ps.later = true
		l.later = append(l.later, ps)
	}
}

// readLeft reads again the connections the last pass left data unread
// in, those still read. mu is held.
func (l *pollLoop) readLeft(now time.Time) {
	if len(l.later) == 0 {
		return
	}
	left := l.later
	l.later = nil
	for _, ps := range left {
		ps.later = false
		if l.streams.get(ps.id) == ps {
			l.read(ps, now)
		}
	}
	if l.later == nil {
		l.later = left[:0] // its room, for the next pass's
		clear(left)
	}
}

// readOnce reads once; it says whether more may be waiting (the read
// filled its buffer, or the peer closed and its close is still to be
// read), and the connection is still read.
//
// The start of a frame held from the last read goes first into the loop's
// buffer, so that a stream read mid-frame is still read a buffer at a
// time; only a frame begun that is larger than half the buffer is read
// into a room of its own.
func (l *pollLoop) readOnce(ps *polled, now time.Time) (more bool) {
	ps.now = now
	data, into := ps.readRoom(l.buf)
	n, err := quietsys.Recv(ps.fd, into)
	return l.took(ps, data, into, n, err)
}

// readRoom is where ps's next read goes: data, the frame begun it holds,
// in buf with the room after it as into; or, when what it holds is
// larger than half of buf, in a room of the frame's own (ps.pend).
func (ps *polled) readRoom(buf []byte) (data, into []byte) {
	held := len(ps.pend)
	if held <= len(buf)/2 {
		copy(buf, ps.pend)
		return buf[:held], buf[held:]
	}
	if want := ps.room(held); cap(ps.pend) < want {
		grown := make([]byte, held, want)
		copy(grown, ps.pend)
		ps.pend = grown
	}
	return ps.pend[:held], ps.pend[held:cap(ps.pend)]
}

// took takes a read of ps into into, the room after data (n bytes, or
// err): it frames what arrived and keeps the start of a frame left. It
// says whether more may be waiting, as readOnce does.
func (l *pollLoop) took(ps *polled, data, into []byte, n int, err error) (more bool) {
	switch {
	case errors.Is(err, syscall.EAGAIN):
		return false
	case errors.Is(err, syscall.EINTR):
		return true // not read: read again
	case err != nil:
		l.end(ps, fmt.Errorf("read: %w", err))
		return false
	case n == 0:
		l.end(ps, errors.New("closed by the peer without a close frame (unexpected EOF)"))
		return false
	}
	data = data[:len(data)+n]
	used, err := ps.fr.feed(data, ps)
	if err != nil {
		l.end(ps, err)
		return false
	}
	ps.keep(data[used:])
	return n == len(into) || ps.hup
}

// polled is one connection read by a pollLoop.
type polled struct {
	s        *stream
	id       uint64
	fd       int
	fr       frameReader
	pend     []byte // a frame begun, read but not whole yet
	idle     time.Duration
	maxFrame int
	last     time.Time // a message or a ping last arrived
	later    bool      // in its loop's later
	// hup: the peer closed its side (or the connection failed). No edge
	// follows what is left, so the connection is read to its end (EOF,
	// or an error), not only until a read comes back short.
	hup  bool
	now  time.Time // of the read being taken
	done chan struct{}
	err  error // why it ended, once done is closed
}

// keep holds tail, the start of a frame, until what follows it is read;
// tail may be in pend itself. pend is kept when tail fits it and it is no
// larger than the room tail's frame may have.
func (ps *polled) keep(tail []byte) {
	switch {
	case len(tail) == 0:
		ps.pend = nil
	case len(tail) <= cap(ps.pend) && cap(ps.pend) <= ps.room(len(tail)):
		ps.pend = ps.pend[:copy(ps.pend[:cap(ps.pend)], tail)]
	default:
		ps.pend = append(make([]byte, 0, ps.room(len(tail))), tail...)
	}
}

// room is the buffer to read a frame begun into when held bytes of it
// have arrived: the frame whole (fr.need, within the frame bound), but
// never more than twice what arrived, so that a peer announcing a large
// frame makes the collector hold no more than it sends.
func (ps *polled) room(held int) int {
	return min(max(ps.fr.need, held+4096), 2*held+4096)
}

// finish closes the descriptor and says why the connection ended.
func (ps *polled) finish(err error) {
	syscall.Close(ps.fd)
	ps.fr.release()
	ps.pend = nil
	if errors.Is(err, errReadLimit) {
		err = ps.s.overLimit(ps.maxFrame)
	}
	ps.err = err
	close(ps.done)
}

func (ps *polled) message(kind int, data []byte) error {
	ps.last = ps.now
	return ps.s.message(kind, data)
}

func (ps *polled) control(op int, data []byte) error {
	switch op {
	case opClose:
		return closeError(data)
	case opPing:
		ps.last = ps.now
		ps.pong(data)
	}
	return nil
}

// pong answers a ping, masked as a client's frames are. A pong that does
// not fit the socket's buffer at once is dropped: a peer that reads
// nothing is not waited for.
func (ps *polled) pong(data []byte) {
	var f [2 + 4 + 125]byte
	f[0], f[1] = 0x80|opPong, 0x80|byte(len(data))
	key := rand.Uint32()
	mask := [4]byte{byte(key), byte(key >> 8), byte(key >> 16), byte(key >> 24)}
	copy(f[2:6], mask[:])
	for i, b := range data {
		f[6+i] = b ^ mask[i&3]
	}
	syscall.Write(ps.fd, f[:6+len(data)])
}

// takeFD returns a descriptor of conn's socket of its own, close-on-exec
// and non-blocking as conn's is, for a poller to read once conn is closed.
func takeFD(conn any) (int, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1, errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			derr = e
			return
		}
		fd = int(r)
	}); err != nil {
		return -1, err
	}
	return fd, derr
}
