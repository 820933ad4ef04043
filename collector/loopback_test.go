package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector/record"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/waitfor"
)

// proxy is a loopback TCP relay the test can cut, to force disconnects, and
// point elsewhere, to stand in for a restarted process at the same address.
type proxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				p.mu.Unlock()
				in.Close()
				continue
			}
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(out, in); out.Close() }()
			go func() { defer p.wg.Done(); io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.cut(); p.wg.Wait() })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// cut closes every relayed connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) retarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// fleetAgent is one agent of the test fleet and what it admitted.
type fleetAgent struct {
	a     *agent.Agent
	addr  string
	done  chan error
	pass  map[string]int64
	block map[string]int64
	errs  map[string]int64
	once  sync.Once
}

func startFleetAgent(t *testing.T, clock *core.VirtualClock, instance string) *fleetAgent {
	t.Helper()
	a, err := agent.New(agent.Options{App: "gateway", Instance: instance, Clock: clock, ManualShip: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.LoadRules([]core.BreakerRule{{Resource: "db", Strategy: core.ErrorCount, RetryTimeoutMs: 2000,
		StatIntervalMs: 1000, Threshold: 50}}, nil); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fa := &fleetAgent{a: a, addr: ln.Addr().String(), done: make(chan error, 1),
		pass: map[string]int64{}, block: map[string]int64{}, errs: map[string]int64{}}
	go func() { fa.done <- a.Serve(ln) }()
	t.Cleanup(fa.stop)
	return fa
}

func (fa *fleetAgent) stop() {
	fa.once.Do(func() {
		fa.a.Close()
		<-fa.done
	})
}

// traffic runs n calls on each resource, every third failing.
func (fa *fleetAgent) traffic(resources []string, n int) {
	for _, r := range resources {
		for i := 0; i < n; i++ {
			e, err := fa.a.Entry(r)
			if err != nil {
				fa.block[r]++
				continue
			}
			fa.pass[r]++
			var cause error
			if i%3 == 0 {
				cause = errors.New("x")
				fa.errs[r]++
			}
			e.Exit(cause)
		}
	}
}

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	waitfor.Eventually(t, what, 15*time.Second, 20*time.Millisecond, cond)
}

// TestTotalsEqualAgentsThroughDisconnectAndRestart dials real agents over
// loopback websockets, cuts the connections, restarts one agent, and
// requires the collector's totals to equal what the agents admitted.
func TestTotalsEqualAgentsThroughDisconnectAndRestart(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	resources := []string{"db", "GET:http://member-service/api/user/info", "风控检查"}
	var agents []*fleetAgent
	var proxies []*proxy
	var targets []source.Target
	for i := 0; i < 3; i++ {
		fa := startFleetAgent(t, clock, fmt.Sprintf("gateway-%d", i))
		p := newProxy(t, fa.addr)
		agents, proxies = append(agents, fa), append(proxies, p)
		targets = append(targets, source.Target{Name: p.addr(), URL: "ws://" + p.addr() + agent.StreamPath})
	}
	recording := filepath.Join(t.TempDir(), "live.ndjson.gz")
	rec, err := record.Create(recording, false)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Record: rec.Writer})
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	go func() { dial(ctx, c, targets, source.DialOptions{Seed: 1}); close(dialed) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-dialed
		}
	}
	defer stop()

	// want sums every agent generation per instance.
	want := map[string]map[string][3]int64{}
	tally := func(name string, fa *fleetAgent) {
		if want[name] == nil {
			want[name] = map[string][3]int64{}
		}
		for _, r := range resources {
			w := want[name][r]
			want[name][r] = [3]int64{w[0] + fa.pass[r], w[1] + fa.block[r], w[2] + fa.errs[r]}
		}
	}
	period := func(k int) {
		for _, fa := range agents {
			fa.traffic(resources, 7+k)
		}
		clock.Advance(500 * time.Millisecond)
		for _, fa := range agents {
			fa.a.Ship()
		}
	}
	check := func() error {
		for i, fa := range agents {
			name := fmt.Sprintf("gateway-%d", i)
			for _, r := range resources {
				w := want[name][r]
				w = [3]int64{w[0] + fa.pass[r], w[1] + fa.block[r], w[2] + fa.errs[r]}
				tpass, ok := c.Totals(name, r)
				pass, block, errs := tpass.Pass, tpass.Block, tpass.Error
				if !ok || pass != w[0] || block != w[1] || errs != w[2] {
					return fmt.Errorf("%s %s: collector pass/block/error %d/%d/%d, agent %d/%d/%d", name, r, pass, block, errs, w[0], w[1], w[2])
				}
			}
		}
		return nil
	}
	eventually(t, "all targets up", func() error {
		for _, st := range c.Snapshot().Targets {
			if st.State != TargetUp {
				return fmt.Errorf("%s is %s", st.Name, st.State)
			}
		}
		c.Publish()
		if len(c.Snapshot().Targets) != 3 {
			return errors.New("targets not registered")
		}
		return nil
	})
	for k := 0; k < 6; k++ {
		period(k)
	}
	eventually(t, "totals before the disconnect", check)

	// Cut every connection; traffic goes on while the collector is away,
	// and the backlog fills the gap without double counting.
	for _, p := range proxies {
		p.cut()
	}
	for k := 0; k < 6; k++ {
		period(k)
	}
	eventually(t, "totals after reconnecting", check)

	// Restart gateway-1: a new process with the same instance name.
	old := agents[1]
	old.stop()
	tally("gateway-1", old)
	clock.Advance(time.Second)
	fresh := startFleetAgent(t, clock, "gateway-1")
	agents[1] = fresh
	proxies[1].retarget(fresh.addr)
	proxies[1].cut()
	for k := 0; k < 6; k++ {
		period(k)
	}
	eventually(t, "totals after the restart", check)

	_, _, dups := c.Counters()
	if dups == 0 {
		t.Error("the reconnect backlog sent no duplicates: the test did not exercise dedupe")
	}
	var reconnects int64
	for _, st := range c.Publish().Targets {
		reconnects += st.Reconnects
	}
	if reconnects < 3 {
		t.Errorf("%d reconnects, want at least 3", reconnects)
	}

	// The recording holds each bucket item once, and replays to the same
	// totals and findings as the live collector.
	stop()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.RecordError(); err != nil {
		t.Fatal(err)
	}
	type itemKey struct {
		inst, res string
		start     int64
	}
	seen := map[itemKey]bool{}
	items := 0
	for _, m := range readFile(t, recording) {
		if b, ok := m.(*wire.Buckets); ok {
			for _, it := range b.Items {
				k := itemKey{b.Instance, it.Resource, it.Start}
				if seen[k] {
					t.Fatalf("the recording holds %v twice", k)
				}
				seen[k] = true
				items++
			}
		}
	}
	if items == 0 {
		t.Fatal("nothing recorded")
	}
	r := replayWhole(t, recording)
	for i := range agents {
		name := fmt.Sprintf("gateway-%d", i)
		for _, res := range resources {
			tlp, _ := c.Totals(name, res)
			lp, lb, lc, le, ls := tlp.Pass, tlp.Block, tlp.Complete, tlp.Error, tlp.Slow
			trp, ok := r.Collector().Totals(name, res)
			rp, rb, rc, re, rs := trp.Pass, trp.Block, trp.Complete, trp.Error, trp.Slow
			if !ok || [5]int64{lp, lb, lc, le, ls} != [5]int64{rp, rb, rc, re, rs} {
				t.Errorf("%s %s: live %v, replayed %v", name, res, [5]int64{lp, lb, lc, le, ls}, [5]int64{rp, rb, rc, re, rs})
			}
		}
	}
	describe := func(fs []triage.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprint(f.Kind, f.App, f.Resource, f.Instances))
		}
		return out
	}
	if live, replayed := describe(c.Publish().Findings), describe(r.Collector().Publish().Findings); !slices.Equal(live, replayed) {
		t.Errorf("findings live %v, replayed %v", live, replayed)
	}
}

