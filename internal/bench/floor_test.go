package bench

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The floor's sink counts buckets and keeps them from the store; every
// other message reaches the collector, through the sink and through a
// connection's.
func TestFloorSinkKeepsBucketsFromTheStore(t *testing.T) {
	const t0 = int64(1_780_000_000_000)
	c := collector.New(collector.Options{Clock: core.NewVirtualClock(time.UnixMilli(t0))})
	f := &floorSink{DialSink: c}
	bound := f.Bound("t1")
	bound.Ingest("t1", &wire.Hello{Header: wire.Header{Ts: t0, Instance: "a-1"}, App: "a", BucketMs: 500})
	bound.Ingest("t1", &wire.Rules{Header: wire.Header{Ts: t0, Instance: "a-1"}, Version: "1",
		Breakers: []core.BreakerRule{{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, RetryTimeoutMs: 5000, MinRequestAmount: 5, StatIntervalMs: 1000}}})
	items := []wire.BucketItem{{Resource: "r", Start: t0, Metrics: core.Metrics{Pass: 7}}, {Resource: "s", Start: t0, Metrics: core.Metrics{Pass: 3}}}
	bound.Ingest("t1", &wire.Buckets{Header: wire.Header{Ts: t0 + 500, Instance: "a-1"}, BucketMs: 500, Items: items})
	f.Ingest("t1", &wire.Buckets{Header: wire.Header{Ts: t0 + 500, Instance: "a-1"}, BucketMs: 500, Items: items[:1]})
	bound.Ingest("t1", &wire.State{Header: wire.Header{Ts: t0 + 600, Instance: "a-1"}, Resource: "r", From: core.Closed, To: core.Open})
	if m, n := f.messages.Load(), f.items.Load(); m != 2 || n != 3 {
		t.Fatalf("counted %d messages, %d items; want 2, 3", m, n)
	}
	if tm, _ := c.Totals("a-1", "r"); tm.Pass != 0 {
		t.Fatalf("the store took a bucket: pass %d", tm.Pass)
	}
	s := c.Publish()
	if s.Instances != 1 || len(s.Breakers) != 1 || s.Breakers[0].State != core.Open {
		t.Fatalf("the hello, rules and transition did not reach the collector: %d instances, breakers %+v", s.Instances, s.Breakers)
	}
}

// A run with --floor reads and decodes every item the agents wrote, hands
// none to the store, and says so instead of accounting the calls. The
// agents go on writing while they answer a mark, so a message written
// just before it may still be on its way to the collector when the
// collector's count is read (it reads every 10 ms at most, later on a
// loaded machine): at either end of the window the collector may be a
// message an agent behind, no more.
func TestBenchFloorReadsWithoutTheStore(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Agents, cfg.Resources, cfg.Rate, cfg.Duration, cfg.PerProcess, cfg.Floor = 4, 3, 50, 2*time.Second, 2, true
	out, errOut, err := runBench(t, cfg)
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, errOut, out)
	}
	matchLines(t, out,
		`(?m)^accounted:  [1-9][0-9,]* calls made, not counted: --floor leaves the collector's store out of the buckets$`,
		`(?m)^ {12}the collector [0-9,]+ items behind the agents as the window began \(no series held: --floor\), [0-9,]+ as it ended$`,
		`(?m)^cpu:        collector [0-9.]+ cores \(this process\), [0-9.]+ µs per item;`,
		`(?m)^health:     0 reconnects, 0 messages dropped by agents, 0 rejected, 0 over limits$`,
	)
	// Every item the agents wrote between their marks was read but those
	// still on their way at the second: the collector's window (its counts
	// taken before the first mark's question and after the second's
	// answer) holds the agents', so it read at least written + began -
	// ended, more when it read some while the first mark was answered.
	// The sources decoded at least as many from the start.
	m := regexp.MustCompile(`([0-9,]+) items in [0-9,]+ buckets messages written by the agents \([0-9,]+ messages in all\); ([0-9,]+) items in`).FindStringSubmatch(out)
	d := regexp.MustCompile(`the sources decoded ([0-9,]+) items in ([0-9,]+) buckets messages from the start`).FindStringSubmatch(out)
	lag := regexp.MustCompile(`the collector ([0-9,]+) items behind the agents as the window began \(no series held: --floor\), ([0-9,]+) as it ended`).FindStringSubmatch(out)
	if m == nil || d == nil || lag == nil {
		t.Fatalf("no counts of items in\n%s", out)
	}
	num := func(s string) int64 { n, _ := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64); return n }
	written, read, decoded := num(m[1]), num(m[2]), num(d[1])
	began, ended, message := num(lag[1]), num(lag[2]), int64(cfg.Agents*cfg.Resources)
	if written == 0 || read < written+began-ended || decoded < read || began > message || ended > message {
		t.Fatalf("written %d, read %d in the window (%d and %d items behind at its ends, at most %d), decoded %d from the start",
			written, read, began, ended, message, decoded)
	}
}
