package collector_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
)

// FuzzIngest reads its input twice.
//
// As one frame from a peer: decoding it and feeding the collector, twice,
// then taking a snapshot and a detail, never panics, and the second
// delivery changes no total.
//
// As a program building a stream of valid messages from three instances
// over three resources (ingestStream): buckets messages with items old and
// new, messages repeated, backlogs re-sent as a reconnect does, restarts,
// transitions, byes, and more instances and resources than the collector's
// limits take. Whatever the stream, after every message the collector's
// totals per instance x resource equal the sums over the distinct
// (instance, resource, start) items it accepted, computed here from the
// messages alone (streamModel), and its counters of messages and
// duplicates are exact.
func FuzzIngest(f *testing.F) {
	rc, err := fixtures.Open("sawtooth-db-slow")
	if err != nil {
		f.Fatal(err)
	}
	sc := bufio.NewScanner(rc)
	sc.Buffer(nil, 1<<20)
	for n := 0; sc.Scan() && n < 40; n++ {
		f.Add(bytes.Clone(sc.Bytes()))
	}
	rc.Close()
	f.Add([]byte(`{"v":1,"kind":"buckets","ts":5,"instance":"i","bucketMs":500,"items":[{"resource":"r","start":-500,"pass":9223372036854775807,"complete":1,"rtSum":1,"rtMin":1,"rtMax":1}]}`))
	f.Add([]byte(`{"v":1,"kind":"state","ts":-9,"instance":"i","resource":"r","strategy":2,"from":"HALF_OPEN","to":"OPEN","threshold":1e308,"retryTimeoutMs":-1}`))
	f.Add([]byte(`{"v":1,"kind":"rules","ts":5,"instance":"i","version":"v","params":[{"resource":"r","metricType":1,"threshold":200,"durationInSec":1,"specificItems":{"vip-9":1000}}],"flows":[{"resource":"r","threshold":9,"limitApp":"i"}]}`))
	f.Add([]byte(`{"v":1,"kind":"buckets","ts":5,"instance":"i","bucketMs":500,"items":[{"resource":"r","start":0,"pass":9,"block":3,"hot":[{"param":0,"value":"vip-123","pass":4,"block":3},{"value":"(other)","pass":5}]}]}`))
	for _, p := range seedPrograms() {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ingestFrame(t, data)
		ingestStream(t, data)
	})
}

// ingestFrame feeds data as one frame, twice.
func ingestFrame(t *testing.T, data []byte) {
	c := collector.New(collector.Options{})
	dec := wire.NewDecoder(wire.Limits{})
	m, err := dec.Decode(data)
	if err != nil {
		c.Reject("fuzz", err)
	} else {
		c.Ingest("fuzz", m)
		before := frameTotals(c, m)
		c.Ingest("fuzz", m) // twice: dedupe
		if after := frameTotals(c, m); after != before {
			t.Fatalf("delivered twice, totals went from %s to %s", before, after)
		}
	}
	s := c.Publish()
	for _, r := range s.Rows {
		c.Detail(r.App, r.Resource, s.At-60000, s.At)
	}
}

// frameTotals describes the totals of every resource m names.
func frameTotals(c *collector.Collector, m wire.Message) string {
	var sb strings.Builder
	var names []string
	switch m := m.(type) {
	case *wire.Buckets:
		for _, it := range m.Items {
			names = append(names, it.Resource)
		}
	case *wire.State:
		names = append(names, m.Resource)
	}
	for _, res := range names {
		tm, ok := c.Totals(m.Head().Instance, res)
		fmt.Fprintf(&sb, "[%q %d %d %d %d %d %v]", res, tm.Pass, tm.Block, tm.Complete, tm.Error, tm.Slow, ok)
	}
	return sb.String()
}

// The stream's shape, and the collector's limits it runs against.
const (
	streamT0          = int64(1764460800000) // a multiple of every bucketMs below
	streamInstances   = 3
	streamResources   = 3
	streamMaxInsts    = 2 // Options.MaxInstances: the third instance is turned away
	streamMaxRes      = 2 // Options.MaxResourcesPerInstance: so is a third resource
	streamMaxMessages = 300
	// streamWindow is how far behind the newest start of a series, in
	// buckets of its length, a bucket is still told apart from the ones
	// already counted (since the instance last started): 1024 buckets, 512 s
	// of 500 ms ones. The collector refuses older ones (an overflow, not
	// summed and not a duplicate).
	streamWindow = 1024
)

