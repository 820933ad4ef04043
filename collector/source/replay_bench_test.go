package source

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// discard is a replay sink that keeps nothing: what a benchmark of the
// replay itself feeds.
type discard struct{ n int }

func (d *discard) Ingest(string, wire.Message) bool            { d.n++; return true }
func (d *discard) Hello(string, *wire.Hello, feed.Origin) bool { d.n++; return true }
func (d *discard) Reject(string, error)                        {}
func (d *discard) Reset()                                      {}
func (d *discard) SetReplay(feed.ReplayStatus, uint64)         {}
func (d *discard) ReplayOrdered(feed.ReplayOrder)              {}

// BenchmarkReplayFeed is one pass of a replay at full speed into a sink
// that keeps nothing: reading, decoding, and putting the messages in the
// order of their time (replayorder.go). healthy-baseline is in time order
// (a fixture); backfill is a real recording, each target's backfill after
// its hello.
func BenchmarkReplayFeed(b *testing.B) {
	for _, in := range []struct{ name, path string }{
		{"healthy-baseline", "../../fixtures/healthy-baseline.ndjson.gz"},
		{"backfill", backfillRecording},
	} {
		b.Run(in.name, func(b *testing.B) {
			data, err := os.ReadFile(in.path)
			if err != nil {
				b.Fatal(err)
			}
			msgs := 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				rp, err := NewReplay(in.name, bytes.NewReader(data), 0, ReplayOptions{})
				if err != nil {
					b.Fatal(err)
				}
				d := &discard{}
				if err := rp.Start(d); err != nil {
					b.Fatal(err)
				}
				if err := rp.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				msgs = d.n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*msgs), "ns/msg")
		})
	}
}
