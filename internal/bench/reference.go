package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/jsonref"
)

// reference is what decoding the fleet's buckets messages costs on this
// machine, measured in this process once the agents have stopped, so that
// a run's µs per item can be read against the machine it ran on: the same
// code measured 2.3 to 3.5 times apart on two machines of the same kind
// (docs/BENCHMARKS.md, "On a slower host"). Two decoders read the same
// frames, each the fastest of referenceRounds rounds: encoding/json's
// Unmarshal into a destination it reuses and checking nothing (its best
// case, the reference of core/wire's benchmarks), and the wire Decoder
// the collector's sources decode with. The zero reference is "not
// measured".
type reference struct {
	frames, items  int
	jsonNs, wireNs float64 // a decoded item, the fastest round's
}

const (
	referenceRounds = 3
	// referenceRound is how long a round decodes the frames again and
	// again, at least.
	referenceRound = 100 * time.Millisecond
	// referenceBuckets is how many bucket periods of an agent's messages
	// the decoders read: 20 s of them.
	referenceBuckets = 40
)

// measureReference times both decoders on the frames an agent of the
// fleet's shape sends.
func measureReference(resources int, rate float64) (reference, error) {
	frames, items, err := fleetFrames(resources, rate, referenceBuckets)
	if err != nil {
		return reference{}, err
	}
	ref := reference{frames: len(frames), items: items}
	if ref.items == 0 {
		return reference{}, fmt.Errorf("reference: the agent's %d buckets messages held no item", len(frames))
	}
	var m jsonref.Buckets
	jsonNs, err := fastestRound(frames, func(f []byte) error { return json.Unmarshal(f, &m) })
	if err != nil {
		return reference{}, fmt.Errorf("reference: encoding/json: %w", err)
	}
	dec := wire.NewDecoder(wire.Limits{})
	wireNs, err := fastestRound(frames, func(f []byte) error { _, err := dec.Decode(f); return err })
	if err != nil {
		return reference{}, fmt.Errorf("reference: wire: %w", err)
	}
	ref.jsonNs, ref.wireNs = jsonNs/float64(ref.items), wireNs/float64(ref.items)
	return ref, nil
}

// fastestRound decodes every frame with decode, again and again for at
// least referenceRound, referenceRounds times, and returns the fastest
// round's time for one pass over the frames, in ns.
func fastestRound(frames [][]byte, decode func([]byte) error) (float64, error) {
	best := math.Inf(1)
	for range referenceRounds {
		passes, start := 0, time.Now()
		for ; passes == 0 || time.Since(start) < referenceRound; passes++ {
			for _, f := range frames {
				if err := decode(f); err != nil {
					return 0, err
				}
			}
		}
		best = min(best, float64(time.Since(start).Nanoseconds())/float64(passes))
	}
	return best, nil
}

// fleetFrames are the buckets messages n bucket periods of an agent of the
// fleet send: the fleet's resources each called rate times a second, one
// call in ten failing, as the agents' traffic calls them (agents.go), on a
// virtual clock, and the items they hold. The messages with no item
// (heartbeats) are left out.
func fleetFrames(resources int, rate float64, n int) (frames [][]byte, items int, err error) {
	base := time.UnixMilli(1764460800000)
	clock := core.NewVirtualClock(base)
	a, err := agent.New(agent.Options{App: "bench-1", Instance: instanceName(1), Clock: clock, ManualShip: true})
	if err != nil {
		return nil, 0, err
	}
	defer a.Close()
	sub, err := a.Subscribe(n + 16)
	if err != nil {
		return nil, 0, err
	}
	defer sub.Close()
	names := resourceNames(resources)
	bucket := time.Duration(core.ResourceBucketMs) * time.Millisecond
	dec := wire.NewDecoder(wire.Limits{})
	done := int64(0)
	for b := 1; b <= n; b++ {
		// The calls due by the bucket's end, in its middle.
		clock.Set(base.Add(time.Duration(b)*bucket - bucket/2))
		for ; done < int64(rate*(time.Duration(b)*bucket).Seconds()); done++ {
			for _, r := range names {
				e, err := a.Entry(r)
				if err != nil {
					continue
				}
				var cause error
				if done%10 == 0 {
					cause = errFailedCall
				}
				e.Exit(cause)
			}
		}
		clock.Set(base.Add(time.Duration(b)*bucket + time.Millisecond))
		a.Ship()
		for {
			f, ok := sub.Next()
			if !ok {
				break
			}
			m, err := dec.Decode(f)
			if err != nil {
				return nil, 0, fmt.Errorf("the agent's message: %w", err)
			}
			if b, ok := m.(*wire.Buckets); ok && len(b.Items) > 0 {
				frames, items = append(frames, append([]byte(nil), f...)), items+len(b.Items)
			}
		}
	}
	return frames, items, nil
}
