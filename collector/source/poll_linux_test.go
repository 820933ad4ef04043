//go:build linux

package source

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// rawPeer answers the websocket upgrade by hand and gives serve the raw
// connection and the response to write, so that a test sends exactly the
// bytes it means, the response and the first frames in one write if it
// likes.
func rawPeer(t *testing.T, serve func(conn net.Conn, br *bufio.Reader, upgrade []byte)) Target {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		upgrade := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
			base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n"
		serve(conn, brw.Reader, []byte(upgrade))
	}))
	t.Cleanup(srv.Close)
	return Target{Name: "raw", URL: "ws" + strings.TrimPrefix(srv.URL, "http") + DefaultStreamPath}
}

// clientFrame reads one frame from the collector, which masks what it sends.
func clientFrame(br *bufio.Reader) (op int, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	if h[1]&0x80 == 0 || h[1]&0x7f > 125 {
		return 0, nil, fmt.Errorf("unmasked or long frame from the client: %x", h)
	}
	var key [4]byte
	payload = make([]byte, h[1]&0x7f)
	if _, err := io.ReadFull(br, key[:]); err != nil {
		return 0, nil, err
	}
	if _, err := io.ReadFull(br, payload); err != nil {
		return 0, nil, err
	}
	for i := range payload {
		payload[i] ^= key[i&3]
	}
	return int(h[0] & 0x0f), payload, nil
}

// fleetFrames is a stream of n buckets messages from instance, of items
// items each, with its hello first; it returns the frames (some fragmented,
// with a ping between fragments) and the items in all.
func fleetFrames(instance string, from, n, items int, rng *rand.Rand) (stream []byte, total int) {
	stream = frame(true, opText, helloFrame(instance))
	for k := from; k < from+n; k++ {
		b := &wire.Buckets{Header: wire.Header{Ts: t0ms + int64(k+1)*500, Instance: instance}, BucketMs: 500}
		for i := range items {
			it := wire.BucketItem{Resource: fmt.Sprintf("res-%03d", i), Start: t0ms + int64(k)*500}
			it.Pass = 1
			b.Items = append(b.Items, it)
		}
		total += items
		msg := wire.AppendBuckets(nil, b)
		if k%3 != 1 {
			stream = append(stream, frame(true, opText, msg)...)
			continue
		}
		cut := 1 + rng.IntN(len(msg)-1)
		stream = append(stream, frame(false, opText, msg[:cut])...)
		stream = append(stream, frame(true, opPing, []byte(fmt.Sprint("ping-", k)))...)
		stream = append(stream, frame(true, opContinuation, msg[cut:])...)
	}
	return stream, total
}

