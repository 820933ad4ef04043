package collector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

const chaosSeed = 20261130

// chaosSize is the fleet: agents, resources each, periods of 500 ms.
func chaosSize() (agents, resources, periods int) {
	switch {
	case os.Getenv("SENTINEL_TOP_CHAOS") == "full":
		return 200, 10, 480
	case testing.Short():
		return 20, 10, 160
	case racetest.Enabled: // all of it in .ci/run's run without -race
		return 40, 10, 160
	}
	return 200, 10, 240
}

// Timings of the fleet, in real time.
const (
	chaosPing = 500 * time.Millisecond // agents' ping interval
	chaosIdle = 2 * time.Second        // the collector's IdleTimeout
	// chaosMaxFrame is the collector's frame limit: an oversized frame is
	// one byte more.
	chaosMaxFrame = 64 << 10
)

func TestChaosFleetTotalsExact(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	nAgents, nResources, periods := chaosSize()
	began := time.Now()
	rng := rand.New(rand.NewPCG(chaosSeed, 1))
	base := time.UnixMilli(1764460800000)
	cclock := core.NewVirtualClock(base)
	c := New(Options{Clock: cclock, Mode: ModeLive})
	resources := chaosResourceNames[:nResources]

	agents := make([]*chaosAgent, nAgents)
	var targets []source.Target
	for i := range agents {
		skew := time.Duration(rng.IntN(10001)-5000) * time.Millisecond
		ca := &chaosAgent{name: fmt.Sprintf("gw-%03d", i), skew: skew, clock: core.NewVirtualClock(base.Add(skew)),
			own: map[string]*[5]int64{}, rng: rand.New(rand.NewPCG(chaosSeed, uint64(i)+2))}
		for _, r := range resources {
			ca.own[r] = &[5]int64{}
		}
		ca.proxy = newChaosProxy(t, ca.start(t))
		agents[i] = ca
		targets = append(targets, source.Target{Name: ca.name, URL: "ws://" + ca.proxy.addr() + agent.StreamPath})
	}
	// Two peers that are broken through and through: one speaks only
	// garbage (incompatible), one sends a hello then an oversized frame.
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for i := 0; i < 20+5; i++ { // the source drops a connection whose first 20 messages are all rejected
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
	fakes := []source.Target{{Name: "junk", URL: "ws" + strings.TrimPrefix(junk.URL, "http")},
		{Name: "huge", URL: "ws" + strings.TrimPrefix(huge.URL, "http")}}
	targets = append(targets, fakes...)

	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	go func() {
		dial(ctx, c, targets, source.DialOptions{Seed: chaosSeed, IdleTimeout: chaosIdle, HandshakeTimeout: 5 * time.Second,
			Limits: wire.Limits{MaxFrameBytes: chaosMaxFrame}})
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
			out[i] = s.Status()
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
					if b > source.MaxBackoff.Milliseconds() {
						t.Fatalf("%s: retry in %d ms, over source.MaxBackoff", s.Name, b)
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
					} else if now-clearedAt[i] > source.MaxBackoff.Milliseconds()+500 {
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
			tpass, _ := c.Totals(ca.name, r)
			pass, block, complete, errs, slow := tpass.Pass, tpass.Block, tpass.Complete, tpass.Error, tpass.Slow
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

	// Clock skew shows, for every connected agent far enough off, and by
	// how much, once the collector has read all they sent: the offset is
	// the least arrival-minus-ts of recent messages, and a reader behind
	// (virtual time runs on without it) only adds to it.
	atEnd := status()
	eventually(t, "the connected agents read to the end", func() error {
		for i, ca := range agents {
			if atEnd[i].State == TargetUp {
				if err := caughtUp(ca); err != nil {
					return err
				}
			}
		}
		return nil
	})
	warnings := warningTexts(c.Publish().Warnings)
	skewed, checked := 0, 0
	for i, ca := range agents {
		// A restart starts the agent's clock later: its skew now. The
		// warning comes past a bucket (500 ms) of offset, which the
		// agents' last messages, read on either side of the collector's
		// clock moving on, may make 500 ms less than the skew.
		ahead := ca.clock.UnixMilli() - cclock.UnixMilli()
		if abs64(ahead) < 1100 {
			continue
		}
		skewed++
		if atEnd[i].State != TargetUp {
			continue
		}
		checked++
		dir := "ahead of"
		if ahead < 0 {
			dir = "behind"
		}
		var said string
		for _, w := range warnings {
			if strings.HasPrefix(w, "clock of "+ca.name+" is ") {
				said = w
			}
		}
		var secs float64
		if _, err := fmt.Sscanf(strings.TrimPrefix(said, "clock of "+ca.name+" is "), "%f s", &secs); err != nil {
			t.Errorf("%s is %d ms %s and not warned about (%q)", ca.name, abs64(ahead), dir, said)
			continue
		}
		// Its last message may be read before or after the collector's
		// clock moves on at the end of its period.
		if !strings.Contains(said, " s "+dir+" the collector's") || abs64(int64(secs*1000)-abs64(ahead)) > 600 {
			t.Errorf("%s is %d ms %s; warned %q", ca.name, abs64(ahead), dir, said)
		}
	}
	if checked < skewed*3/4 {
		t.Errorf("clock skew checked for %d of %d agents off by 1.1 s or more", checked, skewed)
	}
	t.Logf("clock skew: %d of %d agents off by 1.1 s or more were connected at the end, each warned about by its offset", checked, skewed)

	// Drain: the agents stop; the collector's time runs on until every
	// target is back (at most source.MaxBackoff), and the totals are exact.
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
		if p > int(2*source.MaxBackoff/(500*time.Millisecond)) {
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
	if fakeBackoff < source.MaxBackoff.Milliseconds()/2 {
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
