package collector

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync/atomic"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// RestreamBacklogMs is how much buckets history a new reader of the
// re-served stream receives, as an agent's backlog.
const RestreamBacklogMs = wire.BacklogMs

// maxRestreamBacklog bounds the backlog in frames, whatever the fleet size.
const maxRestreamBacklog = 200_000

// The re-served stream's shares of the memory budget (Options.MaxMemory),
// taken from the model's when Restream is called: what it keeps for new
// readers (the latest hello and rules of every instance, and the buckets
// backlog) and what every reader's queue may hold together. At the default
// 512 MiB budget: 64 MiB each, 4 MiB a reader of 16.
const (
	// RestreamShare is the budget's fraction, 1/RestreamShare, kept for
	// new readers, unless RestreamOptions.BacklogBytes says otherwise.
	RestreamShare = 8
	// ReadersShare is the budget's fraction, 1/ReadersShare, every
	// reader's queue holds together, unless Options.QueueBytes says
	// otherwise: each reader may hold its part, 1/MaxReaders of it.
	ReadersShare = 8
)

// What the re-served stream turned away, by reason (Snapshot.Overflow).
const (
	// ReasonRestreamBacklog counts buckets frames forgotten from the
	// backlog before their minute for its share, and hello or rules
	// frames not kept for new readers because they alone exceed it.
	ReasonRestreamBacklog = "restream_backlog"
	// ReasonReaderQueue counts frames not queued for a reader whose queue
	// is full (its messages or its share of bytes): it reads too slowly.
	ReasonReaderQueue = "reader_queue"
)

// heldOverhead is what a kept frame costs beside its bytes (the held
// entry and the frame header), so that tiny frames are bounded too.
const heldOverhead = 64

// RestreamOptions configures the re-served stream.
type RestreamOptions struct {
	// Options configures the websocket server; its Initial and Follow are
	// the collector's own. QueueBytes, when zero, is the readers' share of
	// the budget over MaxReaders.
	wsstream.Options
	// BacklogBytes bounds what is kept for new readers: the latest hello
	// and rules of every instance, then the buckets history, in encoded
	// bytes; a large or hostile fleet gets less than a minute of history
	// rather than more memory. Default: the budget over RestreamShare. It
	// is taken from the model's budget, and capped at a quarter of it.
	BacklogBytes int64
}

// restream re-serves every accepted message as one merged wire v1 stream,
// so that another collector (or a dashboard) can use this one as a target.
// Frames hold their encoding alone, shared by the backlog and every queue.
type restream struct {
	srv      *wsstream.Server
	maxBytes int64
	// Guarded by srv.Locked.
	hello map[string]stamped
	rules map[string]stamped
	// last is each instance's breakers' latest transition, by breaker
	// (resource and rule id), so that a reader learns their states;
	// breakers is a hash of each breaker rule each instance last sent, by
	// breaker (charged to the share, as the frames are): a changed rule
	// replaced its breaker, whose last transition is then forgotten.
	last     map[string]map[string]stamped
	breakers map[string]map[string]uint64
	seed     maphash.Seed
	// replacedAt is when (restream.published) each breaker replaced in
	// the last minute was: its transitions before are not sent again.
	replacedAt map[string]uint64
	backlog    []held // buckets and state frames in arrival order
	first      uint64 // the sequence number of backlog[0]
	// published counts the frames broadcast: a reader that arrived before
	// an instance's rules were broadcast gets them live, not again from
	// the instances' hello and rules.
	published uint64
	// What is kept (hello, rules and backlog, heldOverhead included), and
	// what the share turned away; read by Publish without the lock.
	bytes   atomic.Int64
	refused atomic.Int64
}

// held is a backlog frame with its arrival time on the collector's clock
// (arrival order is monotonic where senders' clocks may not be); for a
// transition, its breaker (instance, resource and rule id) and when it was
// broadcast (restream.published before it).
type held struct {
	arrived int64
	f       *wsstream.Frame
	breaker string
	at      uint64
}

