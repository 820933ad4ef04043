// Package fleetbench makes the wire traffic of a benchmark fleet: its
// resource names, a buckets frame of them, and a fleet's frames round
// after round, encoded into a buffer per instance, as the collector's and
// the sources' benchmarks drive them. It is test support, imported by
// benchmarks only.
package fleetbench

import (
	"fmt"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Names are n resource names shaped like an HTTP fleet's.
func Names(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("GET:http://svc-%d/api/resource/%d", i%17, i)
	}
	return names
}

// Frame builds a buckets frame of one 500 ms bucket of every resource
// named, for instance, starting at start.
func Frame(instance string, names []string, start int64) *wire.Buckets {
	b := &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: instance}, BucketMs: 500}
	for i, name := range names {
		var h [core.HistogramSlots]int64
		h[4], h[5], h[7] = 5, 4, 1+int64(i%3)
		b.Items = append(b.Items, wire.BucketItem{Resource: name, Start: start, Metrics: core.Metrics{Pass: 10 + int64(i%3), Block: int64(i % 2), Complete: 10 + int64(i%3), Error: int64(i % 4), Slow: 1 + int64(i%3), RtSum: 600, RtMin: 11, RtMax: 180, Concurrency: 2, Hist: h}, HasHist: true})
	}
	return b
}

// Rounds encodes a fleet's buckets frames a round at a time: each
// instance's next 500 ms bucket of the same items, into a buffer of its
// own (Bufs, as a read leaves a frame in a poller's). Round counts the
// rounds encoded.
type Rounds struct {
	Insts []string
	Bufs  [][]byte
	Round int64
	t0    int64
	frame *wire.Buckets
}

// NewRounds returns the rounds of insts, each sending every resource
// named, from t0 (Unix ms) on.
func NewRounds(t0 int64, insts, names []string) *Rounds {
	return &Rounds{Insts: insts, Bufs: make([][]byte, len(insts)), t0: t0, frame: Frame("", names, 0)}
}

// Next encodes the next round and returns its end, Unix ms.
func (f *Rounds) Next() int64 {
	start := f.t0 + f.Round*500
	f.frame.Ts = start + 500
	for k := range f.frame.Items {
		f.frame.Items[k].Start = start
	}
	for i, name := range f.Insts {
		f.frame.Instance = name
		f.Bufs[i] = wire.AppendBuckets(f.Bufs[i][:0], f.frame)
	}
	f.Round++
	return start + 500
}

// WarmRounds is the minute of rounds Drive sends first: every ring has
// wrapped, and triage holds what it holds at steady state.
const WarmRounds = 120

// Drive sends WarmRounds rounds, then one frame an op, each instance's in
// turn; a round is encoded outside the time measured, and tick (when set)
// told of its end first.
func (f *Rounds) Drive(b *testing.B, tick func(end int64), send func(i int)) {
	round := func() {
		if end := f.Next(); tick != nil {
			tick(end)
		}
	}
	for range WarmRounds {
		round()
		for i := range f.Insts {
			send(i)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % len(f.Insts)
		if k == 0 {
			b.StopTimer()
			round()
			b.StartTimer()
		}
		send(k)
	}
}