// TestPolledStreamAnyWayItArrives: a target's upgrade response, hello and
// messages arrive in one write or in pieces of any size (a message larger
// than the poller's buffer too), fragmented, with pings between fragments:
// every message is counted once, every ping answered, and the connection
// ends with the peer's close.
func TestPolledStreamAnyWayItArrives(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	stream, items := fleetFrames("poll-1", 0, 40, 20, rng)
	big, bigItems := fleetFrames("poll-1", 40, 1, 4000, rng) // one message over 64 KiB
	stream = append(stream, big[len(frame(true, opText, helloFrame("poll-1"))):]...)
	items += bigItems
	pings := strings.Count(string(stream), "ping-")
	stream = append(stream, frame(true, opClose, []byte{0x03, 0xe8})...)

	for _, mode := range []string{"one write", "pieces"} {
		t.Run(mode, func(t *testing.T) {
			pongs := make(chan string, 100)
			var served atomic.Int32
			target := rawPeer(t, func(conn net.Conn, br *bufio.Reader, upgrade []byte) {
				if served.Add(1) > 1 {
					// The collector dials again after the close (on a
					// loaded machine, before the check below has looked):
					// a later connection is closed at once, so that the
					// stream is counted once.
					conn.Write(append(upgrade, frame(true, opClose, []byte{0x03, 0xe8})...))
					time.Sleep(time.Second)
					return
				}
				go func() {
					for {
						op, p, err := clientFrame(br)
						if err != nil {
							return
						}
						if op == opPong {
							select {
							case pongs <- string(p):
							default:
							}
						}
					}
				}()
				all := append(upgrade, stream...)
				if mode == "one write" {
					conn.Write(all)
				} else {
					// Its own cuts.
					cuts := rand.New(rand.NewPCG(9, 9))
					for len(all) > 0 {
						n := min(len(all), 1+cuts.IntN(9000))
						conn.Write(all[:n])
						all = all[n:]
						time.Sleep(time.Duration(cuts.IntN(3)) * time.Millisecond)
					}
				}
				time.Sleep(time.Second) // the close is read before the conn ends
			})
			c := collector.New(collector.Options{})
			dialPeer(t, c, target, DialOptions{Seed: 1})
			eventually(t, "every message read and the close taken", func() error {
				st := firstTarget(c.Publish())
				if st.Items != int64(items) || !strings.Contains(collector.ProblemText(st.Problem), "closed by the peer") || st.Rejected != 0 {
					return fmt.Errorf("%d items of %d: %+v", st.Items, items, st)
				}
				return nil
			})
			for range pings {
				select {
				case p := <-pongs:
					if !strings.HasPrefix(p, "ping-") {
						t.Fatalf("pong %q", p)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("fewer than %d pongs", pings)
				}
			}
			var total int64
			for _, rt := range c.Publish().Totals {
				total += rt.Pass
			}
			if total != int64(items) {
				t.Fatalf("%d passes counted, want %d (each message once)", total, items)
			}
		})
	}
}

// TestPolledSilenceIsMeasuredFromTheLastMessage: a hello that came with the
// upgrade response starts the idle clock, so a target silent after it stays
// up for its idle timeout and is dropped as stalled soon after.
func TestPolledSilenceIsMeasuredFromTheLastMessage(t *testing.T) {
	target := rawPeer(t, func(conn net.Conn, br *bufio.Reader, upgrade []byte) {
		conn.Write(append(upgrade, frame(true, opText, helloFrame("silent"))...))
		io.Copy(io.Discard, br)
	})
	c := collector.New(collector.Options{})
	dialPeer(t, c, target, DialOptions{Seed: 1, IdleTimeout: 1500 * time.Millisecond})
	eventually(t, "up", func() error {
		if st := firstTarget(c.Publish()); st.State != feed.TargetUp || st.Instance != "silent" {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	time.Sleep(time.Second)
	if st := firstTarget(c.Publish()); st.State != feed.TargetUp || st.Reconnects != 0 {
		t.Fatalf("dropped before its idle timeout: %+v", st)
	}
	eventually(t, "stalled", func() error {
		if st := firstTarget(c.Publish()); !strings.Contains(collector.ProblemText(st.Problem), "stalled: nothing received for 1.5s") {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
}

// TestDialLeavesNoDescriptorsNorGoroutines: once Dial returns, the
// sockets it read and its pollers are gone.
func TestDialLeavesNoDescriptorsNorGoroutines(t *testing.T) {
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip(err)
		}
		return len(es)
	}
	var servers []*httptest.Server
	var targets []Target
	for i := range 10 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			send(conn, helloFrame(fmt.Sprint("leak-", i)))
			conn.ReadMessage()
		}))
		servers = append(servers, srv)
		targets = append(targets, Target{Name: fmt.Sprint("t", i), URL: "ws" + strings.TrimPrefix(srv.URL, "http") + DefaultStreamPath})
	}
	runtime.GC()
	fdsBefore, goBefore := fds(), runtime.NumGoroutine()
	c := collector.New(collector.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dial(ctx, c, targets, DialOptions{Seed: 1}); close(done) }()
	eventually(t, "every target up", func() error {
		ts := c.Publish().Targets
		if len(ts) != len(targets) {
			return fmt.Errorf("%d targets", len(ts))
		}
		for _, st := range ts {
			if st.State != feed.TargetUp || st.Instance == "" {
				return fmt.Errorf("%+v", st)
			}
		}
		return nil
	})
	if n := fds(); n < fdsBefore+10 {
		t.Fatalf("%d descriptors with 10 connections up, %d before", n, fdsBefore)
	}
	cancel()
	<-done
	eventually(t, "the collector's descriptors and goroutines gone", func() error {
		// The servers' ends of the connections are the servers' to close
		// once they read the EOF; the collector's are counted here.
		n, g := fds(), runtime.NumGoroutine()
		if n > fdsBefore+10 || g > goBefore+10 {
			return fmt.Errorf("%d descriptors (%d before), %d goroutines (%d before)", n, fdsBefore, g, goBefore)
		}
		return nil
	})
	for _, s := range servers {
		s.CloseClientConnections()
		s.Close()
	}
	eventually(t, "back to where it began", func() error {
		if n, g := fds(), runtime.NumGoroutine(); n > fdsBefore || g > goBefore {
			return fmt.Errorf("%d descriptors (%d before), %d goroutines (%d before)", n, fdsBefore, g, goBefore)
		}
		return nil
	})
}

// TestPolledHoldsNoMoreThanItIsSent: a frame announced at the frame bound
// and sent slowly costs the collector about what has arrived of it, not
// the bound, until it is whole; then it is taken, and nothing is kept.
func TestPolledHoldsNoMoreThanItIsSent(t *testing.T) {
	const max = 1 << 20
	l, ps, st, peer := polledPair(t, "slow", max)
	f := frame(true, opText, bytes.Repeat([]byte{'x'}, max))
	sent := 0
	for sent < len(f) {
		n := min(len(f)-sent, 20+sent/2, 64<<10) // 20 bytes first, then more
		if _, err := syscall.Write(peer, f[sent:sent+n]); err != nil {
			t.Fatal(err)
		}
		sent += n
		for range 100 {
			if l.read(ps, time.Now()); len(ps.pend) == sent || ps.pend == nil {
				break
			}
		}
		if sent < len(f) {
			if len(ps.pend) != sent {
				t.Fatalf("%d bytes sent, %d held", sent, len(ps.pend))
			}
			if cap(ps.pend) > 2*sent+4096 {
				t.Fatalf("%d bytes sent, %d bytes of room held for them", sent, cap(ps.pend))
			}
		}
	}
	if ps.pend != nil || st.Status().Messages != 1 || isClosed(ps.done) {
		t.Fatalf("the frame whole: %d bytes still held, %+v, ended %v (%v)", len(ps.pend), st.Status(), isClosed(ps.done), ps.err)
	}
}

// polledPair is a connection read by a poll loop of its own, not run: the
// test calls its reads. peer is the socket's other end, blocking.
func polledPair(t *testing.T, name string, maxFrame int) (l *pollLoop, ps *polled, st *targetState, peer int) {
	t.Helper()
	l = testLoop(t)
	ps, st, peer = newPolled(t, collector.New(collector.Options{}), name, maxFrame)
	return l, ps, st, peer
}

// testLoop is a poll loop whose descriptors are closed when the test ends.
func testLoop(t *testing.T) *pollLoop {
	t.Helper()
	l, err := newPollLoop()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l
}

// newPolled is a connection of target name to c, for a poll loop to read;
// peer is the socket's other end, blocking.
func newPolled(t *testing.T, c *collector.Collector, name string, maxFrame int) (ps *polled, st *targetState, peer int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fds[1]) })
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	d := &dialer{sink: c, opts: DialOptions{}.withDefaults(), clock: c.Clock(), seed: maphash.MakeSeed()}
	st = &targetState{TargetRecord: &feed.TargetRecord{}}
	// Its silence is measured from now, as serve's is: a loop's sweep
	// would otherwise find it silent since the zero time, and end it.
	ps = &polled{s: d.newStream(Target{Name: name}, st, c.Bound(name)), fd: fds[0], fr: frameReader{max: maxFrame},
		idle: time.Hour, maxFrame: maxFrame, last: time.Now(), done: make(chan struct{})}
	return ps, st, fds[1]
}

