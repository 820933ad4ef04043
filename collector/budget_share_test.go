package collector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/deadport"
)

// hostileNewAppEveryFrame serves, on loopback, a stream that announces a
// new instance of a new app before every frame, each frame naming 200
// resources: each frame asks the collector to keep 200 new series and app
// series (about 8 MB). It returns the address.
func hostileNewAppEveryFrame(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := websocket.Upgrader{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		go func() { // answer pings
			for {
				if _, _, err := conn.NextReader(); err != nil {
					return
				}
			}
		}()
		send := func(m wire.Message) error {
			data, err := wire.Marshal(m)
			if err != nil {
				return err
			}
			return conn.WriteMessage(websocket.TextMessage, data)
		}
		for k := 0; ; k++ {
			now := time.Now().UnixMilli()
			inst := fmt.Sprint("hostile-", k)
			if send(&wire.Hello{Header: wire.Header{Ts: now, Instance: inst}, App: fmt.Sprint("app-", k), BucketMs: 500, StartedAt: 1}) != nil {
				return
			}
			b := &wire.Buckets{Header: wire.Header{Ts: now, Instance: inst}, BucketMs: 500}
			for i := range 200 {
				b.Items = append(b.Items, wire.NewBucketItem(fmt.Sprintf("res-%d-%d", k, i), now/500*500-500, core.Metrics{Pass: 1, Complete: 1}, false))
			}
			if send(b) != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestLateHonestTargetGetsItsShare (issue #34): a hostile target making a
// new app and instance every frame fills what it may of the budget; an
// honest agent that can be reached only once that is done (its proxy
// refuses until then) connects later and every call it admitted is
// counted, exactly. What was refused is counted against the hostile
// target alone, and shown in the snapshot's MemoryShares.
func TestLateHonestTargetGetsItsShare(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	hostile := hostileNewAppEveryFrame(t)
	deadAddr := deadport.Addr(t) // refused until the proxy is pointed at the agent
	honest := newProxy(t, deadAddr)
	c := New(Options{MaxMemory: 16 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	targets := []source.Target{
		{Name: hostile, URL: "ws://" + hostile + agent.StreamPath},
		{Name: honest.addr(), URL: "ws://" + honest.addr() + agent.StreamPath},
	}
	go func() { dial(ctx, c, targets, source.DialOptions{Seed: 1}); close(dialed) }()
	defer func() { cancel(); <-dialed }()

	shareOf := func(s *Snapshot, target string) MemoryShare {
		for _, sh := range s.MemoryShares {
			if sh.Target == target {
				return sh
			}
		}
		return MemoryShare{}
	}
	eventually(t, "the hostile target refused", func() error {
		if sh := shareOf(c.Publish(), hostile); sh.Refused < 100 {
			return fmt.Errorf("hostile share %+v", sh)
		}
		return nil
	})
	s := c.Publish()
	hs := shareOf(s, hostile)
	// Its share is half the model's (two targets), less the names and
	// the frames being read, which grow after the charges.
	if hs.Used > c.modelBudgetLocked()/2 || hs.Limit > c.modelBudgetLocked()/2 {
		t.Fatalf("the hostile target holds %d of a %d share (the model's budget %d)", hs.Used, hs.Limit, c.modelBudgetLocked())
	}

	// The honest agent arrives.
	fa := startFleetAgent(t, clock, "honest-1")
	honest.retarget(fa.addr)
	resources := []string{"db", "GET:/api/user/info", "payment"}
	eventually(t, "the honest target up", func() error {
		for _, st := range c.Publish().Targets {
			if st.Name == honest.addr() && st.Instance == "honest-1" {
				return nil
			}
		}
		return errors.New("not yet")
	})
	for k := range 10 {
		fa.traffic(resources, 20+k)
		clock.Advance(500 * time.Millisecond)
		fa.a.Ship()
	}
	eventually(t, "the honest agent's calls counted exactly", func() error {
		for _, r := range resources {
			got, ok := c.Totals("honest-1", r)
			if !ok || got.Pass != fa.pass[r] || got.Block != fa.block[r] || got.Error != fa.errs[r] {
				return fmt.Errorf("%s: collector pass/block/error %d/%d/%d, agent %d/%d/%d", r, got.Pass, got.Block, got.Error, fa.pass[r], fa.block[r], fa.errs[r])
			}
		}
		return nil
	})
	s = c.Publish()
	if sh := shareOf(s, honest.addr()); sh.Refused != 0 || sh.Used == 0 {
		t.Errorf("the honest target's share %+v: want something held, nothing refused", sh)
	}
	if hs := shareOf(s, hostile); hs.Refused == 0 || hs.Used > c.modelBudgetLocked()/2 {
		t.Errorf("the hostile target's share %+v", hs)
	}
	if s.MemoryUsed > c.modelBudgetLocked() {
		t.Errorf("%d bytes charged, over the model's budget %d", s.MemoryUsed, c.modelBudgetLocked())
	}
	// /metrics says the same, per target.
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.PrometheusCollector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "sentinel_top_target_memory_refused_total" {
			for _, m := range mf.GetMetric() {
				refused[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if refused[hostile] != float64(shareOf(s, hostile).Refused) || refused[hostile] == 0 {
		t.Errorf("/metrics: the hostile target refused %v, the snapshot says %d", refused[hostile], shareOf(s, hostile).Refused)
	}
	if v, ok := refused[honest.addr()]; !ok || v != 0 {
		t.Errorf("/metrics: the honest target refused %v (listed %v)", v, ok)
	}
}

// modelBudgetLocked is modelBudget under the collector's lock.
func (c *Collector) modelBudgetLocked() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.modelBudget()
}

// TestSharedAppSeriesAreNoTargetsAlone: the app x resource series and
// rules' resources of an app whose instances come from several targets
// are charged to no target's share once a second target's instance uses
// them, so the first target to connect does not pay for the fleet's; what
// each target's instances keep of their own stays charged to it.
func TestSharedAppSeriesAreNoTargetsAlone(t *testing.T) {
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms)), MaxMemory: 64 << 20, Triage: triage.Config{TraceBytes: -1}})
	c.AddTargets(feed.NewTargetRecord(feed.TargetStatus{Name: "a"}), feed.NewTargetRecord(feed.TargetStatus{Name: "b"}))
	resources := []string{"db", "cache", "GET:/api"}
	var rules []core.BreakerRule
	for _, r := range resources {
		rules = append(rules, core.BreakerRule{Resource: r, Strategy: core.ErrorCount, Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
	}
	feedAs := func(owner, inst string) {
		sink := c.Bound(owner)
		sink.Hello(owner, &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: inst}, App: "gateway", BucketMs: 500}, feed.Origin{})
		sink.Ingest(owner, &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: inst}, Version: "1", Breakers: append(rules,
			core.BreakerRule{Resource: "only-" + owner, Strategy: core.ErrorCount, Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})})
		b := &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: inst}, BucketMs: 500}
		for _, r := range resources {
			b.Items = append(b.Items, wire.BucketItem{Resource: r, Start: t0ms, Metrics: core.Metrics{Pass: 1}})
		}
		sink.Ingest(owner, b)
	}
	used := func() map[string]int64 {
		out := map[string]int64{}
		for _, sh := range c.Publish().MemoryShares {
			out[sh.Target] = sh.Used
		}
		return out
	}
	feedAs("a", "gw-1")
	alone := used()["a"]
	instance := instanceCost("gw-1")
	series := c.seriesBytes()
	var rule int64 // the rules' resources both name
	for _, r := range resources {
		rule += ruleResourceCost(r)
	}
	want := instance + 3*(series+c.appSeriesBytes()) + rule + ruleResourceCost("only-a")
	if alone != want {
		t.Fatalf("target a alone holds %d bytes, want %d", alone, want)
	}
	feedAs("b", "gw-2")
	got := used()
	// Each holds its instance, its series, and the rules' resource only
	// it names; the app series and the rules' resources both name are
	// the fleet's.
	if wantA := instance + 3*series + ruleResourceCost("only-a"); got["a"] != wantA {
		t.Errorf("target a holds %d bytes once b shares its app, want %d", got["a"], wantA)
	}
	if wantB := instanceCost("gw-2") + 3*series + ruleResourceCost("only-b"); got["b"] != wantB {
		t.Errorf("target b holds %d bytes, want %d", got["b"], wantB)
	}
	c.mu.Lock()
	common, total := c.commonHeld, c.memUsed
	c.mu.Unlock()
	if common != 3*c.appSeriesBytes()+rule || total != got["a"]+got["b"]+common {
		t.Errorf("common %d, total %d, shares %v", common, total, got)
	}
}

