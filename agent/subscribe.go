package agent

import (
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// Subscription is an in-process reader of the agent's stream: it receives
// exactly what a websocket connection would (hello, rules, the backlog, then
// live messages, and bye on Close), without a network. Simulations and
// recorders use it; like any reader it has a bounded queue, and what it
// fails to drain in time is dropped and counted.
type Subscription struct {
	*wsstream.Subscription
}

// Subscribe registers an in-process reader with a queue of queueLen
// messages (Options.QueueLen when <= 0). It counts against MaxReaders.
func (a *Agent) Subscribe(queueLen int) (*Subscription, error) {
	s, err := a.stream.Subscribe(queueLen)
	if err != nil {
		return nil, err
	}
	return &Subscription{s}, nil
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