// runLoop runs l, a testLoop, until the test ends (its stop comes
// before the descriptors' close).
func runLoop(t *testing.T, l *pollLoop) {
	done := make(chan struct{})
	go func() { l.run(); close(done) }()
	t.Cleanup(func() {
		l.mu.Lock()
		l.stop = true
		l.mu.Unlock()
		l.wakeUp()
		<-done
	})
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestPolledReadsABufferAtATime: a connection with a long stream waiting
// is read a buffer at a time, whether or not a read ends on a frame's end
// (a reader that fell back to the room of one frame after a cut read a
// fleet's reconnect backlog 4 KiB a pass, and fell seconds behind), and
// up to readsPerPass buffers a pass.
func TestPolledReadsABufferAtATime(t *testing.T) {
	l, ps, st, peer := polledPair(t, "backlog", 1<<20)
	if err := syscall.SetNonblock(peer, true); err != nil {
		t.Fatal(err)
	}
	// Room for more than a pass reads (the kernel may grant less).
	syscall.SetsockoptInt(peer, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 2<<20)
	waiting := func() int { // bytes in the socket, unread
		var v int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(ps.fd), syscall.TIOCINQ, uintptr(unsafe.Pointer(&v))); e != 0 {
			t.Fatal(e)
		}
		return int(v)
	}
	const messages = 3000
	stream, items := fleetFrames("backlog", 0, messages, 6, rand.New(rand.NewPCG(7, 7)))
	// A pass takes all that waits, or several buffers' worth: at least
	// half a buffer a read (what is held of a frame begun, at most half,
	// goes before it), and more than one read.
	least := 2 * len(l.buf)
	sent, passes, full, tried := 0, 0, 0, 0
	for st.Status().Messages < messages+1 {
		for sent < len(stream) {
			n, err := syscall.Write(peer, stream[sent:min(len(stream), sent+1<<20)])
			if errors.Is(err, syscall.EAGAIN) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			sent += n
		}
		before := waiting()
		l.read(ps, time.Now())
		passes++
		after := waiting()
		if before > least {
			tried++
		}
		if isClosed(ps.done) {
			t.Fatalf("ended after %d passes: %v", passes, ps.err)
		}
		if after > 0 {
			full++
			if before-after < least {
				t.Fatalf("pass %d read %d of %d bytes waiting, %d left", passes, before-after, before, after)
			}
		}
		if passes > len(stream)/len(l.buf)+10 {
			t.Fatalf("%d passes for %d of %d messages (%d bytes)", passes, st.Status().Messages, messages+1, len(stream))
		}
	}
	if tried == 0 {
		t.Errorf("never more than %d bytes waiting: the reads of a pass untried", least)
	}
	if got := st.Status().Items; got != int64(items) {
		t.Errorf("%d items counted, %d sent", got, items)
	}
	t.Logf("%d bytes in %d passes, %d of them leaving some for the next", len(stream), passes, full)
}

