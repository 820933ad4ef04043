package collector

import (
	"cmp"
	"slices"

	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// RestreamBacklogMs is how much buckets history a new reader of the
// re-served stream receives, as an agent's backlog.
const RestreamBacklogMs = 60_000

// maxRestreamBacklog bounds the backlog in frames, whatever the fleet size.
const maxRestreamBacklog = 200_000

// DefaultRestreamBacklogBytes is RestreamOptions.BacklogBytes when zero.
const DefaultRestreamBacklogBytes = 64 << 20

// heldOverhead is what a backlog frame costs beside its bytes (the held
// entry and the frame header), so that tiny frames are bounded too.
const heldOverhead = 64

// RestreamOptions configures the re-served stream.
type RestreamOptions struct {
	// Options configures the websocket server; its Initial is the
	// collector's own.
	wsstream.Options
	// BacklogBytes bounds the buckets history kept for new readers, in
	// encoded bytes: a large or hostile fleet gets less than a minute of it
	// rather than more memory. Default: 64 MiB.
	BacklogBytes int64
}

// restream re-serves every accepted message as one merged wire v1 stream,
// so that another collector (or a dashboard) can use this one as a target.
type restream struct {
	srv      *wsstream.Server
	maxBytes int64
	// Guarded by srv.Locked.
	hello   map[string]*wsstream.Frame
	rules   map[string]*wsstream.Frame
	backlog []held // buckets frames in arrival order
	bytes   int64  // what backlog holds, heldOverhead included
}

// held is a backlog frame with its arrival time on the collector's clock
// (arrival order is monotonic where senders' clocks may not be).
type held struct {
	arrived int64
	f       *wsstream.Frame
}

func (h held) cost() int64 { return int64(len(h.f.Data)) + heldOverhead }

// Restream returns the merged stream of everything the collector accepts,
// as a websocket endpoint (http.Handler) for `sentinel-top serve`. A new
// reader receives the latest hello and rules of every instance, then the
// last minute of buckets (at most opts.BacklogBytes of them), then live
// messages. It is created on first use.
func (c *Collector) Restream(opts RestreamOptions) *wsstream.Server {
	c.teeMu.Lock()
	defer c.teeMu.Unlock()
	if c.restream != nil {
		return c.restream.srv
	}
	if opts.BacklogBytes <= 0 {
		opts.BacklogBytes = DefaultRestreamBacklogBytes
	}
	rs := &restream{maxBytes: opts.BacklogBytes, hello: map[string]*wsstream.Frame{}, rules: map[string]*wsstream.Frame{}}
	opts.Initial = rs.initial
	rs.srv = wsstream.New(opts.Options)
	c.restream = rs
	c.teeing.Store(true)
	return rs.srv
}

func (rs *restream) initial() []*wsstream.Frame {
	names := make([]string, 0, len(rs.hello))
	for name := range rs.hello {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]*wsstream.Frame, 0, 2*len(names)+len(rs.backlog))
	for _, name := range names {
		out = append(out, rs.hello[name])
		if r := rs.rules[name]; r != nil {
			out = append(out, r)
		}
	}
	for _, h := range rs.backlog {
		out = append(out, h.f)
	}
	return out
}

// publish re-serves one accepted message that arrived at now; c.teeMu is held.
func (rs *restream) publish(m wire.Message, now int64) {
	f, err := wsstream.Encode(wire.Clone(m))
	if err != nil {
		return
	}
	rs.srv.Locked(func() {
		h := m.Head()
		switch m := m.(type) {
		case *wire.Meta:
			return
		case *wire.Hello:
			rs.hello[h.Instance] = f
		case *wire.Rules:
			rs.rules[h.Instance] = f
		case *wire.Bye:
			delete(rs.hello, h.Instance)
			delete(rs.rules, h.Instance)
		case *wire.Buckets:
			if len(m.Items) > 0 {
				// The encoded bytes only: the decoded message goes once the
				// live readers have it.
				rs.keep(held{now, &wsstream.Frame{Data: f.Data}})
			}
		}
		rs.srv.Broadcast(f)
	})
}

// keep adds h to the backlog and forgets what is older than
// RestreamBacklogMs, over maxRestreamBacklog frames or over maxBytes.
func (rs *restream) keep(h held) {
	rs.backlog = append(rs.backlog, h)
	rs.bytes += h.cost()
	cut, _ := slices.BinarySearchFunc(rs.backlog, h.arrived-RestreamBacklogMs, func(x held, t int64) int {
		return cmp.Compare(x.arrived, t)
	})
	cut = max(cut, len(rs.backlog)-maxRestreamBacklog)
	for _, old := range rs.backlog[:cut] {
		rs.bytes -= old.cost()
	}
	for ; cut < len(rs.backlog) && rs.bytes > rs.maxBytes; cut++ {
		rs.bytes -= rs.backlog[cut].cost()
	}
	if cut == 0 {
		return
	}
	clear(rs.backlog[:cut]) // the frames are freed now, not when the array is next copied
	if cut > len(rs.backlog)/2 {
		rs.backlog = slices.Clone(rs.backlog[cut:])
	} else {
		rs.backlog = rs.backlog[cut:]
	}
}
