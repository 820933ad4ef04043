package collector

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The chaos test: a fleet of real agents on loopback, each behind a proxy
// that cuts, refuses, stalls and corrupts its connection, some agents
// restarting, every clock skewed; at the end the collector's totals must
// equal what the agents counted, exactly.
//
// Time: every agent runs on its own virtual clock (a shared base plus a
// skew of up to ±5 s) and ships by hand; the collector runs on another
// virtual clock, so its backoff timers fire when the test moves time. After
// each 500 ms period the test waits, in real time, until every dial attempt
// due has been made, so virtual time never runs ahead of the network.
//
// Size: 200 agents x 10 resources for 240 periods (2 minutes of agent
// time), 100 agents under -race, 20 with -short; SENTINEL_TOP_CHAOS=full
// runs 200 agents for 480 periods whatever the build. docs/BENCHMARKS.md
// has the figures.

const chaosSeed = 20261130

// chaosSize is the fleet: agents, resources each, periods of 500 ms.
func chaosSize() (agents, resources, periods int) {
	switch {
	case os.Getenv("SENTINEL_TOP_CHAOS") == "full":
		return 200, 10, 480
	case testing.Short():
		return 20, 10, 160
	case raceEnabled():
		return 100, 10, 240
	}
	return 200, 10, 240
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// Timings of the fleet, in real time.
const (
	chaosPing = 500 * time.Millisecond // agents' ping interval
	chaosIdle = 2 * time.Second        // the collector's IdleTimeout
	// chaosMaxFrame is the collector's frame limit: an oversized frame is
	// one byte more.
	chaosMaxFrame = 64 << 10
)

// link is one relayed connection: in faces the collector, out the agent.
type link struct {
	in, out net.Conn
	dead    chan struct{}
	once    sync.Once
	inject  chan []byte   // raw frames to slip in between the agent's
	ready   atomic.Bool   // the handshake and a first message went through
	mu      sync.Mutex    // guards resume
	resume  chan struct{} // non-nil while stalled
}

func (l *link) kill() {
	l.once.Do(func() {
		close(l.dead)
		l.in.Close()
		l.out.Close()
	})
}

// pass waits while the link is stalled; false when it died meanwhile.
func (l *link) pass() bool {
	l.mu.Lock()
	ch := l.resume
	l.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-l.dead:
		return false
	}
}

// chaosProxy relays a collector's connections to an agent and injects
// faults: cut, refuse, stall, and frames of its own between the agent's.
type chaosProxy struct {
	ln       net.Listener
	mu       sync.Mutex
	target   string
	refusing bool
	links    []*link
	wg       sync.WaitGroup
	garbage  atomic.Int64 // garbage frames written to the collector
}

func newChaosProxy(t *testing.T, target string) *chaosProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &chaosProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	return p
}

func (p *chaosProxy) addr() string { return p.ln.Addr().String() }

func (p *chaosProxy) close() {
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}

func (p *chaosProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target, refusing := p.target, p.refusing
		p.mu.Unlock()
		if refusing {
			in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		l := &link{in: in, out: out, dead: make(chan struct{}), inject: make(chan []byte, 16)}
		p.mu.Lock()
		p.links = append(p.links, l)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.up(l)
		go p.down(l)
	}
}

// up relays the collector's bytes (handshake, pongs, close) to the agent.
func (p *chaosProxy) up(l *link) {
	defer p.wg.Done()
	defer l.kill()
	buf := make([]byte, 4<<10)
	for {
		n, err := l.in.Read(buf)
		if n > 0 && (!l.pass() || writeAll(l.out, buf[:n]) != nil) {
			return
		}
		if err != nil {
			return
		}
	}
}

// down relays the agent's handshake answer, then its websocket frames one
// by one, slipping injected frames in at message boundaries.
func (p *chaosProxy) down(l *link) {
	defer p.wg.Done()
	defer l.kill()
	br := bufio.NewReaderSize(l.out, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil || !l.pass() || writeAll(l.in, line) != nil {
			return
		}
		if len(line) <= 2 { // the blank line ending the HTTP head
			break
		}
	}
	var frame []byte
	inMessage := false
	for {
		var err error
		frame, err = readFrame(br, frame[:0])
		if err != nil || !l.pass() || writeAll(l.in, frame) != nil {
			return
		}
		fin, op := frame[0]&0x80 != 0, frame[0]&0x0f
		switch {
		case op == 1 || op == 2:
			inMessage = !fin
		case op == 0 && fin:
			inMessage = false
		}
		if inMessage || op >= 8 {
			continue
		}
		l.ready.Store(true)
		for more := true; more; {
			select {
			case f := <-l.inject:
				if writeAll(l.in, f) != nil {
					return
				}
				if len(f) < chaosMaxFrame {
					p.garbage.Add(1)
				}
			default:
				more = false
			}
		}
	}
}