// ingestStream builds a stream of valid messages from data and feeds it to
// a collector, checking it against streamModel after every message.
//
// The stream keeps to what a sender does: every item's start is a multiple
// of its message's bucketMs, an instance's bucketMs changes only when it
// restarts (a hello with a later startedAt), and re-sent backlogs hold only
// messages of the instance's current process.
func ingestStream(t *testing.T, data []byte) {
	c := collector.New(collector.Options{MaxInstances: streamMaxInsts, MaxResourcesPerInstance: streamMaxRes})
	model := newStreamModel()
	type sender struct {
		startedAt, bucketMs int64
		cursor              int64           // bucket index of the newest bucket sent
		backlog             []*wire.Buckets // this process's buckets messages, oldest first
	}
	var senders [streamInstances]sender
	for i := range senders {
		senders[i] = sender{bucketMs: 500, cursor: 2000}
	}
	p := 0
	next := func() int64 {
		if p >= len(data) {
			return 0
		}
		p++
		return int64(data[p-1])
	}
	ts := streamT0
	var last wire.Message
	var log []string
	for n := 0; p < len(data) && n < streamMaxMessages; n++ {
		op, i := next()%6, next()%streamInstances
		s := &senders[i]
		inst := fmt.Sprintf("i%d", i)
		ts += 250
		h := wire.Header{Ts: ts, Instance: inst}
		var m wire.Message
		switch op {
		case 0: // hello: the same process again, a restart, or an older startedAt
			k, later, bucketMs := next()%3, next(), []int64{500, 1000, 200}[next()%3]
			started := s.startedAt
			switch {
			case started == 0 || k == 1:
				started += 1000 + later
			case k == 2 && started > 1:
				started--
			}
			if s.startedAt != 0 && started > s.startedAt {
				// A new process: its own bucket length, no backlog of the old one.
				s.bucketMs, s.backlog = bucketMs, nil
			}
			s.startedAt = max(s.startedAt, started)
			m = &wire.Hello{Header: h, StartedAt: started, BucketMs: s.bucketMs}
		case 1: // buckets: items at or behind the newest, and moving it on
			s.cursor += next() % 4
			if a := next(); a >= 250 {
				s.cursor += streamWindow - 3 + a - 250 // a window on, give or take a few buckets
			}
			b := &wire.Buckets{Header: h, BucketMs: s.bucketMs}
			for range next() % 8 {
				back := next()
				if back >= 200 {
					back += streamWindow - 208 // around the far edge of the window
				}
				pass, complete := next(), next()%8
				it := wire.BucketItem{Resource: fmt.Sprintf("r%d", next()%streamResources),
					Start: streamT0 + (s.cursor-back)*s.bucketMs, Metrics: core.Metrics{Pass: pass, Block: next() % 16, Complete: complete}}
				it.Error, it.Slow = next()%(complete+1), next()%(complete+1)
				if complete > 0 {
					it.RtSum, it.RtMin, it.RtMax = complete*7, 1, 7
				}
				b.Items = append(b.Items, it)
			}
			s.backlog = append(s.backlog, b)
			m = b
		case 2: // a reconnect: the backlog re-sent, up to the newest
			depth := int(next() % 8)
			for _, b := range s.backlog[max(0, len(s.backlog)-1-depth):] {
				log = append(log, fmt.Sprintf("resend %s", describe(b)))
				feed(t, c, model, b, log)
			}
			continue
		case 3: // the last message again
			if last == nil {
				continue
			}
			m = last
		case 4: // a transition: it makes a series as buckets do
			pairs := [][2]core.State{{core.Closed, core.Open}, {core.Open, core.HalfOpen}, {core.HalfOpen, core.Open}, {core.HalfOpen, core.Closed}}
			pair := pairs[next()%4]
			m = &wire.State{Header: h, Resource: fmt.Sprintf("r%d", next()%streamResources), From: pair[0], To: pair[1],
				Threshold: 0.5, RetryTimeoutMs: 10000}
		case 5:
			m = &wire.Bye{Header: h, Reason: "shutdown"}
		}
		if err := wire.Validate(m, wire.Limits{}); err != nil {
			t.Fatalf("the stream built an invalid message %s: %v", describe(m), err)
		}
		last = m
		log = append(log, describe(m))
		feed(t, c, model, m, log)
	}
	s := c.Publish()
	for _, r := range s.Rows {
		c.Detail(r.App, r.Resource, s.At-60000, s.At)
	}
}

