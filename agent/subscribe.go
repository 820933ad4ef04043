package agent

import "github.com/sentinel-top/sentinel-top/core/wire"

// Subscription is an in-process reader of the agent's stream: it receives
// exactly what a websocket connection would (hello, rules, the backlog, then
// live messages, and bye on Close), without a network. Simulations and
// recorders use it; like any reader it has a bounded queue, and what it
// fails to drain in time is dropped and counted.
type Subscription struct {
	a       *Agent
	r       *reader
	initial []*frame
	closed  bool
}

// Subscribe registers an in-process reader with a queue of queueLen
// messages (DefaultQueueLen when <= 0). It counts against MaxReaders.
func (a *Agent) Subscribe(queueLen int) (*Subscription, error) {
	if queueLen <= 0 {
		queueLen = DefaultQueueLen
	}
	s := &Subscription{a: a}
	r, err := a.hub.registerQueue(a.opts.MaxReaders, queueLen, func() {
		s.initial = a.initialFrames()
	})
	if err != nil {
		return nil, err
	}
	s.r = r
	return s, nil
}

// Next returns the next message without waiting: ok is false when nothing is
// queued. A buckets message carries the count of messages this subscription
// lost, as on the wire. After the agent's bye, Next reports nothing more.
func (s *Subscription) Next() (msg []byte, ok bool) {
	if s.closed {
		return nil, false
	}
	for len(s.initial) > 0 {
		f := s.initial[0]
		s.initial = s.initial[1:]
		if f != nil {
			return f.data, true
		}
	}
	select {
	case bye := <-s.r.bye:
		s.closed = true
		s.a.hub.unregister(s.r)
		return bye.data, true
	default:
	}
	select {
	case f := <-s.r.queue:
		return s.a.withDropped(s.r, f), true
	default:
		return nil, false
	}
}

// Close unregisters the subscription.
func (s *Subscription) Close() {
	if !s.closed {
		s.closed = true
		s.a.hub.unregister(s.r)
	}
}

// Frames drains everything queued now, decoded and cloned, for callers that
// want messages rather than bytes.
func (s *Subscription) Frames() ([]wire.Message, error) {
	var out []wire.Message
	dec := wire.NewDecoder(wire.Limits{})
	for {
		data, ok := s.Next()
		if !ok {
			return out, nil
		}
		m, err := dec.Decode(data)
		if err != nil {
			return out, err
		}
		out = append(out, wire.Clone(m))
	}
}
