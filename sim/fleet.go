package sim

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// errDownstream is the business error of a failed call.
var errDownstream = errors.New("sim: downstream call failed")

// rateStep is the longest the arrival process goes without re-reading the
// rate: Poisson arrivals are memoryless, so drawing again after a step is
// exact for a rate constant over the step.
const rateStep = int64(250 * time.Millisecond)

// subQueue is a recording's subscription queue per instance: it is drained
// at every bucket boundary, and a bucket period holds one buckets frame, the
// rule changes and the transitions of that half second.
const subQueue = 1 << 14

type evKind uint8

// Event kinds, in the order they run when due at the same instant.
const (
	evStart   evKind = iota // an instance starts
	evRestart               // an instance's process restarts (before the rule sets due then)
	evRules                 // an instance loads a rule set
	evShip                  // bucket boundary: ship and read every stream (recording)
	evExit                  // a call returns
	evArrive                // a call arrives, or the arrival process re-reads its rate
	evStop                  // an instance shuts down
)

type event struct {
	at    int64 // ns since the scenario's start
	kind  evKind
	seq   uint64 // FIFO among events due at the same instant and of one kind
	inst  *instance
	call  *callState
	entry *core.Entry
	fail  bool
	real  bool // evArrive: a call arrives (else only the rate is re-read)
	n     int  // evRules: which change
}

func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}

