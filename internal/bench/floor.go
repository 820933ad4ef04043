package bench

import (
	"sync/atomic"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// floorSink is the collector as its sources see it, with its store left
// out for buckets (Config.Floor): every other message (hellos, rules,
// transitions) goes in as usual, so targets, instances and snapshots are
// what they would be, but a buckets message is only counted. A run
// through it measures what the collector spends before its store: the
// reads, the frames, the decoding and the runtime under them, the floor
// the store's and triage's work per item comes on top of.
type floorSink struct {
	feed.DialSink
	messages, items atomic.Int64
}

// take counts m when it is a buckets message; false for any other.
func (f *floorSink) take(m wire.Message) bool {
	b, ok := m.(*wire.Buckets)
	if ok {
		f.messages.Add(1)
		f.items.Add(int64(len(b.Items)))
	}
	return ok
}

// Ingest counts buckets and hands the rest to the collector.
func (f *floorSink) Ingest(place string, m wire.Message) bool {
	return f.take(m) || f.DialSink.Ingest(place, m)
}

// Bound is the collector's sink of one connection, its buckets counted
// here.
func (f *floorSink) Bound(owner string) feed.BoundSink {
	return floorBound{f.DialSink.Bound(owner), f}
}

// floorBound is a floorSink's sink of one connection.
type floorBound struct {
	feed.BoundSink
	f *floorSink
}

// Ingest counts buckets and hands the rest to the collector.
func (b floorBound) Ingest(place string, m wire.Message) bool {
	return b.f.take(m) || b.BoundSink.Ingest(place, m)
}
