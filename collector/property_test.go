package collector

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// fleetOracle is what a random stream should leave in the fleet model,
// computed apart from the collector.
type fleetOracle struct {
	lastArrive map[string]int64
	bye        map[string]bool
	version    map[string]string
	guarded    map[string]map[string]bool // instance -> resources with a breaker rule
	hasSeries  map[string]map[string]bool
	state      map[string]map[string]core.State
	seen       map[string]map[string]map[int64]bool // instance -> resource -> starts, this process
	totals     map[string]int64                     // app/resource -> pass
	// lastTs is the sender time of each instance's latest message; first
	// that of its first data (bucket start or transition) for each
	// resource since its series began; started its process's start.
	lastTs  map[string]int64
	first   map[string]map[string]int64
	started map[string]int64
	stateAt map[string]map[string]int64 // sender time of the latest state change
}

// firstData notes data of inst for r at ts (sender clock).
func (o *fleetOracle) firstData(inst, r string, ts int64) {
	if o.first[inst] == nil {
		o.first[inst] = map[string]int64{}
	}
	if f, ok := o.first[inst][r]; !ok || ts < f {
		o.first[inst][r] = ts
	}
}

func (o *fleetOracle) live(inst string, now, stale int64) bool {
	return !o.bye[inst] && now-o.lastArrive[inst] <= stale
}

// TestRandomStreamsEveryViewAgrees feeds random streams (restarts, reconnect
// backlogs, rule changes, byes, silences, skewed clocks) and, after every
// period, requires the snapshot's header, rows and breaker states, a
// /metrics scrape and the detail screen to agree with each other and with
// an independent account of the stream: which instances are alive, their
// rule versions, their breaker states, and the exact totals. 40 seeds (2
// under -race, racetest.Share: each stream is played in one goroutine).
func TestRandomStreamsEveryViewAgrees(t *testing.T) {
	for seed := uint64(1); seed <= uint64(racetest.Share(40, 20)); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { randomStream(t, seed) })
	}
}

