package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/jsonref"
)

// benchBuckets is a realistic buckets message: n resources of one gateway
// instance, one 500 ms bucket each, with histograms when hist is set.
func benchBuckets(n int, hist bool) *Buckets {
	b := &Buckets{Header: Header{Ts: 1764460800512, Instance: "gateway-3"}, BucketMs: 500}
	for i := range n {
		it := BucketItem{
			Resource: fmt.Sprintf("GET:http://member-service-%d/api/v1/user/info?field=%d", i%7, i),
			Start:    1764460800000,
			Metrics:  core.Metrics{Pass: int64(100 + i*13%900), Block: int64(i % 5), Complete: int64(95 + i*13%900), Concurrency: int64(i % 17)},
		}
		it.Error = it.Complete / 20
		it.Slow = it.Complete / 10
		it.RtMin = int64(1 + i%9)
		it.RtMax = int64(400 + i*37%3000)
		it.RtSum = it.Complete * int64(40+i%60)
		if hist {
			var h [core.HistogramSlots]int64
			for j := range h {
				h[j] = int64((i + 3*j) % 40)
			}
			it.Hist, it.HasHist = h, true
		}
		b.Items = append(b.Items, it)
	}
	return b
}

func benchFrame(n int, hist bool) []byte { return AppendBuckets(nil, benchBuckets(n, hist)) }

// fleetBuckets is a buckets message shaped like those of `sentinel-top
// bench`: n resources named as its agents name them, a few calls per
// 500 ms bucket, histograms of 14 slots mostly 0 (about 210 bytes an item).
func fleetBuckets(n int) *Buckets {
	b := &Buckets{Header: Header{Ts: 1764460800512, Instance: "bench-0417"}, BucketMs: 500}
	for i := range n {
		it := BucketItem{
			Resource: fmt.Sprintf("GET:http://svc-%d/api/v1/resource/%d", i%7, i),
			Start:    1764460800000,
			Metrics:  core.Metrics{Pass: int64(2 + i%2), Complete: int64(2 + i%2), RtMin: 3, RtMax: int64(5 + i%4), Concurrency: int64(i % 3 / 2)},
		}
		it.RtSum = it.RtMin + it.RtMax
		it.Hist[1+i%3], it.Hist[2+i%2] = 1, it.Complete-1
		it.HasHist = true
		b.Items = append(b.Items, it)
	}
	return b
}

// benchSize is a frame of the benchmarks: items items of benchBuckets, or
// of fleetBuckets when fleet is set.
type benchSize struct {
	items       int
	hist, fleet bool
}

var benchSizes = []benchSize{{50, true, false}, {50, false, false}, {500, true, false}, {20, true, true}}

func (s benchSize) buckets() *Buckets {
	if s.fleet {
		return fleetBuckets(s.items)
	}
	return benchBuckets(s.items, s.hist)
}

func (s benchSize) frame() []byte { return AppendBuckets(nil, s.buckets()) }

func (s benchSize) name() string {
	switch {
	case s.fleet:
		return fmt.Sprintf("items=%d/fleet", s.items)
	case s.hist:
		return fmt.Sprintf("items=%d/hist", s.items)
	}
	return fmt.Sprintf("items=%d/nohist", s.items)
}