// TestMemorySharesListed: a snapshot lists every target that was refused
// something, and of the others the 16 holding the most.
func TestMemorySharesListed(t *testing.T) {
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms)), MaxMemory: 64 << 20})
	for i := range 40 {
		owner := fmt.Sprintf("t-%02d", i)
		c.AddTargets(feed.NewTargetRecord(feed.TargetStatus{Name: owner}))
		sink := c.Bound(owner)
		for k := range i % 5 { // t-04, t-09, ... hold the most: 4 instances
			sink.Hello(owner, &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: fmt.Sprint(owner, "-", k)}, App: "a"}, feed.Origin{})
		}
	}
	c.mu.Lock()
	c.shares["t-01"].refused = 3 // one of the smallest
	c.sharesGen++                // as charge does
	c.mu.Unlock()
	listed := map[string]MemoryShare{}
	for _, sh := range c.Publish().MemoryShares {
		listed[sh.Target] = sh
	}
	if len(listed) != 17 || listed["t-01"].Refused != 3 {
		t.Fatalf("%d listed, t-01 %+v: %v", len(listed), listed["t-01"], listed)
	}
	for i := 4; i < 40; i += 5 { // the 8 of 4 instances, then 8 of the 3s
		if _, ok := listed[fmt.Sprintf("t-%02d", i)]; !ok {
			t.Errorf("t-%02d, of the largest, not listed", i)
		}
	}
	// Ties go by name, so that snapshots list the same targets: with every
	// share equal (t-00, t-05, ... hold none: no share), the first 16 by
	// name and the refused t-21.
	c.mu.Lock()
	for _, sh := range c.shares {
		sh.used, sh.refused = 1000, 0
	}
	c.shares["t-21"].refused = 1
	c.sharesGen++
	c.mu.Unlock()
	var names []string
	for _, sh := range c.Publish().MemoryShares {
		names = append(names, sh.Target)
	}
	want := "t-01 t-02 t-03 t-04 t-06 t-07 t-08 t-09 t-11 t-12 t-13 t-14 t-16 t-17 t-18 t-19 t-21"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("equal shares listed %s, want %s", got, want)
	}
}

