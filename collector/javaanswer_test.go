package collector

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
)

// bigJavaAnswer answers /metric like a Java command API with a large
// backlog: lines for perSecond resources of ~300-byte names over the
// seconds [from, from+seconds), in time order, the first poll's answer
// stopping after hold lines until release is closed. Later polls answer
// nothing.
type bigJavaAnswer struct {
	from               int64
	seconds, perSecond int
	hold               int
	held, release      chan struct{}
	polls              atomic.Int64
	written            atomic.Int64 // bytes of the first answer
}

func bigJavaName(i int) string { return fmt.Sprintf("GET:/api/v1/catalogue/%0290d", i) }

func (b *bigJavaAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/metric":
		if b.polls.Add(1) > 1 {
			return
		}
		bw := bufio.NewWriterSize(w, 64<<10)
		n := 0
		for s := range b.seconds {
			for i := range b.perSecond {
				if n == b.hold {
					bw.Flush()
					w.(http.Flusher).Flush()
					close(b.held)
					<-b.release
				}
				k, _ := fmt.Fprintf(bw, "%d|%s|3|1|3|0|30|0|0|0\n", b.from+int64(s)*1000, bigJavaName(i))
				b.written.Add(int64(k))
				n++
			}
		}
		bw.Flush()
	case "/version":
		fmt.Fprint(w, "1.8.9")
	case "/getRules":
		fmt.Fprint(w, "[]")
	default:
		http.Error(w, "Unknown command", http.StatusBadRequest)
	}
}

// TestJavaMetricAnswerChargedWhileRead: a Java target's /metric answer
// of 32 MiB (96,000 lines, Java answers at most 100,000) is read as it
// arrives, its items charged to the memory budget while they are held and
// given back once delivered, at most javaMaxHeld of them held at once;
// every line's counts arrive. Before, the whole answer was read into memory
// first and nothing of it was charged: one answer held 669 MB at its peak
// while the budget showed 63 KB.
func TestJavaMetricAnswerChargedWhileRead(t *testing.T) {
	const perSecond, seconds = 1600, 60
	clock := core.NewVirtualClock(time.UnixMilli(1_796_000_000_000))
	peer := &bigJavaAnswer{from: clock.UnixMilli() - seconds*1000, seconds: seconds, perSecond: perSecond,
		hold: 3000, held: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	free := func() { once.Do(func() { close(peer.release) }) }
	srv := httptest.NewServer(peer)
	t.Cleanup(srv.Close)
	t.Cleanup(free)
	c := New(Options{Clock: clock})
	javaDial(t, c, "sentinel://"+strings.TrimPrefix(srv.URL, "http://")+"?app=big")

	select {
	case <-peer.held:
	case <-time.After(20 * time.Second):
		t.Fatal("no /metric poll")
	}
	// The 3,000 items read so far (1,600 of the first second, 1,400 of the
	// second) are held, fewer than a chunk: nothing is delivered yet.
	itemBytes := int64(256 + len(bigJavaName(0)))
	want := 3000*itemBytes - 64<<10 // charged 64 KiB at a time
	var during int64
	javaWaitFor(t, "the answer read so far charged", func() error {
		during = c.Publish().MemoryHeld
		if during < want {
			return fmt.Errorf("%d bytes held charged, want at least %d", during, want)
		}
		return nil
	})
	// Sample what is charged while the rest of the answer is read.
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), c.Publish().MemoryHeld))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	free()
	javaWaitFor(t, "every line's counts", func() error {
		tp, ok := c.Totals(strings.TrimPrefix(srv.URL, "http://"), bigJavaName(perSecond-1))
		if !ok || tp.Pass != 3*seconds {
			return fmt.Errorf("the last resource's passes: %d (%v), want %d", tp.Pass, ok, 3*seconds)
		}
		return nil
	})
	close(stop)
	<-sampled
	if got := peer.written.Load(); got < 31<<20 || got > 32<<20 {
		t.Fatalf("the answer was %d bytes, want 31-32 MiB", got)
	}
	// Given back once the answer is read.
	var s *Snapshot
	javaWaitFor(t, "the answer's charge given back", func() error {
		s = c.Publish()
		if len(s.Targets) == 0 {
			return fmt.Errorf("no target")
		}
		if left := s.MemoryHeld; left != 0 {
			return fmt.Errorf("%d bytes still charged after the answer was delivered", left)
		}
		if s.Targets[0].Bytes < peer.written.Load() {
			return fmt.Errorf("the target read %d bytes, the answer was %d", s.Targets[0].Bytes, peer.written.Load())
		}
		return nil
	})
	// Never more than javaMaxHeld items (16,384) held, nor fewer than one
	// chunk charged at some point.
	t.Logf("charged while read: %d bytes at the pause, %d at most (an item %d)", during, peak.Load(), itemBytes)
	if p := peak.Load(); p > 16384*itemBytes {
		t.Errorf("%d bytes charged at once, more than 16,384 items", p)
	}
	if s.MemoryUsed > s.MemoryBudget {
		t.Errorf("memory used %d, over the budget %d", s.MemoryUsed, s.MemoryBudget)
	}
}

// TestJavaMetricAnswerStalledEndsThePoll: a /metric answer is read as it
// arrives, parsed and delivered on the way, with no bound on the whole
// exchange but javaMetricTimeout; an answer that stops arriving for twice
// the handshake timeout ends the poll (and the connection, redialled),
// the lines read so far delivered.
func TestJavaMetricAnswerStalledEndsThePoll(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1_796_000_000_000))
	from := clock.UnixMilli() - 30000
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metric":
			// 20 whole seconds of 300 resources, then the first line of
			// the next, then nothing.
			for s := range int64(21) {
				for i := range 300 {
					fmt.Fprintf(w, "%d|res-%d|2|0|2|0|10|0|0|0\n", from+s*1000, i)
					if s == 20 {
						break
					}
				}
			}
			w.(http.Flusher).Flush()
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		case "/version":
			fmt.Fprint(w, "1.8.9")
		case "/getRules":
			fmt.Fprint(w, "[]")
		default:
			http.Error(w, "Unknown command", http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	c := New(Options{Clock: clock})
	targets, err := source.ParseTargets("sentinel://" + strings.TrimPrefix(srv.URL, "http://") + "?app=stall")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		dial(ctx, c, targets, source.DialOptions{Seed: 1, HandshakeTimeout: 150 * time.Millisecond})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	javaWaitFor(t, "the stalled answer given up", func() error {
		ts := c.Publish().Targets
		if len(ts) == 0 {
			return fmt.Errorf("no target yet")
		}
		tg := ts[0]
		if !strings.Contains(tg.Problem.Detail, "nothing received for 300ms") {
			return fmt.Errorf("target %+v", tg)
		}
		return nil
	})
	// 6,000 lines make a chunk of whole seconds: delivered before the stall.
	instance := strings.TrimPrefix(srv.URL, "http://")
	if tp, ok := c.Totals(instance, "res-299"); !ok || tp.Pass < 2*13 {
		t.Errorf("res-299 before the stall: %d passes (%v), want the seconds of the chunks delivered", tp.Pass, ok)
	}
}