// stamped is an instance's latest hello or rules frame and when it was
// broadcast (restream.published before it).
type stamped struct {
	f  *wsstream.Frame
	at uint64
}

func cost(f *wsstream.Frame) int64 { return int64(len(f.Data)) + heldOverhead }

// Restream returns the merged stream of everything the collector accepts,
// as a websocket endpoint (http.Handler) for `sentinel-top serve`. A new
// reader receives the latest hello and rules of every instance, then the
// last minute of buckets (at most opts.BacklogBytes of them), then live
// messages; each is read when the reader gets to it, so a reader that
// does not read holds nothing but its queue. The stream's shares are taken
// from the model's budget. It is created on first use.
func (c *Collector) Restream(opts RestreamOptions) *wsstream.Server {
	c.teeMu.Lock()
	defer c.teeMu.Unlock()
	if c.restream != nil {
		return c.restream.srv
	}
	budget := c.opts.MaxMemory
	if opts.BacklogBytes <= 0 {
		opts.BacklogBytes = budget / RestreamShare
	}
	opts.BacklogBytes = min(opts.BacklogBytes, budget/4)
	opts.MaxReaders = cmp.Or(max(opts.MaxReaders, 0), wsstream.DefaultMaxReaders)
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = budget / ReadersShare / int64(opts.MaxReaders)
	}
	opts.QueueBytes = min(opts.QueueBytes, budget/4/int64(opts.MaxReaders))
	rs := &restream{maxBytes: opts.BacklogBytes, hello: map[string]stamped{}, rules: map[string]stamped{},
		last: map[string]map[string]stamped{}, breakers: map[string]map[string]uint64{}, replacedAt: map[string]uint64{},
		seed: maphash.MakeSeed()}
	opts.Initial, opts.Follow = nil, rs.follow
	rs.srv = wsstream.New(opts.Options)
	c.mu.Lock()
	c.streamShare = opts.BacklogBytes + opts.QueueBytes*int64(opts.MaxReaders)
	c.mu.Unlock()
	c.restream = rs
	c.teeing.Store(true)
	return rs.srv
}

// follow starts a new reader at the instances known now and the backlog's
// current end; under srv's lock.
func (rs *restream) follow() func() *wsstream.Frame {
	cur := &restreamCursor{names: make([]string, 0, len(rs.hello)), seq: rs.first, end: rs.first + uint64(len(rs.backlog)),
		joined: rs.published}
	for name := range rs.hello {
		cur.names = append(cur.names, name)
	}
	slices.Sort(cur.names)
	return func() *wsstream.Frame {
		var f *wsstream.Frame
		rs.srv.Locked(func() { f = rs.next(cur) })
		return f
	}
}

// restreamCursor is how far a new reader got: through the instances'
// hello, rules and breakers' last transitions, then the backlog by
// sequence number.
type restreamCursor struct {
	names     []string
	rulesNext bool
	states    []*wsstream.Frame // the current instance's, still to send
	seq, end  uint64
	joined    uint64 // restream.published when the reader arrived
}

// next is the reader's next frame, nil at the end; a frame forgotten since
// the reader arrived is skipped. Under srv's lock.
func (rs *restream) next(cur *restreamCursor) *wsstream.Frame {
	for len(cur.names) > 0 || len(cur.states) > 0 {
		if len(cur.states) > 0 {
			f := cur.states[0]
			cur.states = cur.states[1:]
			return f
		}
		name := cur.names[0]
		if !cur.rulesNext {
			cur.rulesNext = true
			// Always the instance's latest hello, before its rules: one
			// broadcast since the reader arrived (a restart) reaches it
			// twice, which a reader takes as the same hello again.
			if h, ok := rs.hello[name]; ok {
				return h.f
			}
			continue
		}
		cur.rulesNext = false
		cur.names = cur.names[1:]
		if _, helloed := rs.hello[name]; !helloed {
			continue
		}
		// Transitions broadcast since the reader arrived reach it live;
		// those before, again from the backlog when it holds them (the
		// reader takes a transition it holds as the same again).
		cur.states = rs.lastStates(name, cur.joined)
		// Rules broadcast since the reader arrived reach it live, once.
		if r, ok := rs.rules[name]; ok && r.at < cur.joined {
			return r.f
		}
	}
	// The backlog, less the transitions of breakers replaced since.
	for cur.seq = max(cur.seq, rs.first); cur.seq < cur.end; {
		h := rs.backlog[cur.seq-rs.first]
		cur.seq++
		if h.breaker == "" || h.at >= rs.replacedAt[h.breaker] {
			return h.f
		}
	}
	return nil
}