// TestMemorySharesMatchASortedList: on random shares (few distinct sizes,
// so ties abound) the listing is the 16 holding the most, ties by name,
// and every refused one, in name order: what sorting every share gives.
func TestMemorySharesMatchASortedList(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for round := range 200 {
		c := New(Options{MaxMemory: 64 << 20})
		n := rng.IntN(60)
		c.mu.Lock()
		var all []*budgetShare
		for i := range n {
			sh := c.shareOf(fmt.Sprintf("t-%03d", rng.IntN(1000)+i*1000))
			sh.used = int64(rng.IntN(4)) * 100
			if rng.IntN(10) == 0 {
				sh.refused = 1
			}
			all = append(all, sh)
		}
		c.mu.Unlock()
		slices.SortFunc(all, func(a, b *budgetShare) int {
			if a.used != b.used {
				return cmp.Compare(b.used, a.used)
			}
			return cmp.Compare(a.owner, b.owner)
		})
		var want []string
		for i, sh := range all {
			if i < listedShares || sh.refused > 0 {
				want = append(want, sh.owner)
			}
		}
		slices.Sort(want)
		var got []string
		for _, sh := range c.Publish().MemoryShares {
			got = append(got, sh.Target)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, %d shares: listed %v, want %v", round, n, got, want)
		}
	}
}

// The listing, kept between snapshots until a share moves, follows the
// charges, refusals and releases made between them: the same collector,
// its shares charged and released at random, listed as sorting every
// share afresh lists them at each snapshot.
func TestMemorySharesFollowTheCharges(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	c := New(Options{MaxMemory: 64 << 20})
	var all []*budgetShare
	c.mu.Lock()
	for i := range 40 {
		all = append(all, c.shareOf(fmt.Sprintf("t-%02d", i)))
	}
	c.mu.Unlock()
	for round := range 300 {
		c.mu.Lock()
		for range rng.IntN(4) {
			sh := all[rng.IntN(len(all))]
			switch n := int64(rng.IntN(3)+1) * 1000; {
			case rng.IntN(3) == 0 && sh.used >= n:
				c.release(sh, n)
			case rng.IntN(20) == 0:
				c.charge(sh, c.shareLimit()+1, "t", "too much") // refused
			default:
				c.charge(sh, n, "t", "some")
			}
		}
		sorted := slices.Clone(all)
		c.mu.Unlock()
		slices.SortFunc(sorted, func(a, b *budgetShare) int {
			return cmp.Or(cmp.Compare(b.used, a.used), cmp.Compare(a.owner, b.owner))
		})
		var want, got []string
		for i, sh := range sorted {
			if i < listedShares || sh.refused > 0 {
				want = append(want, sh.owner)
			}
		}
		slices.Sort(want)
		for _, sh := range c.Publish().MemoryShares {
			got = append(got, sh.Target)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: listed %v, want %v", round, got, want)
		}
	}
}
