package agent

import (
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// flapRule trips on one error and probes after a second.
var flapRule = core.BreakerRule{Resource: "db", Strategy: core.ErrorCount, RetryTimeoutMs: 1000,
	MinRequestAmount: 1, StatIntervalMs: 1000, Threshold: 1}

// flap drives the breaker of flapRule once round: CLOSED -> OPEN on an
// error, OPEN -> HALF_OPEN after the retry timeout, HALF_OPEN -> CLOSED on a
// good probe. Every transition runs on this goroutine, in Entry or Exit.
func (ta *testAgent) flap(t *testing.T) {
	t.Helper()
	ta.traffic(t, "db", 1, 0, true)
	ta.clock.Advance(time.Second)
	ta.traffic(t, "db", 1, 0, false)
}

func TestListenerPanicStaysInTheAgent(t *testing.T) {
	ta := startAgent(t, Options{OnTransition: func(core.Transition) { panic("a bug in the owner's listener") }})
	if err := ta.LoadRules([]core.BreakerRule{flapRule}, nil); err != nil {
		t.Fatal(err)
	}
	reader := mustDial(t, ta.url)
	reader.until(func(m wire.Message) bool { r, ok := m.(*wire.Rules); return ok && len(r.Breakers) == 1 })
	ta.flap(t) // a panic reaching Entry or Exit would fail the test here
	st := ta.Stats()
	if st.ListenerPanics != 3 || st.Panics != 0 {
		t.Fatalf("stats %+v, want 3 listener panics and no agent panic", st)
	}
	// The stream still tells every transition.
	var seen []string
	reader.until(func(m wire.Message) bool {
		if s, ok := m.(*wire.State); ok {
			seen = append(seen, s.From.String()+">"+s.To.String())
		}
		return len(seen) == 3
	})
	if got := strings.Join(seen, " "); got != "CLOSED>OPEN OPEN>HALF_OPEN HALF_OPEN>CLOSED" {
		t.Fatalf("transitions %q", got)
	}
}

// stalledReader connects with a small receive buffer and never reads.
func stalledReader(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10)
		}
		return c, err
	}}
	conn, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestEntryExitNeverWaitForReaders runs traffic and breaker transitions
// (each broadcast from inside Entry or Exit) while one agent's reader has
// stalled with a write timeout of a minute, and another agent's reader
// stalls until its writes time out: no Entry+Exit waits for either.
func TestEntryExitNeverWaitForReaders(t *testing.T) {
	patient := startAgent(t, Options{WriteTimeout: time.Minute, QueueLen: 8})
	strict := startAgent(t, Options{WriteTimeout: 200 * time.Millisecond, QueueLen: 8})
	names := make([]string, 400)
	for i := range names {
		names[i] = fmt.Sprintf("resource-%04d-%s", i, strings.Repeat("x", 200)) // ~100 KB frames
	}
	for _, ta := range []*testAgent{patient, strict} {
		if err := ta.LoadRules([]core.BreakerRule{flapRule}, nil); err != nil {
			t.Fatal(err)
		}
		stalledReader(t, ta.url)
		ta.advance(t, 500*time.Millisecond) // the sync reader joins
	}
	waitFor(t, func() bool { return patient.Stats().Readers == 2 && strict.Stats().Readers == 2 })

	var slowest time.Duration
	began := time.Now()
	for period := 0; period < 30; period++ {
		for _, ta := range []*testAgent{patient, strict} {
			for _, n := range names {
				at := time.Now()
				e, err := ta.Entry(n)
				if err == nil {
					e.Exit(nil)
				}
				slowest = max(slowest, time.Since(at))
			}
			at := time.Now()
			ta.flap(t)
			slowest = max(slowest, time.Since(at)/3)
			ta.advance(t, 500*time.Millisecond)
		}
	}
	elapsed := time.Since(began)
	t.Logf("%d Entry+Exit in %v, slowest %v", 2*30*(len(names)+3), elapsed, slowest)
	if slowest > 500*time.Millisecond {
		t.Fatalf("an Entry+Exit took %v: it waited for a reader", slowest)
	}
	if st := patient.Stats(); st.Dropped == 0 || st.Readers != 2 {
		t.Fatalf("patient agent %+v: the stalled reader should be connected and losing messages", st)
	}
	// The reader whose writes timed out is gone; the sync reader stays.
	waitFor(t, func() bool { return strict.Stats().Readers == 1 })
}