// A new connection joins the first poller holding fewer than
// connsPerLoop, so that a fleet one poller can read is read by one; past
// that, the poller holding the fewest.
func TestPollersFillOneLoopFirst(t *testing.T) {
	p := &pollers{}
	for range 3 {
		l, err := newPollLoop()
		if err != nil {
			t.Skip("no epoll set here:", err)
		}
		p.loops = append(p.loops, l)
	}
	t.Cleanup(func() {
		for _, l := range p.loops {
			l.close()
		}
	})
	for _, c := range []struct {
		conns, busy [3]int32
		want        int
	}{
		{[3]int32{0, 0, 0}, [3]int32{}, 0},
		{[3]int32{connsPerLoop - 1, 0, 0}, [3]int32{}, 0},
		{[3]int32{connsPerLoop, 0, 0}, [3]int32{}, 1},
		{[3]int32{connsPerLoop, connsPerLoop, 7}, [3]int32{}, 2},
		{[3]int32{connsPerLoop + 9, connsPerLoop + 2, connsPerLoop + 5}, [3]int32{}, 1},
		{[3]int32{connsPerLoop + 1, connsPerLoop + 1, connsPerLoop + 1}, [3]int32{}, 0},
		// A busy poller takes no more while another has room.
		{[3]int32{3, 0, 0}, [3]int32{busyPerMille, 0, 0}, 1},
		{[3]int32{3, 1, 0}, [3]int32{busyPerMille, 900, 10}, 2},
		// Every one full: the fewest among those not busy.
		{[3]int32{connsPerLoop + 1, connsPerLoop + 5, connsPerLoop + 3}, [3]int32{0, 0, busyPerMille}, 0},
		// Every one busy: the least busy.
		{[3]int32{1, 2, 3}, [3]int32{900, 400, 700}, 1},
	} {
		for i := range c.conns {
			p.loops[i].conns.Store(c.conns[i])
			p.loops[i].busy.Store(c.busy[i])
		}
		if got := p.pick(); got != p.loops[c.want] {
			t.Errorf("connections %v, busy %v: picked another poller than %d", c.conns, c.busy, c.want)
		}
	}
}