// feed ingests m and compares the collector with the model.
func feed(t *testing.T, c *collector.Collector, model *streamModel, m wire.Message, log []string) {
	t.Helper()
	want := model.apply(m)
	if got := c.Ingest("fuzz", m); got != want {
		t.Fatalf("Ingest = %v, want %v\nstream:\n%s", got, want, strings.Join(log, "\n"))
	}
	for i := range streamInstances {
		inst := fmt.Sprintf("i%d", i)
		for r := range streamResources {
			res := fmt.Sprintf("r%d", r)
			var got, want [5]int64
			var ok bool
			var tm core.Metrics
			tm, ok = c.Totals(inst, res)
			got = [5]int64{tm.Pass, tm.Block, tm.Complete, tm.Error, tm.Slow}
			se := model.series[[2]string{inst, res}]
			if se != nil {
				want = se.sums
			}
			if ok != (se != nil) || got != want {
				t.Fatalf("after %d messages, totals of %s %s = %v (known %v), want %v (known %v)\nstream:\n%s",
					len(log), inst, res, got, ok, want, se != nil, strings.Join(log, "\n"))
			}
		}
	}
	messages, rejected, dups := c.Counters()
	if messages != model.messages || rejected != 0 || dups != model.dups {
		t.Fatalf("after %d messages, counters: %d messages, %d rejected, %d duplicates; want %d, 0, %d\nstream:\n%s",
			len(log), messages, rejected, dups, model.messages, model.dups, strings.Join(log, "\n"))
	}
}

func describe(m wire.Message) string {
	switch m := m.(type) {
	case *wire.Hello:
		return fmt.Sprintf("hello %s startedAt +%d bucketMs %d", m.Instance, m.StartedAt, m.BucketMs)
	case *wire.Buckets:
		var sb strings.Builder
		fmt.Fprintf(&sb, "buckets %s bucketMs %d:", m.Instance, m.BucketMs)
		for _, it := range m.Items {
			fmt.Fprintf(&sb, " %s@%d(%d)", it.Resource, (it.Start-streamT0)/m.BucketMs, it.Pass)
		}
		return sb.String()
	case *wire.State:
		return fmt.Sprintf("state %s %s %s->%s", m.Instance, m.Resource, m.From, m.To)
	}
	return fmt.Sprintf("%s %s", m.Kind(), m.Head().Instance)
}

// streamModel is what the collector must make of a stream, from the
// messages alone: an instance or a resource over the limits is turned
// away; a bucket item counts once per (instance, resource, start) while the
// instance's process lasts (a hello with a later startedAt than the one
// known starts a new one), unless it is a whole window behind the newest
// start of its series; a repeat is a duplicate.
type streamModel struct {
	instances map[string]*modelInstance
	series    map[[2]string]*modelSeries
	messages  int64
	dups      int64
}

type modelInstance struct {
	startedAt int64
	resources int
}

type modelSeries struct {
	sums   [5]int64 // pass, block, complete, error, slow
	seen   map[int64]bool
	newest int64 // bucket index
	// states are the transitions held (ts, from, to): one sent again is
	// a duplicate (a reconnect's backlog sends them again), across
	// restarts too.
	states map[[3]int64]bool
}

func newStreamModel() *streamModel {
	return &streamModel{instances: map[string]*modelInstance{}, series: map[[2]string]*modelSeries{}}
}

// apply takes m as the collector must, and reports whether it is accepted.
func (sm *streamModel) apply(m wire.Message) bool {
	name := m.Head().Instance
	in := sm.instances[name]
	if in == nil {
		if len(sm.instances) >= streamMaxInsts {
			return false
		}
		in = &modelInstance{}
		sm.instances[name] = in
	}
	sm.messages++
	seriesOf := func(res string) *modelSeries {
		k := [2]string{name, res}
		if se := sm.series[k]; se != nil {
			return se
		}
		if in.resources >= streamMaxRes {
			return nil
		}
		in.resources++
		se := &modelSeries{seen: map[int64]bool{}, states: map[[3]int64]bool{}}
		sm.series[k] = se
		return se
	}
	switch m := m.(type) {
	case *wire.Hello:
		if in.startedAt != 0 && m.StartedAt > in.startedAt {
			for k, se := range sm.series {
				if k[0] == name {
					se.seen = map[int64]bool{}
				}
			}
		}
		in.startedAt = max(in.startedAt, m.StartedAt)
	case *wire.Buckets:
		for _, it := range m.Items {
			se := seriesOf(it.Resource)
			if se == nil {
				continue
			}
			idx := it.Start / m.BucketMs
			switch {
			case len(se.seen) > 0 && se.newest-idx >= streamWindow:
				// too old to tell: refused
			case se.seen[it.Start]:
				sm.dups++
			default:
				if len(se.seen) == 0 || idx > se.newest {
					se.newest = idx
				}
				se.seen[it.Start] = true
				for k, v := range []int64{it.Pass, it.Block, it.Complete, it.Error, it.Slow} {
					se.sums[k] += v
				}
			}
		}
	case *wire.State:
		if se := seriesOf(m.Resource); se != nil {
			k := [3]int64{m.Ts, int64(m.From), int64(m.To)}
			if se.states[k] {
				sm.dups++
			}
			se.states[k] = true
		}
	}
	return true
}

