package collector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The chaos test's parts: a proxy per agent that cuts, refuses, stalls,
// injects garbage and oversized frames, and retargets; and the agents.

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