// A poller tells how busy its last second was, from the passes it took.
func TestPollLoopTellsItsBusySecond(t *testing.T) {
	l := &pollLoop{}
	start := time.Unix(1_780_000_000, 0)
	l.busyFrom = start
	for i := range 10 {
		l.account(start.Add(time.Duration(i)*100*time.Millisecond), 30*time.Millisecond)
	}
	if b := l.busy.Load(); b != 0 {
		t.Fatalf("busy %d before the second ended", b)
	}
	l.account(start.Add(time.Second), 30*time.Millisecond)
	if b := l.busy.Load(); b != 330 {
		t.Fatalf("busy %d per mille, want 330 (11 passes of 30 ms in 1 s)", b)
	}
	if l.busyNs != 0 || !l.busyFrom.Equal(start.Add(time.Second)) {
		t.Fatalf("the next second did not begin: %d ns from %v", l.busyNs, l.busyFrom)
	}
}

// A loop that took at least keepLookingEvents events over its last
// second looks at its set every pollBatch rather than wait in it;
// below, it waits.
func TestPollLoopKeepsLookingWhileBusy(t *testing.T) {
	l := &pollLoop{}
	start := time.Unix(1_780_000_000, 0)
	l.busyFrom = start
	for i, events := range []int{keepLookingEvents - 1, keepLookingEvents, 0} {
		l.events = events
		l.account(start.Add(time.Duration(i+1)*time.Second), time.Millisecond)
		if got, want := l.keepLooking(), events >= keepLookingEvents; got != want {
			t.Errorf("%d events in the last second: keeps looking %v, want %v", events, got, want)
		}
		if l.events != 0 {
			t.Fatalf("%d events left for the next second", l.events)
		}
	}
}