// TestInstanceSquattingLoopback: a hostile target says hello first with
// an honest instance's name (and app), and floods it; the honest agent,
// dialed second over a real loopback websocket, is another instance,
// gw-1@TARGET, whose totals are exactly what it admitted, with nothing
// rejected and a conflict notice naming both targets. When the honest
// instance restarts on its own target it is accepted again, its totals
// carry on, and the recording replays both apart.
func TestInstanceSquattingLoopback(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	resources := []string{"db", "GET:/api/price"}
	evil := startFleetAgent(t, clock, "gw-1")
	honest := startFleetAgent(t, clock, "gw-1")
	hp := newProxy(t, honest.addr)
	evilT := source.Target{Name: evil.addr, URL: "ws://" + evil.addr + agent.StreamPath}
	honestT := source.Target{Name: hp.addr(), URL: "ws://" + hp.addr() + agent.StreamPath}
	honestName := "gw-1@" + hp.addr()
	recording := filepath.Join(t.TempDir(), "live.ndjson.gz")
	rec, err := record.Create(recording, false)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Record: rec.Writer})
	// A second collector reads c's re-served stream (serve), as one target.
	served, closeServed := serveRestream(t, c.Restream(RestreamOptions{}))
	down := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var dialing sync.WaitGroup
	stop := sync.OnceFunc(func() { cancel(); closeServed(); dialing.Wait() })
	defer stop()
	dialTarget := func(into *Collector, tg source.Target) {
		dialing.Add(1)
		go func() { defer dialing.Done(); dial(ctx, into, []source.Target{tg}, source.DialOptions{Seed: 1}) }()
	}
	dialTarget(down, source.Target{Name: served, URL: "ws://" + served + source.DefaultStreamPath})

	totalsOf := func(c *Collector, name string, fa *fleetAgent, earlier map[string][3]int64) error {
		for _, r := range resources {
			w := earlier[r]
			w = [3]int64{w[0] + fa.pass[r], w[1] + fa.block[r], w[2] + fa.errs[r]}
			tm, ok := c.Totals(name, r)
			if got := [3]int64{tm.Pass, tm.Block, tm.Error}; !ok || got != w {
				return fmt.Errorf("%s %s: collector pass/block/error %v, agent %v", name, r, got, w)
			}
		}
		return nil
	}
	totals := func(name string, fa *fleetAgent, earlier map[string][3]int64) error {
		return totalsOf(c, name, fa, earlier)
	}
	ship := func(fas ...*fleetAgent) {
		clock.Advance(500 * time.Millisecond)
		for _, fa := range fas {
			fa.a.Ship()
		}
	}

	// The hostile target alone first: it holds the name gw-1.
	dialTarget(c, evilT)
	evil.traffic(resources, 3000)
	ship(evil)
	eventually(t, "the hostile target's flood counted", func() error { return totals("gw-1", evil, nil) })

	// The honest agent second.
	dialTarget(c, honestT)
	for k := range 6 {
		evil.traffic(resources, 3000)
		honest.traffic(resources, 7+k)
		ship(evil, honest)
	}
	both := func() error {
		if err := totals(honestName, honest, nil); err != nil {
			return err
		}
		return totals("gw-1", evil, nil)
	}
	eventually(t, "both instances' totals, apart", both)

	// Restart the honest instance: a new process on its own target.
	earlier := map[string][3]int64{}
	for _, r := range resources {
		earlier[r] = [3]int64{honest.pass[r], honest.block[r], honest.errs[r]}
	}
	honest.stop()
	clock.Advance(time.Second)
	fresh := startFleetAgent(t, clock, "gw-1")
	hp.retarget(fresh.addr)
	hp.cut()
	for k := range 6 {
		evil.traffic(resources, 3000)
		fresh.traffic(resources, 7+k)
		ship(evil, fresh)
	}
	eventually(t, "the restarted honest instance's totals", func() error { return totals(honestName, fresh, earlier) })
	eventually(t, "the re-served stream's reader keeps them apart", func() error {
		if err := totalsOf(down, honestName, fresh, earlier); err != nil {
			return err
		}
		return totalsOf(down, "gw-1", evil, nil)
	})

	s := c.Publish()
	for _, r := range s.Rejects {
		t.Errorf("rejected: %+v", r)
	}
	conflicts := 0
	for _, w := range s.Warnings {
		if n, ok := w.(Notice); ok && n.Kind == NoticeInstanceConflict {
			conflicts++
			if n.Holder != evil.addr || n.Target != hp.addr() || n.Instance != honestName || n.Resource != "gw-1" {
				t.Errorf("conflict %+v", n)
			}
		}
	}
	if conflicts != 1 {
		t.Errorf("%d conflict notices, want 1: %v", conflicts, s.Warnings)
	}
	for _, st := range s.Targets {
		if want := map[string]string{evil.addr: "gw-1", hp.addr(): honestName}[st.Name]; st.Instance != want {
			t.Errorf("target %s shows instance %q, want %q", st.Name, st.Instance, want)
		}
	}
	byInstance := map[string]bool{}
	for _, b := range s.Breakers {
		byInstance[b.Instance] = true
	}
	if !byInstance["gw-1"] || !byInstance[honestName] {
		t.Errorf("breaker states by instance %v: the two are not apart", byInstance)
	}
	states := map[string]bool{} // the instance label values of /metrics
	for series := range scrape(t, c) {
		if strings.HasPrefix(series, "sentinel_top_breaker_state{") {
			for _, l := range strings.Split(strings.Trim(series[strings.IndexByte(series, '{'):], "{}"), ",") {
				if v, ok := strings.CutPrefix(l, "instance="); ok {
					states[v] = true
				}
			}
		}
	}
	if len(states) != 2 || !states["gw-1"] || !states[honestName] {
		t.Errorf("/metrics breaker states by instance %v", states)
	}

	// The recording holds the two apart, and replays to the same totals.
	stop()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	r := replayWhole(t, recording)
	for _, name := range []string{"gw-1", honestName} {
		for _, res := range resources {
			live, _ := c.Totals(name, res)
			replayed, ok := r.Collector().Totals(name, res)
			if !ok || live != replayed {
				t.Errorf("%s %s: live %+v, replayed %+v", name, res, live, replayed)
			}
		}
	}
}