// BenchmarkDecodeBuckets: this package's Decoder (fast path, validated).
func BenchmarkDecodeBuckets(b *testing.B) {
	for _, s := range benchSizes {
		frame := s.frame()
		b.Run(s.name(), func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decode(frame); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkDecodeFleet: a collector's Decoders, one a connection, each
// decoding its connection's next frame in turn, as a poller reads a fleet
// of 10,000: with their own copies of the fleet's names ("own"), and with
// one NamePool ("pool"). Each frame is written into one buffer before it
// is decoded, as a read leaves it in the poller's, so that what is out of
// the caches is what is a connection's own: its Decoder.
func BenchmarkDecodeFleet(b *testing.B) {
	const conns = 10000
	frame := AppendBuckets(nil, fleetBuckets(20)) // instance "bench-0417"
	at := bytes.Index(frame, []byte("bench-0417")) + len("bench-")
	for _, shared := range []bool{false, true} {
		name := "own"
		if shared {
			name = "pool"
		}
		b.Run(fmt.Sprintf("decoders=%d/%s", conns, name), func(b *testing.B) {
			pool := NewNamePool(0, 0)
			buf := slices.Clone(frame)
			next := func(i int) []byte {
				buf[at], buf[at+1], buf[at+2], buf[at+3] = '0'+byte(i/1000), '0'+byte(i/100%10), '0'+byte(i/10%10), '0'+byte(i%10)
				return buf
			}
			ds := make([]*Decoder, conns)
			for i := range ds {
				ds[i] = NewDecoder(Limits{})
				if shared {
					ds[i].ShareNames(pool)
				}
				if _, err := ds[i].Decode(next(i)); err != nil { // its names, as after its first frame
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ds[i].Decode(next(i)); err != nil {
					b.Fatal(err)
				}
				if i++; i == conns {
					i = 0
				}
			}
			b.ReportMetric(20*float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkDecodeBucketsEncodingJSON: json.Unmarshal of the same bytes
// into equivalent structs, reused between iterations (encoding/json's
// best case), with no validation at all.
func BenchmarkDecodeBucketsEncodingJSON(b *testing.B) {
	for _, s := range benchSizes {
		frame := s.frame()
		b.Run(s.name(), func(b *testing.B) {
			var m jsonref.Buckets
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if err := json.Unmarshal(frame, &m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkDecodeBucketsEncodingJSONValidated: the encoding/json path of
// this package, with the same validation as the fast path (what Decoder
// would cost without its scanner).
func BenchmarkDecodeBucketsEncodingJSONValidated(b *testing.B) {
	for _, s := range benchSizes {
		frame := s.frame()
		b.Run(s.name(), func(b *testing.B) {
			lim := Limits{}.withDefaults()
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeStd(frame, lim); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkEncodeBuckets: AppendBuckets into a reused buffer.
func BenchmarkEncodeBuckets(b *testing.B) {
	for _, s := range benchSizes {
		m := s.buckets()
		b.Run(s.name(), func(b *testing.B) {
			buf := AppendBuckets(nil, m)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendBuckets(buf[:0], m)
			}
			b.ReportMetric(float64(s.items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkEncodeBucketsEncodingJSONEncoder: a json.Encoder writing the
// equivalent structs into a reused buffer, as AppendBuckets writes into
// one: neither allocates its output (the Encoder adds a newline).
func BenchmarkEncodeBucketsEncodingJSONEncoder(b *testing.B) {
	for _, s := range benchSizes {
		var m jsonref.Buckets
		if err := json.Unmarshal(s.frame(), &m); err != nil {
			b.Fatal(err)
		}
		b.Run(s.name(), func(b *testing.B) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&m); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(buf.Len()))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(&m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkEncodeBucketsEncodingJSON: json.Marshal of the equivalent
// structs, a new output every time.
func BenchmarkEncodeBucketsEncodingJSON(b *testing.B) {
	for _, s := range benchSizes {
		var m jsonref.Buckets
		if err := json.Unmarshal(s.frame(), &m); err != nil {
			b.Fatal(err)
		}
		b.Run(s.name(), func(b *testing.B) {
			out, _ := json.Marshal(&m)
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(&m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkDecodeBucketsHot: the Decoder on the 50-item frame with
// histograms where every item also carries hot values: 8 values (one of
// them new to each item) and an (other).
func BenchmarkDecodeBucketsHot(b *testing.B) {
	m := benchBuckets(50, true)
	for i := range m.Items {
		for j := range MaxHotValues - 1 {
			m.Items[i].Hot = append(m.Items[i].Hot, HotItem{Value: fmt.Sprintf("customer-%d", j), Pass: int64(10 * j), Block: int64(j % 3)})
		}
		m.Items[i].Hot = append(m.Items[i].Hot, HotItem{Value: fmt.Sprintf("vip-%d", i), Pass: 40, Block: 160},
			HotItem{Value: HotOther, Pass: 500})
	}
	frame := AppendBuckets(nil, m)
	var d Decoder
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(frame); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(50*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// benchStates are state messages as a flapping breaker sends them: a trip
// with its snapshot, and a probe's verdict with a rule id.
var benchStates = []struct {
	name string
	m    State
}{
	{"trip", State{Header: Header{Ts: 1764460801203, Instance: "gateway-3"}, Resource: "GET:http://member-service-3/api/v1/user/info",
		Strategy: core.SlowRequestRatio, From: core.Closed, To: core.Open,
		Snapshot: &Snapshot{Total: 125, Slow: 71, Value: 0.568}, Threshold: 0.5, RetryTimeoutMs: 10000}},
	{"probe", State{Header: Header{Ts: 1764460811207, Instance: "gateway-3"}, Resource: "GET:http://member-service-3/api/v1/user/info",
		Strategy: core.ErrorCount, From: core.HalfOpen, To: core.Closed, RuleID: "breaker-2",
		Probe: &Probe{RtMs: 41}, Threshold: 5, RetryTimeoutMs: 10000}},
}

// benchDecodeState runs decode on each of benchStates' frames.
func benchDecodeState(b *testing.B, decode func(frame []byte) error) {
	for _, s := range benchStates {
		frame, err := Marshal(&s.m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if err := decode(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeState: the Decoder (the scanner, validated; one
// allocation, the *State the caller keeps).
func BenchmarkDecodeState(b *testing.B) {
	var d Decoder
	benchDecodeState(b, func(frame []byte) error {
		_, err := d.Decode(frame)
		return err
	})
}

// BenchmarkDecodeStateEncodingJSON: json.Unmarshal into the equivalent
// struct, reused, with no validation (encoding/json's best case).
func BenchmarkDecodeStateEncodingJSON(b *testing.B) {
	var s stdState
	benchDecodeState(b, func(frame []byte) error {
		s = stdState{}
		return json.Unmarshal(frame, &s)
	})
}

// BenchmarkDecodeStateEncodingJSONValidated: this package's encoding/json
// path, with the same checks: what the Decoder took for state messages
// before its scanner read them.
func BenchmarkDecodeStateEncodingJSONValidated(b *testing.B) {
	lim := Limits{}.withDefaults()
	benchDecodeState(b, func(frame []byte) error {
		if _, err := decodeStd(frame, lim); err != nil {
			return err
		}
		return nil
	})
}