func writeAll(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}

// readFrame reads one websocket frame as sent by a server (unmasked),
// header and payload, appended to buf.
func readFrame(br *bufio.Reader, buf []byte) ([]byte, error) {
	var h [10]byte
	if _, err := io.ReadFull(br, h[:2]); err != nil {
		return nil, err
	}
	n, hl := uint64(h[1]&0x7f), 2
	switch n {
	case 126:
		if _, err := io.ReadFull(br, h[2:4]); err != nil {
			return nil, err
		}
		n, hl = uint64(binary.BigEndian.Uint16(h[2:4])), 4
	case 127:
		if _, err := io.ReadFull(br, h[2:10]); err != nil {
			return nil, err
		}
		n, hl = binary.BigEndian.Uint64(h[2:10]), 10
	}
	if h[1]&0x80 != 0 || n > 16<<20 {
		return nil, errors.New("not a server frame")
	}
	buf = append(buf, h[:hl]...)
	start := len(buf)
	buf = append(buf, make([]byte, n)...)
	_, err := io.ReadFull(br, buf[start:])
	return buf, err
}

// wsFrame encodes a server-to-client frame.
func wsFrame(op byte, payload []byte) []byte {
	b := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// current is the link open now, if it is ready for injection.
func (p *chaosProxy) current() *link {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.links) - 1; i >= 0; i-- {
		l := p.links[i]
		select {
		case <-l.dead:
			continue
		default:
		}
		if l.ready.Load() {
			return l
		}
	}
	return nil
}

// inject queues frames on the current link; false when there is none.
func (p *chaosProxy) inject(frames ...[]byte) bool {
	l := p.current()
	if l == nil {
		return false
	}
	for _, f := range frames {
		select {
		case l.inject <- f:
		default:
			return false
		}
	}
	return true
}

func (p *chaosProxy) cut() {
	p.mu.Lock()
	links := p.links
	p.links = nil
	p.mu.Unlock()
	for _, l := range links {
		l.kill()
	}
}

func (p *chaosProxy) refuse(on bool) {
	p.mu.Lock()
	p.refusing = on
	p.mu.Unlock()
}