// publish re-serves one accepted message that arrived at now; c.teeMu is held.
func (rs *restream) publish(m wire.Message, now int64) {
	data, err := wire.Marshal(m)
	if err != nil {
		return
	}
	f := &wsstream.Frame{Data: data} // no decoded message: it would outlive the call in every queue
	rs.srv.Locked(func() {
		h := m.Head()
		switch m := m.(type) {
		case *wire.Meta:
			return
		case *wire.Hello:
			rs.state(rs.hello, h.Instance, f)
		case *wire.Rules:
			rs.state(rs.rules, h.Instance, f)
			rs.replaced(h.Instance, m.Breakers)
		case *wire.Bye:
			rs.state(rs.hello, h.Instance, nil)
			rs.state(rs.rules, h.Instance, nil)
			for breaker := range rs.last[h.Instance] {
				rs.lastState(h.Instance, breaker, nil)
			}
			rs.keepBreakers(h.Instance, nil)
		case *wire.State:
			breaker := m.Resource + "\x00" + m.RuleID
			rs.lastState(h.Instance, breaker, f)
			rs.keep(held{now, f, h.Instance + "\x00" + breaker, rs.published}, now)
		case *wire.Buckets:
			if len(m.Items) > 0 {
				rs.keep(held{arrived: now, f: f}, now)
			}
		}
		rs.srv.Broadcast(f)
		rs.published++
	})
}

// state keeps f as instance's latest of its kind (nil: forgets it), within
// the share: the oldest history goes first, and a frame that does not fit
// even then is not kept (counted).
func (rs *restream) state(m map[string]stamped, instance string, f *wsstream.Frame) {
	if old, ok := m[instance]; ok {
		rs.bytes.Add(-cost(old.f))
		delete(m, instance)
	}
	if f == nil {
		return
	}
	if rs.bytes.Load()+cost(f) > rs.maxBytes {
		rs.trim(0, rs.maxBytes-cost(f))
	}
	if rs.bytes.Load()+cost(f) > rs.maxBytes {
		rs.refused.Add(1)
		return
	}
	m[instance] = stamped{f, rs.published}
	rs.bytes.Add(cost(f))
}

// lastState keeps f as the latest transition of the instance's breaker
// (nil: forgets it), within the share as state does.
func (rs *restream) lastState(instance, breaker string, f *wsstream.Frame) {
	m := rs.last[instance]
	if m == nil {
		if f == nil {
			return
		}
		m = map[string]stamped{}
		rs.last[instance] = m
	}
	rs.state(m, breaker, f)
	if len(m) == 0 {
		delete(rs.last, instance)
	}
}

// replaced forgets the last transitions of the instance's breakers whose
// rule the rules just sent changed or dropped: a new breaker took the
// place of each, CLOSED without a transition (as in core, sentinel-golang
// and Java Sentinel); the transitions of those the backlog holds are not
// sent again (replacedAt).
func (rs *restream) replaced(instance string, rules []core.BreakerRule) {
	next := make(map[string]uint64, len(rules))
	for _, r := range rules {
		next[r.Resource+"\x00"+r.ID] = maphash.Comparable(rs.seed, r)
	}
	for breaker, old := range rs.breakers[instance] {
		if h, ok := next[breaker]; ok && h == old {
			continue
		}
		if _, ok := rs.last[instance][breaker]; !ok {
			continue // no transition of it held
		}
		rs.lastState(instance, breaker, nil)
		if len(rs.replacedAt) < maxRestreamBacklog {
			rs.replacedAt[instance+"\x00"+breaker] = rs.published
		}
	}
	rs.keepBreakers(instance, next)
}