// TestPollLoopLooksWhileBusyWaitsWhenQuiet: a real loop reading eight busy
// connections keeps looking; every message is read; once they fall quiet
// it waits again, and a message that comes then is read at once.
func TestPollLoopLooksWhileBusyWaitsWhenQuiet(t *testing.T) {
	l := testLoop(t)
	c := collector.New(collector.Options{})
	const conns, msgs = 8, 300
	var states []*targetState
	var peers []int
	var streams, lasts [][]byte
	for i := range conns {
		name := fmt.Sprint("busy-", i)
		ps, st, peer := newPolled(t, c, name, 1<<20)
		if err := l.add(ps); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, uint64(i)))
		stream, _ := fleetFrames(name, 0, msgs, 1, rng)
		last, _ := fleetFrames(name, msgs, 1, 1, rng)
		last = last[len(frame(true, opText, helloFrame(name))):]
		states, peers = append(states, st), append(peers, peer)
		streams, lasts = append(streams, stream), append(lasts, last)
	}
	runLoop(t, l)
	messages := func() (n int64) {
		for _, st := range states {
			n += st.Status().Messages
		}
		return n
	}
	// Each connection's stream in bursts 30 ms apart, for 2 s: 8
	// readable connections a burst, 260 a second, and looks between
	// bursts that find nothing.
	const bursts = 67
	var looked int64 = -1 // the waits when the loop was seen looking
	for k := range bursts {
		for i, stream := range streams {
			if _, err := syscall.Write(peers[i], stream[len(stream)*k/bursts:len(stream)*(k+1)/bursts]); err != nil {
				t.Fatal(err)
			}
		}
		if looked < 0 && l.looking.Load() {
			looked = l.waits.Load()
		}
		time.Sleep(30 * time.Millisecond)
	}
	switch waits := l.waits.Load(); {
	case looked < 0:
		t.Errorf("the loop never kept looking while reading %d connections in bursts", conns)
	case waits != looked:
		t.Errorf("the loop waited in its set %d times while it kept looking", waits-looked)
	}
	eventually(t, "every message read", func() error {
		if n := messages(); n != conns*(1+msgs) {
			return fmt.Errorf("%d messages of %d", n, conns*(1+msgs))
		}
		return nil
	})
	quiet := l.waits.Load()
	eventually(t, "waiting once quiet", func() error {
		if l.looking.Load() || l.waits.Load() == quiet {
			return fmt.Errorf("still looking: %d waits", l.waits.Load()-quiet)
		}
		return nil
	})
	// What comes while it waits is read at once.
	at := time.Now()
	if _, err := syscall.Write(peers[0], lasts[0]); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the last message read", func() error {
		if n := messages(); n != conns*(1+msgs)+1 {
			return fmt.Errorf("%d messages", n)
		}
		return nil
	})
	if d := time.Since(at); d > time.Second {
		t.Errorf("a message to a waiting loop read after %v", d)
	}
}

// TestPollLoopReadsABacklogWithoutNewData: the set is edge-triggered, so a
// connection with more waiting than a pass reads (readsPerPass buffers)
// is not reported again until more arrives. A loop reads it to its end
// all the same, the sender silent after writing it: a loop that waited
// for the next edge would hold the backlog's tail until the connection's
// next message, or until it was dropped as silent.
func TestPollLoopReadsABacklogWithoutNewData(t *testing.T) {
	l, ps, st, peer := polledPair(t, "backlog", 1<<20)
	syscall.SetsockoptInt(peer, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4<<20)
	stream, items := fleetFrames("backlog", 0, 4000, 6, rand.New(rand.NewPCG(3, 3)))
	if len(stream) <= 2*readsPerPass*len(l.buf) {
		t.Fatalf("a backlog of %d bytes, not more than two passes' reads", len(stream))
	}
	// Written whole before the loop looks: one edge for all of it.
	wrote := make(chan error, 1)
	go func() {
		for sent := 0; sent < len(stream); {
			n, err := syscall.Write(peer, stream[sent:])
			if err != nil {
				wrote <- err
				return
			}
			sent += n
		}
		wrote <- nil
	}()
	if err := l.add(ps); err != nil {
		t.Fatal(err)
	}
	runLoop(t, l)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.Status().Items < int64(items) {
		if time.Now().After(deadline) || isClosed(ps.done) {
			t.Fatalf("%d of %d items read, the sender silent since (ended: %v %v)", st.Status().Items, items, isClosed(ps.done), ps.err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Pollers that keep looking nap between their passes, holding their
// processors but one (nap): with one napping loop a processor, the other
// goroutines still run within a few milliseconds of being due, and a
// collection does not wait for the naps. The loops holding a processor
// never number more than all but one.
func TestNapsLeaveTheProcessorsToOthers(t *testing.T) {
	for _, procs := range []int{2, 1, 4} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			// A collection's time with no nap, the heap the same: what the
			// tests before this one left makes it anything from 2 to 300 ms.
			at := time.Now()
			runtime.GC()
			base := time.Since(at)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			napping := new(atomic.Int32)
			var most int32 // the most seen napping holding a processor
			for range procs {
				l := &pollLoop{napping: napping}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						l.nap(pollBatch - time.Millisecond)
					}
				}()
			}
			var late time.Duration // the most a 2 ms sleep overran
			for range 50 {
				at := time.Now()
				time.Sleep(2 * time.Millisecond)
				late = max(late, time.Since(at)-2*time.Millisecond)
				most = max(most, napping.Load())
			}
			at = time.Now()
			runtime.GC()
			gc := time.Since(at)
			close(stop)
			wg.Wait()
			// The runtime's monitor hands a processor held in a system call
			// to a goroutine waiting for it within its tick (at most 10
			// ms); a race detector's or a busy machine's slack on top.
			if late > 100*time.Millisecond || gc > 2*base+100*time.Millisecond {
				t.Fatalf("%d processors, each napping: a 2 ms sleep overran by up to %v, a collection took %v (%v with no nap)", procs, late, gc, base)
			}
			if int(most) > procs-1 {
				t.Fatalf("%d processors: %d held by naps at once", procs, most)
			}
			t.Logf("%d processors, each napping: a 2 ms sleep overran by up to %v, a collection took %v (%v with no nap)", procs, late, gc, base)
		}()
	}
}