// TestMemoryBoundedWhateverReadersDo tracks resources up to MaxResources
// (and some over it) while readers connect, stall, read a little and leave
// as fast as they can: the heap stays where the backlog and the resources
// put it, and every reader's goroutines go.
func TestMemoryBoundedWhateverReadersDo(t *testing.T) {
	const maxResources = 600
	ta := startAgent(t, Options{MaxResources: maxResources, Backlog: 10 * time.Second, QueueBytes: 1 << 20})
	names := make([]string, maxResources+200)
	for i := range names {
		names[i] = fmt.Sprintf("GET:http://svc-%d/api/v1/resource/%d", i%13, i)
	}
	period := func() {
		for _, n := range names {
			if e, err := ta.Entry(n); err == nil {
				e.Exit(nil)
			}
		}
		ta.advance(t, 500*time.Millisecond)
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	for k := 0; k < 30; k++ { // past the backlog: it is full
		period()
	}
	before := heap()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var connects, refused, subscribed int64
	var mu sync.Mutex
	for w := 0; w < 20; w++ { // more than MaxReaders
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch i % 4 {
				case 0: // connect, read a few messages, leave
					conn, resp, err := websocket.DefaultDialer.Dial(ta.url, nil)
					if err != nil {
						if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
							mu.Lock()
							refused++
							mu.Unlock()
						}
						continue
					}
					for k := 0; k < i%7; k++ {
						conn.ReadMessage()
					}
					conn.Close()
					mu.Lock()
					connects++
					mu.Unlock()
				case 1: // connect and stall for a while
					conn, _, err := websocket.DefaultDialer.Dial(ta.url, nil)
					if err != nil {
						continue
					}
					time.Sleep(50 * time.Millisecond)
					conn.Close()
				case 2: // not a websocket at all
					if resp, err := http.Get(strings.Replace(ta.url, "ws://", "http://", 1)); err == nil {
						resp.Body.Close()
					}
				case 3: // an in-process reader that never drains
					if sub, err := ta.Subscribe(0); err == nil {
						time.Sleep(20 * time.Millisecond)
						sub.Close()
						mu.Lock()
						subscribed++
						mu.Unlock()
					}
				}
			}
		}()
	}
	// At least 40 periods, and on until the readers have come and gone and
	// subscribed: on an idle machine 40 periods can pass before a reader
	// has stalled its 50 ms once.
	exercised := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return connects > 0 && subscribed > 0
	}
	peak := before
	deadline := time.Now().Add(30 * time.Second)
	for k := 0; k < 40 || !exercised() && time.Now().Before(deadline); k++ {
		period()
		if k%10 == 9 {
			peak = max(peak, heap())
		}
	}
	close(stop)
	wg.Wait()
	waitFor(t, func() bool { return ta.Stats().Readers == 1 }) // the sync reader
	after := heap()
	st := ta.Stats()
	t.Logf("heap in use: %.1f MB with a full backlog, peak %.1f MB under reader churn, %.1f MB after; "+
		"%d readers came and went, %d refused, %d subscriptions; %d entries over MaxResources",
		float64(before)/(1<<20), float64(peak)/(1<<20), float64(after)/(1<<20), connects, refused, subscribed, st.Overflow)
	if st.Overflow == 0 || connects == 0 || subscribed == 0 {
		t.Fatalf("the test did not exercise its limits: %+v, %d connects, %d subscriptions", st, connects, subscribed)
	}
	// Readers add at most their queues' bytes (MaxReaders x QueueBytes) and
	// leave nothing behind.
	if bound := before + 16<<20 + 16<<20; peak > bound {
		t.Fatalf("heap peaked at %d MB under reader churn, bound %d MB", peak>>20, bound>>20)
	}
	if after > before+8<<20 {
		t.Fatalf("heap grew from %d MB to %d MB after the readers left", before>>20, after>>20)
	}
	if before > 64<<20 {
		t.Fatalf("a %d-resource agent with a 10 s backlog holds %d MB", maxResources, before>>20)
	}
}

// TestQueueBytesBoundAReader: a reader that does not drain holds at most
// QueueBytes of frames, however few messages that is, and learns what it
// lost once it drains.
func TestQueueBytesBoundAReader(t *testing.T) {
	clock := core.NewVirtualClock(t0)
	a, err := New(Options{App: "big", Instance: "big-1", Clock: clock, ManualShip: true, QueueBytes: 300 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sub, err := a.Subscribe(256)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 400)
	for i := range names {
		names[i] = fmt.Sprintf("resource-%04d-%s", i, strings.Repeat("x", 200))
	}
	for period := 0; period < 20; period++ {
		for _, n := range names {
			if e, err := a.Entry(n); err == nil {
				e.Exit(nil)
			}
		}
		clock.Advance(500 * time.Millisecond)
		a.Ship()
	}
	msgs, err := sub.Frames()
	if err != nil {
		t.Fatal(err)
	}
	var held, size int
	var told int64
	for _, m := range msgs {
		if b, ok := m.(*wire.Buckets); ok {
			held++
			size = len(wire.AppendBuckets(nil, b))
			told += b.Dropped
		}
	}
	if held == 0 || held*size > 300<<10+size {
		t.Fatalf("%d frames of %d bytes held against a 300 KiB bound", held, size)
	}
	if got := a.Stats().Dropped; got != int64(20-held) || told != got {
		t.Fatalf("dropped %d, told %d, want %d", got, told, 20-held)
	}
}