// keepBreakers keeps the instance's breaker rules' hashes (nil: forgets
// them), charged to the share; what does not fit is not kept (counted),
// and a later change of those rules then forgets nothing.
func (rs *restream) keepBreakers(instance string, m map[string]uint64) {
	cost := func(m map[string]uint64) int64 {
		n := int64(0)
		for k := range m {
			n += int64(len(k)) + heldOverhead
		}
		return n
	}
	if old, ok := rs.breakers[instance]; ok {
		rs.bytes.Add(-cost(old))
		delete(rs.breakers, instance)
	}
	if len(m) == 0 {
		return
	}
	if c := cost(m); rs.bytes.Load()+c <= rs.maxBytes {
		rs.breakers[instance] = m
		rs.bytes.Add(c)
	} else {
		rs.refused.Add(1)
	}
}

// lastStates are the instance's breakers' latest transitions broadcast
// before joined, oldest first.
func (rs *restream) lastStates(instance string, joined uint64) []*wsstream.Frame {
	var out []stamped
	for _, st := range rs.last[instance] {
		if st.at < joined {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(x, y stamped) int { return cmp.Compare(x.at, y.at) })
	frames := make([]*wsstream.Frame, len(out))
	for i, st := range out {
		frames[i] = st.f
	}
	return frames
}

// keep adds h to the backlog and forgets what is older than
// RestreamBacklogMs, over maxRestreamBacklog frames or over the share.
func (rs *restream) keep(h held, now int64) {
	rs.backlog = append(rs.backlog, h)
	rs.bytes.Add(cost(h.f))
	cut, _ := slices.BinarySearchFunc(rs.backlog, now-RestreamBacklogMs, func(x held, t int64) int {
		return cmp.Compare(x.arrived, t)
	})
	cut = max(cut, len(rs.backlog)-maxRestreamBacklog)
	rs.trim(cut, rs.maxBytes)
}

// trim forgets the backlog's first cut frames, then more until what is kept
// is within limit (those counted as refused).
func (rs *restream) trim(cut int, limit int64) {
	for _, old := range rs.backlog[:cut] {
		rs.bytes.Add(-cost(old.f))
	}
	for ; cut < len(rs.backlog) && rs.bytes.Load() > limit; cut++ {
		rs.bytes.Add(-cost(rs.backlog[cut].f))
		rs.refused.Add(1)
	}
	if cut == 0 {
		return
	}
	if len(rs.replacedAt) > 0 {
		// A replacement older than every transition held has nothing left
		// to hide.
		oldest := rs.published
		for _, h := range rs.backlog[cut:] {
			if h.breaker != "" {
				oldest = h.at
				break
			}
		}
		for b, at := range rs.replacedAt {
			if at <= oldest {
				delete(rs.replacedAt, b)
			}
		}
	}
	clear(rs.backlog[:cut]) // the frames are freed now, not when the array is next copied
	rs.first += uint64(cut)
	if cut > len(rs.backlog)/2 {
		rs.backlog = slices.Clone(rs.backlog[cut:])
	} else {
		rs.backlog = rs.backlog[cut:]
	}
}

// streamMemory adds the re-served stream's bytes to the snapshot's memory
// used, and what its shares turned away to its overflow. c.mu is held.
func (c *Collector) streamMemory(s *Snapshot) {
	c.teeMu.Lock()
	rs := c.restream
	c.teeMu.Unlock()
	if rs == nil {
		return
	}
	_, dropped := rs.srv.Stats()
	s.MemoryUsed += rs.bytes.Load() + rs.srv.QueuedBytes()
	for reason, n := range map[string]int64{ReasonRestreamBacklog: rs.refused.Load(), ReasonReaderQueue: dropped} {
		if n > 0 {
			s.Overflow = append(s.Overflow, RejectCount{Reason: reason, Count: n, Last: "the re-served stream"})
		}
	}
	slices.SortFunc(s.Overflow, func(a, b RejectCount) int { return cmp.Compare(a.Reason, b.Reason) })
}