// A peer that sends its last messages and closes before the loop looks
// gives one edge for both: the connection is read to its end, its
// messages taken and its close seen at once, not once it falls silent for
// its idle time.
func TestPollLoopReadsAClosedConnectionToItsEnd(t *testing.T) {
	l, ps, st, peer := polledPair(t, "closing", 1<<20)
	stream, items := fleetFrames("closing", 0, 20, 6, rand.New(rand.NewPCG(5, 5)))
	if _, err := syscall.Write(peer, stream); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Shutdown(peer, syscall.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	if err := l.add(ps); err != nil {
		t.Fatal(err)
	}
	runLoop(t, l)
	select {
	case <-ps.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("not ended 10 s after its peer closed (idle %v): %d of %d items read", ps.idle, st.Status().Items, items)
	}
	if got := st.Status().Items; got != int64(items) {
		t.Fatalf("%d of %d items read before the close", got, items)
	}
	if ps.err == nil || !strings.Contains(ps.err.Error(), "closed by the peer") {
		t.Fatalf("ended with %v, want the peer's close", ps.err)
	}
}

// A loop reads many connections at once the same whether a pass's first
// reads are made in one system call (a batch) or one call each: 300
// connections (more than a look takes, all readable at the first one)
// written in pieces of any size at once, with messages fragmented around
// pings, some larger than half a batch's buffer, then closed: every item
// is counted, and each connection ends with its peer's close.
func TestPollLoopReadsManyConnectionsEitherWay(t *testing.T) {
	for _, mode := range []string{"batch", "one call each"} {
		t.Run(mode, func(t *testing.T) {
			l := testLoop(t)
			switch {
			case mode == "batch" && l.batch == nil:
				t.Skip("the kernel refuses an io_uring here: reads are made one call each")
			case mode != "batch" && l.batch != nil:
				l.batch.Close()
				l.batch = nil
			}
			const conns = 300
			c := collector.New(collector.Options{})
			type conn struct {
				name   string
				ps     *polled
				st     *targetState
				peer   int
				stream []byte
				items  int
			}
			all := make([]*conn, conns)
			rng := rand.New(rand.NewPCG(11, 12))
			for i := range all {
				name := fmt.Sprintf("many-%03d", i)
				ps, st, peer := newPolled(t, c, name, 1<<20)
				stream, items := fleetFrames(name, 0, 12, 20, rng)
				if i%10 == 0 {
					big, bigItems := fleetFrames(name, 12, 1, 600, rng) // over half a batch's buffer
					stream = append(stream, big[len(frame(true, opText, helloFrame(name))):]...)
					items += bigItems
				}
				all[i] = &conn{name: name, ps: ps, st: st, peer: peer, stream: stream, items: items}
				if err := l.add(ps); err != nil {
					t.Fatal(err)
				}
			}
			// Each connection's first piece waits before the loop's first
			// look, which finds them all readable; a third of them send
			// their stream whole then, and close (no edge follows for
			// them). Then one writer a connection writes the rest, in cuts
			// of its own.
			for i, cn := range all {
				first := 1 + i*37%4000
				if i%3 == 0 {
					first = len(cn.stream)
				}
				if _, err := syscall.Write(cn.peer, cn.stream[:first]); err != nil {
					t.Fatal(err)
				}
				cn.stream = cn.stream[first:]
			}
			runLoop(t, l)
			var wg sync.WaitGroup
			for i, cn := range all {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cuts := rand.New(rand.NewPCG(uint64(i), 13))
					for rest := cn.stream; len(rest) > 0; {
						n := min(len(rest), 1+cuts.IntN(6000))
						if _, err := syscall.Write(cn.peer, rest[:n]); err != nil {
							t.Error(err)
							return
						}
						rest = rest[n:]
						if cuts.IntN(4) == 0 {
							time.Sleep(time.Duration(cuts.IntN(3)) * time.Millisecond)
						}
					}
					syscall.Shutdown(cn.peer, syscall.SHUT_WR)
				}()
			}
			wg.Wait()
			for _, cn := range all {
				select {
				case <-cn.ps.done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s not ended 10 s after its peer closed: %d of %d items read", cn.name, cn.st.Status().Items, cn.items)
				}
				if got := cn.st.Status().Items; got != int64(cn.items) {
					t.Errorf("%s: %d of %d items read", cn.name, got, cn.items)
				}
				if cn.ps.err == nil || !strings.Contains(cn.ps.err.Error(), "closed by the peer") {
					t.Errorf("%s ended with %v, want the peer's close", cn.name, cn.ps.err)
				}
			}
			l.mu.Lock()
			batched := l.batched
			l.mu.Unlock()
			if mode == "batch" && batched == 0 || mode != "batch" && batched != 0 {
				t.Errorf("%d reads made in batches", batched)
			}
			t.Logf("%d reads made in batches", batched)
		})
	}
}