func (p *chaosProxy) retarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// stall stops (or resumes) forwarding on the links open now; links opened
// later flow.
func (p *chaosProxy) stall(on bool) {
	p.mu.Lock()
	links := slicesClone(p.links)
	p.mu.Unlock()
	for _, l := range links {
		l.mu.Lock()
		switch {
		case on && l.resume == nil:
			l.resume = make(chan struct{})
		case !on && l.resume != nil:
			close(l.resume)
			l.resume = nil
		}
		l.mu.Unlock()
	}
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

// garbageFrames are frames a broken or hostile path might deliver, each
// rejected by a different rule. instance is the agent's own name, so a
// frame accepted by mistake would corrupt its totals.
func garbageFrames(instance string, ts int64) [][]byte {
	text := func(s string) []byte { return wsFrame(1, []byte(s)) }
	return [][]byte{
		text("this is not json"),
		text(fmt.Sprintf(`{"v":2,"kind":"buckets","ts":%d,"instance":%q,"bucketMs":500,"items":[]}`, ts, instance)),
		text(fmt.Sprintf(`{"v":1,"kind":"telemetry","ts":%d,"instance":%q}`, ts, instance)),
		wsFrame(2, []byte{0xde, 0xad, 0xbe, 0xef}),
		text(fmt.Sprintf(`{"v":1,"kind":"buckets","ts":%d,"instance":%q,"bucketMs":500,"items":[{"resource":%q,"start":%d,"pass":1}]}`,
			ts, instance, strings.Repeat("n", wire.DefaultMaxNameBytes+1), ts-ts%500-500)),
		text(fmt.Sprintf(`{"v":1,"kind":"buckets","ts":%d,"instance":%q,"bucketMs":500,"items":[{"resource":"r","start":%d,"pass":-5}]}`,
			ts, instance, ts-ts%500-500)),
		text(`{"v":1,"kind":"buckets","ts":1,"instance":"` + "\xff\xfe" + `","bucketMs":500,"items":[]}`),
	}
}

func oversizedFrame() []byte {
	return wsFrame(1, append([]byte(`{"v":1,"kind":"bye","ts":1,"instance":"x","pad":"`), make([]byte, chaosMaxFrame)...))
}

// chaosAgent is one instance of the fleet, across its restarts.
type chaosAgent struct {
	name  string
	skew  time.Duration
	clock *core.VirtualClock
	a     *agent.Agent
	done  chan error
	proxy *chaosProxy
	gens  int
	// own counts, per resource, summed over every generation: pass, block,
	// complete, error, slow.
	own map[string]*[5]int64
	rng *rand.Rand // its traffic, the same whatever the faults
}

var chaosResourceNames = []string{"db", "GET:http://member-service/api/user/info", "风控检查", "cache:get", "mq:publish",
	"POST:/order/create?src=app", "rpc:inventory.Reserve", "search query", "s3:PutObject", "redis:EVALSHA"}

func (ca *chaosAgent) start(t *testing.T) string {
	t.Helper()
	a, err := agent.New(agent.Options{App: "app-" + ca.name[len(ca.name)-1:], Instance: ca.name, Clock: ca.clock, ManualShip: true,
		PingInterval: chaosPing, WriteTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = a.LoadRules(
		[]core.BreakerRule{{Resource: chaosResourceNames[0], Strategy: core.ErrorRatio, RetryTimeoutMs: 2000,
			MinRequestAmount: 5, StatIntervalMs: 1000, Threshold: 0.5}},
		[]core.FlowRule{{Resource: chaosResourceNames[1], Threshold: 8, StatIntervalInMs: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ca.a, ca.done = a, make(chan error, 1)
	ca.gens++
	go func() { ca.done <- a.Serve(ln) }()
	return ln.Addr().String()
}

func (ca *chaosAgent) stop() {
	if ca.a != nil {
		ca.a.Close()
		<-ca.done
		ca.a = nil
	}
}

// traffic runs a few calls on each resource; the first one fails often
// enough to trip its breaker, the second is flow-controlled.
func (ca *chaosAgent) traffic(resources []string) {
	rng := ca.rng
	for k, r := range resources {
		n := rng.IntN(6)
		if k == 1 {
			n += 4 // over the flow rule's 8 a second now and then
		}
		c := ca.own[r]
		for i := 0; i < n; i++ {
			e, err := ca.a.Entry(r)
			if err != nil {
				c[1]++
				continue
			}
			c[0]++
			c[2]++
			var cause error
			if (k == 0 && rng.IntN(3) > 0) || rng.IntN(10) == 0 {
				cause = errors.New("failed")
				c[3]++
			}
			e.Exit(cause)
		}
	}
}

// fault is what is being done to one agent's connection.
type fault struct {
	kind  string
	until int // the period it clears at
}

func TestChaosFleetTotalsExact(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	nAgents, nResources, periods := chaosSize()
	began := time.Now()
	rng := rand.New(rand.NewPCG(chaosSeed, 1))
	base := time.UnixMilli(1764460800000)
	cclock := core.NewVirtualClock(base)
	c := New(Options{Clock: cclock, Mode: ModeLive, Limits: wire.Limits{MaxFrameBytes: chaosMaxFrame}})
	resources := chaosResourceNames[:nResources]

	agents := make([]*chaosAgent, nAgents)
	var targets []Target
	for i := range agents {
		skew := time.Duration(rng.IntN(10001)-5000) * time.Millisecond
		ca := &chaosAgent{name: fmt.Sprintf("gw-%03d", i), skew: skew, clock: core.NewVirtualClock(base.Add(skew)),
			own: map[string]*[5]int64{}, rng: rand.New(rand.NewPCG(chaosSeed, uint64(i)+2))}
		for _, r := range resources {
			ca.own[r] = &[5]int64{}
		}
		ca.proxy = newChaosProxy(t, ca.start(t))
		agents[i] = ca
		targets = append(targets, Target{Name: ca.name, URL: "ws://" + ca.proxy.addr() + agent.StreamPath})
	}
	// Two peers that are broken through and through: one speaks only
	// garbage (incompatible), one sends a hello then an oversized frame.
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for i := 0; i < garbageLimit+5; i++ {
			if conn.WriteMessage(websocket.TextMessage, []byte("<html>502 Bad Gateway</html>")) != nil {
				return
			}
		}
		conn.ReadMessage()
	}))
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		conn.WriteMessage(websocket.TextMessage, helloFrame("huge"))
		conn.WriteMessage(websocket.TextMessage, make([]byte, chaosMaxFrame+1))
		conn.ReadMessage()
	}))
	fakes := []Target{{Name: "junk", URL: "ws" + strings.TrimPrefix(junk.URL, "http")},
		{Name: "huge", URL: "ws" + strings.TrimPrefix(huge.URL, "http")}}
	targets = append(targets, fakes...)

	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	go func() {
		c.Dial(ctx, targets, DialOptions{Seed: chaosSeed, IdleTimeout: chaosIdle, HandshakeTimeout: 5 * time.Second})
		close(dialed)
	}()
	var collectorHeap uint64
	shutdown := func() {
		for _, ca := range agents {
			ca.proxy.stall(false)
			ca.stop()
			ca.proxy.close()
		}
		junk.Close()
		huge.Close()
		// What is left is the collector's (and the test's bookkeeping);
		// what finalizers of closed connections kept goes in a second GC.
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		collectorHeap = ms.HeapInuse
		cancel()
		<-dialed
	}
	var shut sync.Once
	defer shut.Do(shutdown)

	status := func() []TargetStatus {
		c.mu.Lock()
		ts := slicesClone(c.targets)
		c.mu.Unlock()
		out := make([]TargetStatus, len(ts))
		for i, s := range ts {
			out[i] = s.status()
		}
		return out
	}
	eventually(t, "targets registered and up", func() error {
		st := status()
		if len(st) != len(targets) {
			return fmt.Errorf("%d of %d targets", len(st), len(targets))
		}
		for _, s := range st[:nAgents] {
			if s.State != TargetUp {
				return fmt.Errorf("%s is %s", s.Name, s.State)
			}
		}
		return nil
	})

	// Bookkeeping of faults and of the bounds they must respect.
	active := make([]*fault, nAgents)
	cooldown := make([]int, nAgents) // no new fault before this period
	expectReconnect := make([]int64, nAgents)
	clearedAt := make([]int64, nAgents) // collector time a fault cleared, until the target is up again
	var worstGap, worstBackoff, fakeBackoff int64
	injected := make([]int64, nAgents) // garbage frames queued
	garbageTurn := 0
	faults := map[string]int{}
	var heapPeak uint64
	readHeap := func() {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heapPeak = max(heapPeak, ms.HeapInuse)
	}

	// settle waits until every dial attempt that is due has been made and
	// every expected reconnect has happened, and checks the backoff bounds.
	// overdue notes since when (real time) a target has been down past its
	// RetryAt: its timer fired and it is about to dial, or the timer was
	// armed a moment after the status was published, when virtual time had
	// already moved on, and only moving time fires it.
	type overdueKey struct{ reconnects, retryAt int64 }
	overdue := make([]struct {
		key   overdueKey
		since time.Time
	}, len(targets))
	settle := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			now := cclock.UnixMilli()
			st := status()
			var waiting []string
			for i, s := range st {
				if s.State == TargetDown {
					b := s.RetryAt - s.Since
					if b > MaxBackoff.Milliseconds() {
						t.Fatalf("%s: retry in %d ms, over MaxBackoff", s.Name, b)
					}
					if i < nAgents {
						worstBackoff = max(worstBackoff, b)
					} else {
						fakeBackoff = max(fakeBackoff, b)
					}
				}
				late := false
				if s.State == TargetDown && now >= s.RetryAt+1 {
					if k := (overdueKey{s.Reconnects, s.RetryAt}); overdue[i].key != k {
						overdue[i].key, overdue[i].since = k, time.Now()
					}
					late = time.Since(overdue[i].since) < 250*time.Millisecond
				}
				switch {
				case s.State == TargetConnecting:
					waiting = append(waiting, s.Name+" dialing")
				case late:
					waiting = append(waiting, fmt.Sprintf("%s retry due %d ms ago", s.Name, now-s.RetryAt))
				case i < nAgents && s.Reconnects < expectReconnect[i]:
					waiting = append(waiting, s.Name+" to notice its fault")
				}
				if i < nAgents && clearedAt[i] > 0 {
					if s.State == TargetUp && s.Reconnects >= expectReconnect[i] {
						worstGap = max(worstGap, now-clearedAt[i])
						clearedAt[i] = 0
					} else if now-clearedAt[i] > MaxBackoff.Milliseconds()+500 {
						t.Fatalf("%s still %s %d ms after its fault cleared: %+v", s.Name, s.State, now-clearedAt[i], s)
					}
				}
			}
			if len(waiting) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not settled after 30 s: %v", what, waiting)
			}
			time.Sleep(time.Millisecond)
		}
	}
	caughtUp := func(ca *chaosAgent) error {
		for _, r := range resources {
			w := ca.own[r]
			pass, block, complete, errs, slow, _ := c.Totals(ca.name, r)
			if got := [5]int64{pass, block, complete, errs, slow}; got != *w {
				return fmt.Errorf("%s %q: collector pass/block/complete/error/slow %v, agent %v", ca.name, r, got, *w)
			}
		}
		return nil
	}
	period := func() {
		for _, ca := range agents {
			ca.traffic(resources)
		}
		for _, ca := range agents {
			ca.clock.Advance(500 * time.Millisecond)
			ca.a.Ship()
		}
		cclock.Advance(500 * time.Millisecond)
	}

	longStallAt := periods / 3
	quietFrom := periods - 20 // the last periods have no new faults
	for p := 0; p < periods; p++ {
		now := cclock.UnixMilli()
		st := status()
		for i, ca := range agents {
			if f := active[i]; f != nil && p >= f.until {
				switch f.kind {
				case "refuse":
					ca.proxy.refuse(false)
					clearedAt[i] = now
				case "stall":
					ca.proxy.stall(false)
				}
				active[i], cooldown[i] = nil, p+80
			}
			// The plan draws the same numbers whatever happens, so it is the
			// same in every run.
			roll, k, d, n := rng.IntN(1000), rng.IntN(100), rng.IntN(13), rng.IntN(3)
			if active[i] != nil || p < cooldown[i] || p >= quietFrom || p == longStallAt || roll >= 12 {
				continue
			}
			switch {
			case k < 25:
				faults["cut"]++
				expectReconnect[i] = st[i].Reconnects + 1
				ca.proxy.cut()
				clearedAt[i] = now
				cooldown[i] = p + 80
			case k < 40:
				faults["refuse"]++
				ca.proxy.refuse(true)
				expectReconnect[i] = st[i].Reconnects + 1
				ca.proxy.cut()
				active[i] = &fault{"refuse", p + 4 + d}
			case k < 60:
				faults["stall"]++
				ca.proxy.stall(true)
				active[i] = &fault{"stall", p + 1 + d%6}
			case k < 80:
				// Each kind of garbage in turn.
				all := garbageFrames(ca.name, ca.clock.UnixMilli())
				var frames [][]byte
				for j := 0; j <= n; j++ {
					frames = append(frames, all[(garbageTurn+j)%len(all)])
				}
				if ca.proxy.inject(frames...) {
					garbageTurn += len(frames)
					faults["garbage frames"] += len(frames)
					injected[i] += int64(len(frames))
				}
				cooldown[i] = p + 80
			case k < 90:
				if ca.proxy.inject(oversizedFrame()) {
					faults["oversized"]++
					expectReconnect[i] = st[i].Reconnects + 1
					clearedAt[i] = now
				}
				cooldown[i] = p + 80
			default:
				if st[i].State != TargetUp {
					continue
				}
				// A process that restarts while its collector is away loses
				// what it had not sent: restart it once it is caught up.
				faults["restart"]++
				eventually(t, ca.name+" caught up before its restart", func() error { return caughtUp(ca) })
				ca.stop()
				ca.clock.Advance(time.Duration(100+20*d) * time.Millisecond) // the new process starts later
				ca.proxy.retarget(ca.start(t))
				expectReconnect[i] = st[i].Reconnects + 1
				clearedAt[i] = now
				cooldown[i] = p + 80
			}
		}
		if p == longStallAt {
			// Stalls long enough for the idle timeout: the collector gives up
			// on the connection and dials again. Virtual time waits.
			var stalled []int
			for i, ca := range agents {
				if pick := rng.IntN(10); active[i] == nil && p >= cooldown[i] && st[i].State == TargetUp && pick == 0 {
					stalled = append(stalled, i)
					expectReconnect[i] = st[i].Reconnects + 1
					ca.proxy.stall(true)
				}
			}
			faults["stall past the idle timeout"] = len(stalled)
			settle("long stalls")
			for _, i := range stalled {
				agents[i].proxy.stall(false)
				clearedAt[i] = cclock.UnixMilli()
				cooldown[i] = p + 80
			}
		}
		period()
		settle(fmt.Sprintf("period %d", p))
		if p%40 == 39 {
			readHeap()
		}
	}

	// Clock skew shows, for every agent far enough off.
	warnings := strings.Join(c.Publish().Warnings, "\n")
	for _, ca := range agents {
		if ca.skew.Abs() >= 1500*time.Millisecond && !strings.Contains(warnings, "clock of "+ca.name) {
			t.Errorf("%s is %v off and not warned about", ca.name, ca.skew)
		}
	}

	// Drain: the agents stop; the collector's time runs on until every
	// target is back (at most MaxBackoff), and the totals are exact.
	for p := 0; ; p++ {
		up := 0
		for _, s := range status()[:nAgents] {
			if s.State == TargetUp {
				up++
			}
		}
		if up == nAgents {
			break
		}
		if p > int(2*MaxBackoff/(500*time.Millisecond)) {
			t.Fatalf("%d of %d targets up %d periods after the last fault", up, nAgents, p)
		}
		cclock.Advance(500 * time.Millisecond)
		settle("drain")
	}
	eventually(t, "collector totals equal the agents' counts", func() error {
		for _, ca := range agents {
			if err := caughtUp(ca); err != nil {
				return err
			}
		}
		return nil
	})
	readHeap()

	// Every garbage frame was refused, by the rule it broke, and none cost
	// its connection.
	final := c.Publish()
	for i, s := range status()[:nAgents] {
		if written := agents[i].proxy.garbage.Load(); s.Rejected != written || written > injected[i] {
			t.Errorf("%s: %d rejected, %d garbage frames written (%d queued)", s.Name, s.Rejected, written, injected[i])
		}
	}
	reasons := byReason(final.Rejects)
	for _, r := range []string{"malformed", "wrong_version", "unknown_kind", "too_large", "name_too_long", "invalid"} {
		if reasons[r] == 0 {
			t.Errorf("no reject for %q: %+v", r, final.Rejects)
		}
	}
	if len(final.Overflow) != 0 {
		t.Errorf("limits turned data away: %+v", final.Overflow)
	}
	_, _, dups := c.Counters()
	if dups == 0 {
		t.Error("no duplicates: reconnect backlogs were not exercised")
	}
	if fakeBackoff < MaxBackoff.Milliseconds()/2 {
		t.Errorf("the broken peers' backoff reached only %d ms", fakeBackoff)
	}
	var reconnects, gens int64
	for _, s := range status()[:nAgents] {
		reconnects += s.Reconnects
	}
	for _, ca := range agents {
		gens += int64(ca.gens)
	}
	var items int64
	for _, ca := range agents {
		for _, w := range ca.own {
			items += w[0] + w[1]
		}
	}

	shut.Do(shutdown)
	goleak.VerifyNone(t, leaks)

	// The agents' backlogs (a minute of buckets each) dominate the heap;
	// the collector holds its series rings.
	heapBound := uint64(64<<20 + nAgents*3<<19)
	collectorBound := uint64(32<<20 + nAgents*nResources*16<<10)
	names := make([]string, 0, len(faults))
	for k := range faults {
		names = append(names, k)
	}
	sort.Strings(names)
	var fl []string
	for _, k := range names {
		fl = append(fl, fmt.Sprintf("%s %d", k, faults[k]))
	}
	t.Logf("chaos: %d agents x %d resources, %d periods (%.0f s of agent time), %d generations, clock skew ±5 s; in %.1f s real",
		nAgents, nResources, periods, float64(periods)/2, gens, time.Since(began).Seconds())
	t.Logf("faults: %s; reconnects %d, duplicates dropped %d, rejects %d; worst backoff %d ms (broken peers %d ms), "+
		"worst time from a fault clearing to up again %d ms", strings.Join(fl, ", "), reconnects, dups, final.Rejected,
		worstBackoff, fakeBackoff, worstGap)
	t.Logf("entries counted %d, all equal on both sides; heap in use peaked at %.1f MB (bound %d MB), "+
		"%.1f MB of it the collector's (bound %d MB)", items, float64(heapPeak)/(1<<20), heapBound>>20,
		float64(collectorHeap)/(1<<20), collectorBound>>20)
	if heapPeak > heapBound || collectorHeap > collectorBound {
		t.Errorf("heap over its bound")
	}
}