// eventQueue is a binary min-heap of events by value: no allocation per
// event once it has grown.
type eventQueue []event

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{}
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(&h[l]) {
			m = r
		}
		if !h[m].before(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// instance is one process of an Instance during a run: gen counts the
// restarts before it.
type instance struct {
	idx   int
	gen   int
	spec  *Instance
	agent *agent.Agent
	sub   *agent.Subscription
	up    bool
	done  bool
	calls []*callState
}

// callState is one Call of one instance during a run: its random stream,
// its downstream, the instance's pool and jitter for that downstream.
type callState struct {
	inst  *instance
	spec  *Call
	down  *downstream
	rng   *rand.Rand
	pool  *pool
	jit   *episodes
	idle  int64
	jitOn bool
}

// fleet is a scenario being played: the event loop both recordings and the
// demo drive.
type fleet struct {
	s       *Scenario
	clock   *core.VirtualClock
	start   time.Time
	loop    int64
	record  bool // ManualShip agents, subscriptions, ship events
	insts   []*instance
	downs   map[string]*downstream
	q       eventQueue
	seq     uint64
	now     int64
	onStart func(*instance) error // after an instance's agent exists (demo)

	// Recording: the messages read from the streams since the last bucket
	// boundary, and where they go.
	out  []wire.Message
	emit func(wire.Message) error
}

// stream returns a random stream for one purpose, independent of every
// other: adding an instance or a call does not change the others' draws.
func stream(seed uint64, parts ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func newFleet(s *Scenario, start time.Time, record bool) *fleet {
	f := &fleet{
		s:      s,
		clock:  core.NewVirtualClock(start),
		start:  start,
		loop:   int64(s.Loop),
		record: record,
		downs:  map[string]*downstream{},
	}
	for _, d := range s.Downstreams {
		f.downs[d.Name] = &downstream{spec: d}
	}
	for i, spec := range s.Instances {
		in := f.process(i, spec, restartsBefore(s.Instances, i))
		f.insts = append(f.insts, in)
		f.push(event{at: int64(spec.Start), kind: evStart, inst: in})
		for _, r := range spec.Restarts {
			f.push(event{at: int64(r), kind: evRestart, inst: in})
		}
		if spec.Stop > 0 {
			f.push(event{at: int64(spec.Stop), kind: evStop, inst: in})
		}
	}
	if record {
		f.push(event{at: f.nextBoundary(0), kind: evShip})
	}
	return f
}

// process is the gen-th process of instance i (spec): its calls with their
// own random streams, and its own connection pools.
func (f *fleet) process(i int, spec *Instance, gen int) *instance {
	s := f.s
	in := &instance{idx: i, gen: gen, spec: spec}
	// A restarted process draws from streams of its own; the first one's
	// are named by the instance alone.
	var tail []string
	if gen > 0 {
		tail = []string{"restart", fmt.Sprint(gen)}
	}
	pools := map[string]*pool{}
	jits := map[string]*episodes{}
	for j := range spec.Calls {
		c := &spec.Calls[j]
		d := f.downs[c.Downstream]
		cs := &callState{
			inst: in, spec: c, down: d,
			rng: stream(s.Seed, append([]string{"call", spec.Name, c.Resource, c.Downstream, fmt.Sprint(j)}, tail...)...),
		}
		if d.spec.Pool != nil {
			if pools[d.spec.Name] == nil {
				pools[d.spec.Name] = &pool{}
			}
			cs.pool = pools[d.spec.Name]
			cs.idle = int64(d.spec.Pool.IdleTimeout)
			if cs.idle <= 0 {
				cs.idle = int64(time.Minute)
			}
		}
		if j := d.spec.Jitter; j != nil && (len(j.Instances) == 0 || contains(j.Instances, spec.Name)) {
			if jits[d.spec.Name] == nil {
				jits[d.spec.Name] = &episodes{rng: stream(s.Seed, append([]string{"jitter", spec.Name, d.spec.Name}, tail...)...)}
			}
			cs.jit = jits[d.spec.Name]
			cs.jitOn = true
		}
		in.calls = append(in.calls, cs)
	}
	return in
}

// restartsBefore is how many processes of the name of instance i ran
// before it.
func restartsBefore(insts []*Instance, i int) int {
	n := 0
	for _, o := range insts[:i] {
		if o.Name == insts[i].Name {
			n++
		}
	}
	return n
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (f *fleet) push(e event) {
	f.seq++
	e.seq = f.seq
	f.q.push(e)
}

// local is t within the loop.
func (f *fleet) local(t int64) time.Duration {
	if f.loop > 0 {
		return time.Duration(t % f.loop)
	}
	return time.Duration(t)
}

// nextBoundary is the first bucket boundary after t (ns since start), on
// the agents' clock.
func (f *fleet) nextBoundary(t int64) int64 {
	const bucket = int64(core.ResourceBucketMs) * int64(time.Millisecond)
	abs := f.start.UnixNano() + t
	next := (abs/bucket + 1) * bucket
	return next - f.start.UnixNano()
}

// runUntil plays every event due at or before end (ns since start).
func (f *fleet) runUntil(end int64) error {
	for len(f.q) > 0 && f.q[0].at <= end {
		e := f.q.pop()
		if e.at > f.now {
			f.now = e.at
			f.clock.Set(f.start.Add(time.Duration(e.at)))
		}
		if err := f.handle(&e); err != nil {
			return err
		}
	}
	if end > f.now {
		f.now = end
		f.clock.Set(f.start.Add(time.Duration(end)))
	}
	return nil
}

func (f *fleet) handle(e *event) error {
	switch e.kind {
	case evStart:
		return f.startInstance(e.inst)
	case evStop:
		return f.stopInstance(f.insts[e.inst.idx])
	case evRestart:
		return f.restartInstance(f.insts[e.inst.idx])
	case evRules:
		in := e.inst
		if !in.up {
			return nil
		}
		rc := &in.spec.Rules[e.n]
		if err := in.agent.LoadRules(rc.Breakers, rc.Flows, rc.Params...); err != nil {
			return fmt.Errorf("sim: %s: %w", in.spec.Name, err)
		}
		if f.loop > 0 {
			f.push(event{at: e.at + f.loop, kind: evRules, inst: in, n: e.n})
		}
	case evShip:
		for _, in := range f.insts {
			if in.up {
				in.agent.Ship()
			}
		}
		f.push(event{at: f.nextBoundary(e.at), kind: evShip})
		for _, in := range f.insts {
			if err := f.drain(in); err != nil {
				return err
			}
		}
		return f.flush()
	case evExit:
		cs := e.call
		if !cs.inst.up {
			return nil // the process is gone, and its call with it
		}
		var err error
		if e.fail {
			err = errDownstream
		}
		e.entry.Exit(err)
	case evArrive:
		cs := e.call
		if !cs.inst.up {
			return nil
		}
		if e.real {
			f.call(cs, e.at)
		}
		f.scheduleArrival(cs, e.at)
	}
	return nil
}

func (f *fleet) scheduleArrival(cs *callState, at int64) {
	rate := cs.spec.Traffic.Rate(f.local(at))
	if rate <= 0 {
		f.push(event{at: at + rateStep, kind: evArrive, call: cs})
		return
	}
	gap := int64(cs.rng.ExpFloat64() / rate * float64(time.Second))
	if gap >= rateStep {
		f.push(event{at: at + rateStep, kind: evArrive, call: cs})
		return
	}
	f.push(event{at: at + gap, kind: evArrive, call: cs, real: true})
}

// call runs one call: Entry, then the downstream's answer, then Exit when
// it is due.
func (f *fleet) call(cs *callState, at int64) {
	var entry *core.Entry
	var err error
	switch p := cs.spec.Params; len(p) {
	case 0:
		entry, err = cs.inst.agent.Entry(cs.spec.Resource)
	case 1:
		entry, err = cs.inst.agent.Entry(cs.spec.Resource, p[0])
	default:
		entry, err = cs.inst.agent.Entry(cs.spec.Resource, p[cs.rng.IntN(len(p))])
	}
	if err != nil {
		return // blocked by a rule: the caller falls back at once
	}
	rt, fail := f.respond(cs, at)
	f.push(event{at: at + rt, kind: evExit, call: cs, entry: entry, fail: fail})
}

// respond decides how long a call starting at at takes and whether it fails.
func (f *fleet) respond(cs *callState, at int64) (rt int64, fail bool) {
	d := cs.down.spec
	r := cs.rng
	lt := f.local(at)
	if d.Latency != nil {
		rt = int64(d.Latency.Sample(r))
	} else {
		rt = int64(20 * time.Millisecond)
	}
	fail = d.ErrorRate > 0 && r.Float64() < d.ErrorRate
	for i := range d.Faults {
		fl := &d.Faults[i]
		if !fl.hits(cs.inst.spec.Name) {
			continue
		}
		if sh := fl.share(lt); sh > 0 && r.Float64() < sh {
			if fl.Latency != nil {
				rt = int64(fl.Latency.Sample(r))
			}
			if fl.ErrorRate > 0 && r.Float64() < fl.ErrorRate {
				fail = true
			}
		}
	}
	if j := d.Jitter; cs.jitOn && lt >= j.From && (j.To <= 0 || lt < j.To) && cs.jit.in(j, at) {
		if r.Float64() < j.Share {
			rt = int64(j.Latency.Sample(r))
		}
	}
	if o := d.Overload; o != nil && float64(cs.down.started(at)) > o.QPS {
		rt = max(rt, int64(o.Latency.Sample(r)))
		if o.ErrorRate > 0 && r.Float64() < o.ErrorRate {
			fail = true
		}
	}
	var connIdx = -1
	if cs.pool != nil {
		i, cold := cs.pool.acquire(at, cs.idle)
		connIdx = i
		if cold {
			rt += int64(d.Pool.Handshake.Sample(r))
		}
	}
	if t := int64(cs.spec.Timeout); t > 0 && rt > t {
		rt, fail = t, true
	}
	rt = max(rt, 0)
	if connIdx >= 0 {
		cs.pool.conns[connIdx].freeAt = at + rt
	}
	return rt, fail
}

func (f *fleet) host(in *instance) string {
	if in.spec.Host != "" {
		return in.spec.Host
	}
	app := 0
	seen := map[string]bool{}
	for _, o := range f.s.Instances {
		if o.App == in.spec.App {
			break
		}
		if !seen[o.App] {
			seen[o.App] = true
			app++
		}
	}
	// A restart runs on its name's host: the names of the app before its
	// first process are counted once each.
	first := slices.IndexFunc(f.s.Instances, func(o *Instance) bool { return o.Name == in.spec.Name })
	n := 0
	named := map[string]bool{}
	for _, o := range f.s.Instances[:first] {
		if o.App == in.spec.App && !named[o.Name] {
			named[o.Name] = true
			n++
		}
	}
	return fmt.Sprintf("10.0.%d.%d", app+1, n+11)
}

func (f *fleet) startInstance(in *instance) error {
	if in.up || in.done {
		return nil
	}
	a, err := agent.New(agent.Options{
		App:        in.spec.App,
		Instance:   in.spec.Name,
		Host:       f.host(in),
		Clock:      f.clock,
		ManualShip: f.record,
	})
	if err != nil {
		return fmt.Errorf("sim: %s: %w", in.spec.Name, err)
	}
	in.agent = a
	in.up = true
	// The rule set in force at start is loaded before the stream opens.
	at := f.now
	first := 0
	for i, rc := range in.spec.Rules {
		if int64(rc.At) <= at {
			first = i + 1
		}
	}
	if first > 0 {
		rc := &in.spec.Rules[first-1]
		if err := a.LoadRules(rc.Breakers, rc.Flows, rc.Params...); err != nil {
			return fmt.Errorf("sim: %s: %w", in.spec.Name, err)
		}
	}
	for i := first; i < len(in.spec.Rules); i++ {
		f.push(event{at: int64(in.spec.Rules[i].At), kind: evRules, inst: in, n: i})
	}
	if f.loop > 0 {
		// Changes already past repeat from the next loop on.
		for i := 0; i < first; i++ {
			at := int64(in.spec.Rules[i].At)
			for at <= f.now {
				at += f.loop
			}
			f.push(event{at: at, kind: evRules, inst: in, n: i})
		}
	}
	if f.record {
		sub, err := a.Subscribe(subQueue)
		if err != nil {
			return fmt.Errorf("sim: %s: %w", in.spec.Name, err)
		}
		in.sub = sub
	}
	if f.onStart != nil {
		if err := f.onStart(in); err != nil {
			return err
		}
	}
	for _, cs := range in.calls {
		f.scheduleArrival(cs, f.now)
	}
	return nil
}

// restartInstance shuts an instance's process down and starts the next
// one in its place: the old process's pending events find it down and
// lapse.
func (f *fleet) restartInstance(old *instance) error {
	if !old.up {
		return nil
	}
	if err := f.stopInstance(old); err != nil {
		return err
	}
	in := f.process(old.idx, old.spec, old.gen+1)
	f.insts[old.idx] = in
	return f.startInstance(in)
}

// stopInstance shuts an instance down: its agent sends bye. What it had
// not shipped is lost, as with a real process.
func (f *fleet) stopInstance(in *instance) error {
	if !in.up {
		return nil
	}
	if err := f.drain(in); err != nil { // the queue first: bye overtakes it
		return err
	}
	in.agent.Close()
	in.up = false
	in.done = true
	return f.drain(in)
}

// drain reads what an instance's stream holds into f.out (recording only).
// Its hello carries the instance's simulated pid: the fleet shares one
// process.
func (f *fleet) drain(in *instance) error {
	if in.sub == nil {
		return nil
	}
	msgs, err := in.sub.Frames()
	if err != nil {
		return fmt.Errorf("sim: %s: reading its stream: %w", in.spec.Name, err)
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *wire.Hello:
			m.Pid = in.spec.Pid
			if m.Pid == 0 {
				m.Pid = int64(4000 + 137*in.idx)
			}
			m.Pid += int64(1000 * in.gen) // a new process, a new pid
		case *wire.Buckets:
			if m.Dropped > 0 {
				return fmt.Errorf("sim: %s: %d messages dropped by its stream", in.spec.Name, m.Dropped)
			}
		}
	}
	f.out = append(f.out, msgs...)
	return nil
}

// flush emits what was read, in time order; messages of one instance keep
// their order, and equal times keep the instances' order.
func (f *fleet) flush() error {
	slices.SortStableFunc(f.out, func(a, b wire.Message) int { return cmp.Compare(a.Head().Ts, b.Head().Ts) })
	for i, m := range f.out {
		f.out[i] = nil
		if f.emit != nil {
			if err := f.emit(m); err != nil {
				f.out = f.out[:0]
				return err
			}
		}
	}
	f.out = f.out[:0]
	return nil
}