// A loop's connection table finds each connection it holds by its id, and
// none by the id of a connection that ended, even once its slot holds
// another: random adds and removes against a map of what is held.
func TestConnTableIDs(t *testing.T) {
	var tab connTable
	rng := rand.New(rand.NewPCG(7, 8))
	held := map[uint64]*polled{}
	var gone []uint64
	for range 20000 {
		if len(held) == 0 || rng.IntN(5) < 3 {
			ps := &polled{}
			tab.add(ps)
			if ps.id == 0 || held[ps.id] != nil {
				t.Fatalf("id %#x given twice or zero", ps.id)
			}
			held[ps.id] = ps
			continue
		}
		for id, ps := range held { // one at random
			tab.remove(ps)
			tab.remove(ps) // a second time: nothing
			delete(held, id)
			gone = append(gone, id)
			break
		}
	}
	if tab.n != len(held) {
		t.Fatalf("%d held, the table counts %d", len(held), tab.n)
	}
	for id, ps := range held {
		if tab.get(id) != ps {
			t.Fatalf("id %#x: not found", id)
		}
	}
	for _, id := range gone {
		if ps := tab.get(id); ps != nil {
			t.Fatalf("the ended id %#x found a connection (id %#x)", id, ps.id)
		}
	}
	if tab.get(0) != nil || tab.get(1<<32|uint64(len(tab.slots)+1)) != nil {
		t.Fatal("an id never given found a connection")
	}
	if len(tab.slots) != len(held)+len(tab.free) {
		t.Fatalf("%d slots for %d held and %d free", len(tab.slots), len(held), len(tab.free))
	}
}