func randomStream(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	const stale = 15_000
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	var rec bytes.Buffer
	w := wire.NewWriter(&rec)
	// Plans have their own tests; replaying them at each snapshot here
	// would cost minutes under -race.
	c := New(Options{Clock: vc, StaleAfter: stale * time.Millisecond, Record: w, PlanEvery: time.Hour})
	nInst := 3 + rng.IntN(4)
	resources := []string{"db", "GET:/api/x", "风控"}
	o := &fleetOracle{lastArrive: map[string]int64{}, bye: map[string]bool{}, version: map[string]string{},
		guarded: map[string]map[string]bool{}, hasSeries: map[string]map[string]bool{},
		state: map[string]map[string]core.State{}, seen: map[string]map[string]map[int64]bool{}, totals: map[string]int64{},
		lastTs: map[string]int64{}, first: map[string]map[string]int64{}, started: map[string]int64{},
		stateAt: map[string]map[string]int64{}}
	type inst struct {
		name, app       string
		skew, startedAt int64
		silentUntil     int64
		movedAt         int64
		sent            []*wire.Buckets // this process's last minute, for backlog re-sends
		rulesV          int
	}
	var insts []*inst
	for i := range nInst {
		insts = append(insts, &inst{name: fmt.Sprintf("gw-%d", i), app: []string{"gateway", "order"}[i%2],
			skew: int64(rng.IntN(6001) - 3000)})
	}
	now := t0ms
	send := func(in *inst, m wire.Message) {
		if !c.Ingest(in.name, m) {
			t.Fatalf("refused %T", m)
		}
		o.lastArrive[in.name] = now
		o.lastTs[in.name] = max(o.lastTs[in.name], m.Head().Ts)
		if _, isBye := m.(*wire.Bye); !isBye {
			o.bye[in.name] = false
		}
	}
	rules := func(in *inst) {
		in.rulesV++
		var bs []core.BreakerRule
		o.guarded[in.name] = map[string]bool{}
		for _, r := range resources {
			if rng.IntN(3) > 0 {
				bs = append(bs, core.BreakerRule{Resource: r, Strategy: core.ErrorRatio, Threshold: 0.5,
					MinRequestAmount: 20, StatIntervalMs: 1000, RetryTimeoutMs: uint32(5000 + rng.IntN(3)*1000)})
				o.guarded[in.name][r] = true
			}
		}
		v := fmt.Sprintf("%s-v%d", in.name, in.rulesV)
		o.version[in.name] = v
		send(in, &wire.Rules{Header: wire.Header{Ts: now + in.skew, Instance: in.name}, Version: v, Breakers: bs})
	}
	start := func(in *inst) {
		in.startedAt = now + in.skew
		o.started[in.name] = in.startedAt
		in.sent = nil
		o.seen[in.name] = map[string]map[int64]bool{}
		o.state[in.name] = map[string]core.State{}
		o.stateAt[in.name] = map[string]int64{}
		send(in, &wire.Hello{Header: wire.Header{Ts: now + in.skew, Instance: in.name}, App: in.app,
			StartedAt: in.startedAt, BucketMs: 500})
		rules(in)
	}
	for _, in := range insts {
		start(in)
	}
	for step := range 400 {
		now = t0ms + int64(step+1)*500
		vc.Set(time.UnixMilli(now))
		for _, in := range insts {
			if now < in.silentUntil {
				continue
			}
			switch x := rng.IntN(200); {
			case x < 2: // a restart: a new process, counters and states anew
				if rng.IntN(3) == 0 && now-in.movedAt > 60_000 { // in another app: its series start over there
					in.app, in.movedAt = map[string]string{"gateway": "order", "order": "gateway"}[in.app], now
					o.hasSeries[in.name] = nil
					o.first[in.name] = nil
				}
				start(in)
			case x < 4:
				send(in, &wire.Bye{Header: wire.Header{Ts: now + in.skew, Instance: in.name}, Reason: "shutdown"})
				o.bye[in.name] = true
				in.silentUntil = now + int64(rng.IntN(40_000))
				continue
			case x < 6: // silent, no bye, sometimes past the stale period
				in.silentUntil = now + int64(rng.IntN(40_000))
				continue
			case x < 9:
				rules(in)
			case x < 11 && len(in.sent) > 0: // a reconnect's backlog
				for _, b := range in.sent {
					send(in, b)
				}
			}
			b := &wire.Buckets{Header: wire.Header{Ts: now + in.skew, Instance: in.name}, BucketMs: 500}
			startMs := now + in.skew - 500
			startMs -= startMs % 500
			if rng.IntN(8) == 0 {
				// A bucket that comes late, seconds after the ones around it
				// (a Java poll's late second, a metric log).
				startMs -= 500 * int64(1+rng.IntN(8))
			}
			for _, r := range resources {
				if rng.IntN(4) == 0 {
					continue
				}
				p := int64(rng.IntN(50))
				b.Items = append(b.Items, wire.BucketItem{Resource: r, Start: startMs, Metrics: core.Metrics{Pass: p, Complete: p}})
				o.firstData(in.name, r, startMs)
				if !o.seen[in.name][r][startMs] {
					if o.seen[in.name][r] == nil {
						o.seen[in.name][r] = map[int64]bool{}
					}
					o.seen[in.name][r][startMs] = true
					o.totals[in.app+"/"+r] += p
				}
				if o.hasSeries[in.name] == nil {
					o.hasSeries[in.name] = map[string]bool{}
				}
				o.hasSeries[in.name][r] = true
			}
			send(in, b)
			in.sent = append(in.sent, b)
			if len(in.sent) > 120 {
				in.sent = in.sent[1:]
			}
			if rng.IntN(20) == 0 {
				r := resources[rng.IntN(len(resources))]
				from := o.state[in.name][r]
				to := []core.State{core.Closed, core.Open, core.HalfOpen}[rng.IntN(3)]
				if to != from {
					send(in, &wire.State{Header: wire.Header{Ts: now + in.skew, Instance: in.name}, Resource: r,
						Strategy: core.ErrorRatio, From: from, To: to, Threshold: 0.5, RetryTimeoutMs: 5000})
					o.state[in.name][r] = to
					o.stateAt[in.name][r] = now + in.skew
					o.firstData(in.name, r, now+in.skew)
					if o.hasSeries[in.name] == nil {
						o.hasSeries[in.name] = map[string]bool{}
					}
					o.hasSeries[in.name][r] = true
				}
			}
		}
		if rng.IntN(2) == 0 {
			c.Publish() // snapshots between the checks, as Run makes them every 250 ms
		}
		if step%5 == 4 {
			checkViews(t, c, o, insts2names(insts, func(i *inst) (string, string) { return i.name, i.app }), now, stale)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	checkRecording(t, c, &rec)
}

// checkRecording replays what c recorded into a new collector and requires
// the same exact totals and, for every instance and resource, the same
// breaker history and the same spans of what is not known: a recording
// keeps each bucket and each transition once, and what settled a backlog.
func checkRecording(t *testing.T, c *Collector, rec *bytes.Buffer) {
	t.Helper()
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	r := New(Options{Clock: vc, StaleAfter: time.Hour})
	rd := wire.NewReader(rec, "recording")
	for m, err := range rd.All() {
		if err != nil {
			t.Fatal(err)
		}
		if ts := m.Head().Ts; ts > vc.UnixMilli() { // a replay's clock follows its input
			vc.Set(time.UnixMilli(ts))
		}
		r.Ingest("replay", m)
	}
	got, want := r.Publish().Totals, c.Publish().Totals
	for i := range want {
		want[i].States = ProvenanceExact // what a replay says of its source's states is its own
	}
	for i := range got {
		got[i].States = ProvenanceExact
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed totals %+v\nlive %+v", got, want)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, in := range c.insts {
		rin := r.insts[name]
		if rin == nil {
			t.Fatalf("%s: not in the replay", name)
		}
		if !slices.Equal(rin.Unreceived, in.Unreceived) || !slices.Equal(rin.Absent, in.Absent) {
			t.Fatalf("%s: replayed unreceived %v absent %v, live %v %v", name, rin.Unreceived, rin.Absent, in.Unreceived, in.Absent)
		}
		for res, s := range in.series {
			rs := rin.series[res]
			if rs == nil || len(rs.tracks) != len(s.tracks) || rs.first != s.first {
				t.Fatalf("%s %s: replayed series %+v, live %+v", name, res, rs, s)
			}
			for i, tr := range s.tracks {
				if !reflect.DeepEqual(rs.tracks[i].Steps, tr.Steps) || rs.tracks[i].State != tr.State {
					t.Fatalf("%s %s: replayed history %v (%s), live %v (%s)", name, res, rs.tracks[i].Steps, rs.tracks[i].State, tr.Steps, tr.State)
				}
			}
		}
	}
}

func insts2names[T any](xs []T, f func(T) (string, string)) map[string]string {
	out := map[string]string{}
	for _, x := range xs {
		n, a := f(x)
		out[n] = a
	}
	return out
}

// checkViews compares the snapshot, /metrics and the detail with the
// oracle at now.
func checkViews(t *testing.T, c *Collector, o *fleetOracle, apps map[string]string, now, stale int64) {
	t.Helper()
	s := c.Publish()
	m := scrape(t, c)
	at := fmt.Sprintf("at +%d ms", now-t0ms)
	checkRowsAfresh(t, c, s, at)
	live := 0
	wantStates := map[string]core.State{}
	rowInst := map[string]int{}
	for name, app := range apps {
		if !o.live(name, now, stale) {
			continue
		}
		live++
		for r := range o.hasSeries[name] {
			rowInst[app+"/"+r]++
			if o.guarded[name][r] {
				wantStates[app+"/"+r+"/"+name] = o.state[name][r]
			}
		}
	}
	if s.Instances != live || int(m["sentinel_top_instances{}"]) != live {
		t.Fatalf("%s: header %d, /metrics %v, want %d live instances", at, s.Instances, m["sentinel_top_instances{}"], live)
	}
	for _, row := range s.Rows {
		if row.Instances != rowInst[row.App+"/"+row.Resource] {
			t.Fatalf("%s: row %s/%s counts %d instances, want %d", at, row.App, row.Resource, row.Instances, rowInst[row.App+"/"+row.Resource])
		}
		if row.Breakers.Total() > row.Instances {
			t.Fatalf("%s: row %s/%s: %d breakers of %d instances", at, row.App, row.Resource, row.Breakers.Total(), row.Instances)
		}
	}
	if len(s.Breakers) != len(wantStates) {
		t.Fatalf("%s: %d breaker states, want %d", at, len(s.Breakers), len(wantStates))
	}
	for _, b := range s.Breakers {
		key := b.App + "/" + b.Resource + "/" + b.Instance
		want, ok := wantStates[key]
		if !ok || b.State != want {
			t.Fatalf("%s: %s is %s, want %s (known %v)", at, key, b.State, want, ok)
		}
		for _, st := range []core.State{core.Closed, core.HalfOpen, core.Open} {
			v := m[fmt.Sprintf("sentinel_top_breaker_state{app=%s,instance=%s,provenance=exact,resource=%s,state=%s}", b.App, b.Instance, b.Resource, st)]
			if (v == 1) != (st == b.State) {
				t.Fatalf("%s: /metrics has %s %s = %v, the snapshot %s", at, key, st, v, b.State)
			}
		}
	}
	if n := countPrefix(m, "sentinel_top_breaker_state{"); n != 3*len(wantStates) {
		t.Fatalf("%s: /metrics has %d breaker state series, want %d", at, n, 3*len(wantStates))
	}
	for _, tot := range s.Totals {
		key := tot.App + "/" + tot.Resource
		if tot.Pass != o.totals[key] || int64(m["sentinel_top_resource_pass_total{app="+tot.App+",resource="+tot.Resource+"}"]) != o.totals[key] {
			t.Fatalf("%s: %s passed %d (/metrics %v), want %d", at, key, tot.Pass, m["sentinel_top_resource_pass_total{app="+tot.App+",resource="+tot.Resource+"}"], o.totals[key])
		}
	}
	for _, row := range s.Rows {
		d := c.Detail(row.App, row.Resource, now-60_000, now)
		for _, id := range d.Instances {
			isLive := o.live(id.Instance, now, stale)
			if id.Gone == isLive {
				t.Fatalf("%s: detail %s/%s says %s gone=%v, want %v", at, row.App, row.Resource, id.Instance, id.Gone, !isLive)
			}
			if id.RulesVersion != o.version[id.Instance] {
				t.Fatalf("%s: detail shows %s at rules %q, want %q", at, id.Instance, id.RulesVersion, o.version[id.Instance])
			}
			if want, ok := wantStates[row.App+"/"+row.Resource+"/"+id.Instance]; ok && isLive && id.State != want {
				t.Fatalf("%s: detail shows %s %s, the snapshot %s", at, id.Instance, id.State, want)
			}
		}
		checkTimelines(t, c, o, d, at, now, stale)
	}
}

// checkTimelines requires the detail's bands and a report's finding
// timelines (Collector.Timelines) to draw the same history of each
// instance over the detail's range, and that history to be unknown where
// the oracle says nothing is known: before the instance's first data for
// the resource, and after its last message once it is gone; a live
// instance's last cell is the state it reported last.
func checkTimelines(t *testing.T, c *Collector, o *fleetOracle, d *Detail, at string, now, stale int64) {
	t.Helper()
	const cells = 60
	edges := make([]int64, cells+1)
	for i := range edges {
		edges[i] = d.From + (d.To-d.From)*int64(i)/cells
	}
	f := triage.Finding{App: d.App, Resource: d.Resource, From: d.From, To: d.To}
	for _, id := range d.Instances {
		f.Instances = append(f.Instances, id.Instance)
	}
	byName := map[string]triage.Timeline{}
	for _, tl := range c.Timelines([]triage.Finding{f}, nil)[0].Timelines {
		byName[tl.Instance] = tl
	}
	for _, id := range d.Instances {
		band := id.Timeline()
		if band.KnownTo == 0 || band.KnownTo > d.To {
			band.KnownTo = d.To
		}
		got := band.Cells(edges)
		if tl, ok := byName[id.Instance]; ok {
			if tl.KnownTo == 0 || tl.KnownTo > d.To {
				tl.KnownTo = d.To
			}
			if report := tl.Cells(edges); !slices.Equal(report, got) {
				t.Fatalf("%s: %s/%s %s: the detail draws %v, a report's timeline %v", at, d.App, d.Resource, id.Instance, got, report)
			}
		}
		if last := got[cells-1]; o.live(id.Instance, now, stale) && last != triage.StateUnknown && last != o.state[id.Instance][d.Resource] &&
			edges[cells-1] > max(o.started[id.Instance], o.stateAt[id.Instance][d.Resource]) {
			t.Fatalf("%s: %s/%s %s: drawn %s at the end, its state is %s", at, d.App, d.Resource, id.Instance, last, o.state[id.Instance][d.Resource])
		}
		first, seen := o.first[id.Instance][d.Resource]
		for i, st := range got {
			if st == triage.StateUnknown {
				continue
			}
			if !seen || edges[i+1] <= first {
				t.Fatalf("%s: %s/%s %s: cell %d drawn %s before its first data (%d, seen %v)", at, d.App, d.Resource, id.Instance, i, st, first-edges[i], seen)
			}
			if !o.live(id.Instance, now, stale) && edges[i] >= o.lastTs[id.Instance] {
				t.Fatalf("%s: %s/%s %s: gone, yet cell %d drawn %s after its last message", at, d.App, d.Resource, id.Instance, i, st)
			}
		}
	}
}

// checkRowsAfresh requires the rows and breaker states kept up to date
// between snapshots to be those of a snapshot that takes every part anew.
func checkRowsAfresh(t *testing.T, c *Collector, s *Snapshot, at string) {
	t.Helper()
	c.mu.Lock()
	c.pub = pubCache{}
	for _, a := range c.apps {
		a.sums = rowSums{}
	}
	for _, in := range c.insts {
		in.changed, in.listed = true, false
		in.queued, in.counted, in.measured, in.skewed, in.inGuarded = false, false, false, false, false
		c.touch(in)
		for _, se := range in.seriesList {
			se.part = rowPart{}
		}
	}
	c.mu.Unlock()
	fresh := c.Publish()
	byInstance := func(x, y BreakerState) int {
		return cmp.Or(cmp.Compare(x.Instance, y.Instance), cmp.Compare(x.Resource, y.Resource))
	}
	kept, afresh := slices.SortedFunc(slices.Values(s.Breakers), byInstance), slices.SortedFunc(slices.Values(fresh.Breakers), byInstance)
	if !reflect.DeepEqual(s.Rows, fresh.Rows) || !slices.Equal(kept, afresh) ||
		s.Instances != fresh.Instances || s.Apps != fresh.Apps || s.Resources != fresh.Resources ||
		!reflect.DeepEqual(clockWarningsOf(s), clockWarningsOf(fresh)) {
		t.Fatalf("%s: rows kept up to date differ from rows taken afresh:\nkept  %+v %+v\nfresh %+v %+v", at, s.Rows, kept, fresh.Rows, afresh)
	}
}

// clockWarningsOf is the snapshot's warnings about clocks.
func clockWarningsOf(s *Snapshot) []Warning {
	var out []Warning
	for _, w := range s.Warnings {
		switch w.(type) {
		case CollectorClock, ClockSkew:
			out = append(out, w)
		}
	}
	return out
}