// program writes stream operations the way ingestStream reads them.
type program []byte

// hello: the first one of inst, or then k 0 the same process, 1 a restart
// (with bucketMs 0: 500 ms, 1: 1000 ms, 2: 200 ms), 2 an older startedAt.
func (p program) hello(inst, k, bucketMs byte) program {
	return append(p, 0, inst, k, 0, bucketMs)
}

// buckets moves inst's newest bucket on by adv (0 to 3) and sends one item
// of resource res per back, back buckets behind the newest (see far).
func (p program) buckets(inst, res, adv byte, backs ...byte) program {
	return p.items(inst, res, adv, 0, backs)
}

// jump is buckets after moving the newest bucket on by by, a window give or
// take a few buckets (streamWindow-3 to streamWindow+2).
func (p program) jump(inst, res byte, by int, backs ...byte) program {
	a := by - (streamWindow - 3) + 250
	if a < 250 || a > 255 {
		panic("jump out of range")
	}
	return p.items(inst, res, 0, byte(a), backs)
}

func (p program) items(inst, res, adv, jump byte, backs []byte) program {
	if len(backs) > 7 {
		panic("at most 7 items")
	}
	p = append(p, 1, inst, adv, jump, byte(len(backs)))
	for i, back := range backs {
		p = append(p, back, 10+byte(i), 4, res, 1, 1, 2)
	}
	return p
}

// far is the back byte of an item d buckets behind the newest, for d around
// the window's edge (streamWindow-8 to streamWindow+47).
func far(d int) byte {
	b := d - (streamWindow - 208)
	if b < 200 || b > 255 {
		panic("far out of range")
	}
	return byte(b)
}

func (p program) resend(inst, depth byte) program { return append(p, 2, inst, depth) }
func (p program) repeat() program                 { return append(p, 3, 0) }
func (p program) state(inst, res byte) program    { return append(p, 4, inst, 0, res) }
func (p program) bye(inst byte) program           { return append(p, 5, inst) }

func seedPrograms() [][]byte {
	var steady, edge, restart, limits program
	// Steady buckets, each repeated, backlogs re-sent.
	for k := range byte(12) {
		steady = steady.buckets(0, k%2, 1, 0, 1, 5).repeat().resend(0, k%8)
	}
	// Consecutive buckets, then a jump of a window less one: the newest
	// bucket's slot must be cleared for it, and the old ones a window back
	// are duplicates (1023 behind) or refused (1024 and more); a backlog of
	// them re-sent; then jumps of a whole window and more.
	edge = edge.hello(0, 0, 0)
	for range 6 {
		edge = edge.buckets(0, 0, 1, 0)
	}
	edge = edge.jump(0, 0, streamWindow-1, 0, far(streamWindow-1), far(streamWindow), far(streamWindow+1)).resend(0, 7).repeat()
	edge = edge.buckets(0, 0, 1, 0, 1, far(streamWindow-1), far(streamWindow))
	edge = edge.jump(0, 0, streamWindow, 0, 1, far(streamWindow-1), far(streamWindow)).resend(0, 3)
	edge = edge.jump(0, 0, streamWindow+1, 0, far(streamWindow-1)).resend(0, 7)
	// A restart repeats the starts of the process before it; a later
	// restart changes the bucket length.
	restart = restart.hello(1, 0, 0).buckets(1, 0, 1, 0, 1, 2).buckets(1, 1, 1, 0, 1)
	restart = restart.hello(1, 0, 0).resend(1, 2).hello(1, 1, 0).buckets(1, 0, 0, 0, 1, 2, 3).repeat()
	restart = restart.hello(1, 2, 0).resend(1, 2).hello(1, 1, 1).buckets(1, 0, 1, 0, 1, 2).resend(1, 3).bye(1)
	// Three instances and three resources against limits of two.
	for i := range byte(3) {
		limits = limits.state(i, 2).buckets(i, 0, 1, 0).buckets(i, 1, 1, 0).buckets(i, 2, 1, 0, 1).resend(i, 2)
	}
	return [][]byte{steady, edge, restart, limits}
}
