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

// restream re-serves every accepted message as one merged wire v1 stream,
// so that another collector (or a dashboard) can use this one as a target.
type restream struct {
	srv *wsstream.Server
	// Guarded by srv.Locked.
	hello   map[string]*wsstream.Frame
	rules   map[string]*wsstream.Frame
	backlog []held // buckets frames in arrival order
}

// held is a backlog frame with its arrival time on the collector's clock
// (arrival order is monotonic where senders' clocks may not be).
type held struct {
	arrived int64
	f       *wsstream.Frame
}

// Restream returns the merged stream of everything the collector accepts,
// as a websocket endpoint (http.Handler) for `sentinel-top serve`. A new
// reader receives the latest hello and rules of every instance, then the
// last minute of buckets, then live messages. It is created on first use;
// opts' Initial is the collector's own.
func (c *Collector) Restream(opts wsstream.Options) *wsstream.Server {
	c.teeMu.Lock()
	defer c.teeMu.Unlock()
	if c.restream != nil {
		return c.restream.srv
	}
	rs := &restream{hello: map[string]*wsstream.Frame{}, rules: map[string]*wsstream.Frame{}}
	opts.Initial = rs.initial
	rs.srv = wsstream.New(opts)
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
				rs.backlog = append(rs.backlog, held{now, f})
				cut, _ := slices.BinarySearchFunc(rs.backlog, now-RestreamBacklogMs, func(h held, t int64) int {
					return cmp.Compare(h.arrived, t)
				})
				cut = max(cut, len(rs.backlog)-maxRestreamBacklog)
				if cut > 0 && cut > len(rs.backlog)/2 {
					rs.backlog = slices.Clone(rs.backlog[cut:])
				} else if cut > 0 {
					rs.backlog = rs.backlog[cut:]
				}
			}
		}
		rs.srv.Broadcast(f)
	})
}
