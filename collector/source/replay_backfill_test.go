package source

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// backfillRecording is a real recording, made with
//
//	sentinel-top serve --targets 127.0.0.1:18721,127.0.0.1:18722,127.0.0.1:18723 --record rec.ndjson
//
// 2 minutes after three examples/orderservice processes started, for 21 s:
// each target's hello and rules, then the 60 s of buckets it held, older
// than the hello, then live messages, as they arrived.
const backfillRecording = "testdata/backfill-recorded.ndjson.gz"

// backfillLines returns the recording's lines, decompressed.
func backfillLines(t *testing.T) [][]byte {
	t.Helper()
	f, err := os.Open(backfillRecording)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n')
	}
	lines := bytes.SplitAfter(b, []byte("\n")) // each line with its \n, the last too
	return lines[:len(lines)-1]
}

// lineHead is what the tests read of a line.
type lineHead struct {
	Kind     string `json:"kind"`
	Ts       int64  `json:"ts"`
	Instance string `json:"instance"`
}

func headOf(t *testing.T, line []byte) lineHead {
	t.Helper()
	var h lineHead
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// sortedByTime is the recording as wire v1 describes a fixture, "ordered
// by ts" (the meta line first, equal times in line order): each target's
// backfill now comes before its hello.
func sortedByTime(t *testing.T, lines [][]byte) [][]byte {
	out := slices.Clone(lines)
	slices.SortStableFunc(out, func(a, b []byte) int {
		ha, hb := headOf(t, a), headOf(t, b)
		ma, mb := 1, 1
		if ha.Kind == "meta" {
			ma = 0
		}
		if hb.Kind == "meta" {
			mb = 0
		}
		return cmp.Or(cmp.Compare(ma, mb), cmp.Compare(ha.Ts, hb.Ts))
	})
	return out
}

// fedLog is a collector that notes the kind and instance of each message
// fed, in order.
type fedLog struct {
	*collector.Collector
	fed []lineHead
}

func (f *fedLog) Ingest(place string, m wire.Message) bool {
	if _, meta := m.(*wire.Meta); !meta {
		f.fed = append(f.fed, lineHead{Kind: string(m.Kind()), Ts: m.Head().Ts, Instance: m.Head().Instance})
	}
	return f.Collector.Ingest(place, m)
}

func (f *fedLog) Hello(place string, h *wire.Hello, o feed.Origin) bool {
	f.fed = append(f.fed, lineHead{Kind: string(h.Kind()), Ts: h.Ts, Instance: h.Instance})
	return f.Collector.Hello(place, h, o)
}

// startBackfill replays lines paused at their start, into a collector
// whose feeding is logged.
func startBackfill(t *testing.T, lines [][]byte, opts ReplayOptions) (*Replay, *fedLog) {
	t.Helper()
	rp, err := NewReplay("backfill", bytes.NewReader(bytes.Join(lines, nil)), 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	c := collector.New(collector.Options{Clock: rp.Clock(), Mode: collector.ModeReplay, Source: "backfill"})
	log := &fedLog{Collector: c}
	rp.Pause()
	if err := rp.Start(log); err != nil {
		t.Fatal(err)
	}
	return rp, log
}

// seekTo moves the paused replay rp to the time target and waits for it.
func seekTo(t *testing.T, rp *Replay, target int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rp.Run(ctx) }()
	rp.SeekBy(target - rp.Clock().UnixMilli())
	deadline := time.Now().Add(10 * time.Second)
	for rp.Clock().UnixMilli() != target {
		if time.Now().After(deadline) {
			t.Fatalf("the replay did not reach %d (at %d)", target, rp.Clock().UnixMilli())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatal(err)
	}
}

// bucketSums are the sums of a recording's bucket items by instance and
// resource, each (instance, resource, start) once, read straight from its
// lines.
func bucketSums(t *testing.T, lines [][]byte) map[[2]string]core.Metrics {
	t.Helper()
	rd := wire.NewReader(bytes.NewReader(bytes.Join(lines, nil)), "sums")
	type key struct {
		instance, resource string
		start              int64
	}
	seen := map[key]bool{}
	sums := map[[2]string]core.Metrics{}
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return sums
		}
		if err != nil {
			t.Fatal(err)
		}
		b, ok := m.(*wire.Buckets)
		if !ok {
			continue
		}
		for _, it := range b.Items {
			k := key{b.Instance, it.Resource, it.Start}
			if seen[k] {
				continue
			}
			seen[k] = true
			s := sums[[2]string{b.Instance, it.Resource}]
			s.Pass += it.Pass
			s.Block += it.Block
			s.Complete += it.Complete
			s.Error += it.Error
			s.Slow += it.Slow
			sums[[2]string{b.Instance, it.Resource}] = s
		}
	}
}

// checkExact compares the collector's totals with the recording's sums:
// every bucket counted once, on its own instance.
func checkExact(t *testing.T, c *collector.Collector, want map[[2]string]core.Metrics) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("the recording holds no buckets")
	}
	for k, w := range want {
		got, ok := c.Totals(k[0], k[1])
		if !ok {
			t.Errorf("%s %s: no series", k[0], k[1])
			continue
		}
		if got.Pass != w.Pass || got.Block != w.Block || got.Complete != w.Complete || got.Error != w.Error || got.Slow != w.Slow {
			t.Errorf("%s %s: pass/block/complete/error/slow %d/%d/%d/%d/%d, the recording's %d/%d/%d/%d/%d", k[0], k[1],
				got.Pass, got.Block, got.Complete, got.Error, got.Slow, w.Pass, w.Block, w.Complete, w.Error, w.Slow)
		}
	}
}

// checkNamedFirst: every instance's first message fed is its hello, and
// its rules come before its first buckets.
func checkNamedFirst(t *testing.T, fed []lineHead) {
	t.Helper()
	first := map[string]string{}
	ruled := map[string]bool{}
	for _, f := range fed {
		if _, ok := first[f.Instance]; !ok {
			first[f.Instance] = f.Kind
		}
		switch f.Kind {
		case "rules":
			ruled[f.Instance] = true
		case "buckets":
			if !ruled[f.Instance] {
				t.Errorf("%s: buckets of %d fed before its rules", f.Instance, f.Ts)
				ruled[f.Instance] = true // said once
			}
		}
	}
	if len(first) != 3 {
		t.Errorf("%d instances fed, want 3: %v", len(first), first)
	}
	for in, kind := range first {
		if kind != "hello" {
			t.Errorf("%s: first fed a %s, not its hello", in, kind)
		}
	}
}

// TestReplayBackfillIsItsInstances: a real recording's backfill (older
// than the hello it follows) and the same lines sorted by time (backfill
// before the hello) both replay as three instances of app order from the
// first bucket: each named by its hello and under its rules before its
// first data, every bucket counted once on its own instance, nothing
// counted late or unnamed.
func TestReplayBackfillIsItsInstances(t *testing.T) {
	lines := backfillLines(t)
	want := bucketSums(t, lines)
	for _, tc := range []struct {
		name  string
		lines [][]byte
	}{{"as recorded", lines}, {"sorted by time", sortedByTime(t, lines)}} {
		t.Run(tc.name, func(t *testing.T) {
			rp, log := startBackfill(t, tc.lines, ReplayOptions{})
			from, to := rp.Range()
			seekTo(t, rp, to)
			checkNamedFirst(t, log.fed)
			checkExact(t, log.Collector, want)
			for i := 1; i < len(log.fed); i++ {
				if log.fed[i].Kind == "buckets" && log.fed[i].Ts < log.fed[i-1].Ts && log.fed[i-1].Kind == "buckets" {
					t.Errorf("fed %d after %d", log.fed[i].Ts, log.fed[i-1].Ts)
					break
				}
			}
			snap := log.Collector.Publish()
			if snap.Apps != 1 || snap.Instances != 3 {
				t.Errorf("%d apps, %d instances; want 1 and 3", snap.Apps, snap.Instances)
			}
			for _, r := range snap.Rows {
				if r.App != "order" {
					t.Errorf("a row of app %q: %s", r.App, r.Resource)
				}
			}
			for _, w := range snap.Warnings {
				if n, ok := w.(collector.Notice); ok {
					t.Errorf("warning: %s", collector.WarningText(n))
				}
			}
			if got, _, _ := log.Collector.Counters(); got != int64(len(lines)-1) {
				t.Errorf("%d messages accepted, the recording holds %d", got, len(lines)-1)
			}
			if earliest := headOf(t, tc.lines[1]).Ts; from != earliest && tc.name == "sorted by time" {
				t.Errorf("range from %d, the first data is at %d", from, earliest)
			}
		})
	}
}

// TestReplayBackfillShownFromTheFirstSecond: one second into the replay
// the three instances and their traffic are there, and a seek forward
// lands on data: more messages, the breakers' rows still named.
func TestReplayBackfillShownFromTheFirstSecond(t *testing.T) {
	lines := backfillLines(t)
	var hello int64
	for _, l := range lines {
		if h := headOf(t, l); h.Kind == "hello" {
			hello = h.Ts
			break
		}
	}
	rp, log := startBackfill(t, lines, ReplayOptions{})
	from, to := rp.Range()
	if hello-from < 50_000 {
		t.Fatalf("the recording's first hello is %d ms after its start: no backfill to test", hello-from)
	}
	seekTo(t, rp, from+1000)
	snap := log.Collector.Publish()
	if snap.Instances != 3 || snap.Apps != 1 || snap.Messages == 0 {
		t.Fatalf("+1s: %d apps, %d instances, %d messages; want 1, 3 and some", snap.Apps, snap.Instances, snap.Messages)
	}
	var pass float64
	for _, r := range snap.Rows {
		pass += r.PassQPS
	}
	if pass == 0 {
		t.Errorf("+1s: no traffic in %d rows", len(snap.Rows))
	}
	at1 := snap.Messages
	seekTo(t, rp, from+56_000) // still before the hellos' time
	snap = log.Collector.Publish()
	if snap.Messages <= at1 || snap.Instances != 3 {
		t.Errorf("+56s: %d messages (%d at +1s), %d instances", snap.Messages, at1, snap.Instances)
	}
	if len(snap.Breakers) == 0 {
		t.Error("+56s: no breaker known: the rules did not reach the backfill")
	}
	for _, b := range snap.Breakers {
		if b.App != "order" {
			t.Errorf("breaker of %s %s in app %q", b.Instance, b.Resource, b.App)
		}
	}
	if to <= from+56_000 {
		t.Errorf("range %d..%d", from, to)
	}
}

// TestReplayReorderBounded: with room for nothing held, messages go out in
// line order: what came after a later one is counted and shown, once
// however often the replay seeks back, and still counted once on its own
// instance.
func TestReplayReorderBounded(t *testing.T) {
	lines := backfillLines(t)
	rp, log := startBackfill(t, lines, ReplayOptions{MaxReorderBytes: 1})
	from, to := rp.Range()
	seekTo(t, rp, to)
	checkExact(t, log.Collector, bucketSums(t, lines))
	late := lateNotice(t, log.Collector)
	if late.Count == 0 {
		t.Fatal("no message counted late")
	}
	seekTo(t, rp, from)
	seekTo(t, rp, to)
	if again := lateNotice(t, log.Collector); again.Count != late.Count {
		t.Errorf("late: %d after seeking back and forth, %d before", again.Count, late.Count)
	}
	if txt := collector.WarningText(late); !strings.Contains(txt, "fed after later ones") {
		t.Errorf("warning: %s", txt)
	}
}

func lateNotice(t *testing.T, c *collector.Collector) collector.Notice {
	t.Helper()
	for _, w := range c.Publish().Warnings {
		if n, ok := w.(collector.Notice); ok && n.Kind == collector.NoticeReplayLate {
			return n
		}
	}
	return collector.Notice{}
}

// TestReplayBeforeHelloBounded: a replay keeps the hellos of at most
// MaxEarlyHellos instances whose lines come before their hello; the
// lines of the others are fed without it, counted exactly and shown.
func TestReplayBeforeHelloBounded(t *testing.T) {
	lines := sortedByTime(t, backfillLines(t))
	// The lines before each instance's first hello, and the instances in
	// the order of their first rules or hello (the replay keeps the
	// first's).
	before := map[string]int64{}
	helloed, listed := map[string]bool{}, map[string]bool{}
	var order []string
	for _, l := range lines[1:] {
		h := headOf(t, l)
		if (h.Kind == "hello" || h.Kind == "rules") && !listed[h.Instance] {
			listed[h.Instance] = true
			order = append(order, h.Instance)
		}
		switch {
		case helloed[h.Instance]:
		case h.Kind == "hello":
			helloed[h.Instance] = true
		default:
			before[h.Instance]++
		}
	}
	if len(order) != 3 {
		t.Fatalf("%d instances with a hello", len(order))
	}
	for _, tc := range []struct {
		name  string
		opts  ReplayOptions
		kept  int // the instances named from their first line
		lines int64
	}{
		{"one hello kept", ReplayOptions{MaxEarlyHellos: 1}, 1, before[order[1]] + before[order[2]]},
		{"no room", ReplayOptions{MaxReorderBytes: 1}, 0, before[order[0]] + before[order[1]] + before[order[2]]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, log := startBackfill(t, lines, tc.opts)
			_, to := rp.Range()
			seekTo(t, rp, to)
			var got collector.Notice
			for _, w := range log.Collector.Publish().Warnings {
				if n, ok := w.(collector.Notice); ok && n.Kind == collector.NoticeBeforeHello {
					got = n
				}
			}
			if got.Count != tc.lines || got.Instances != int64(3-tc.kept) {
				t.Errorf("before their hello: %d lines of %d instances; want %d of %d", got.Count, got.Instances, tc.lines, 3-tc.kept)
			}
			if txt := collector.WarningText(got); !strings.Contains(txt, "fed without it") {
				t.Errorf("warning: %s", txt)
			}
			// The instances whose hello was kept are named from their
			// first line, the others not.
			first := map[string]string{}
			for _, f := range log.fed {
				if _, ok := first[f.Instance]; !ok {
					first[f.Instance] = f.Kind
				}
			}
			for i, in := range order {
				if named := first[in] == "hello"; named != (i < tc.kept) {
					t.Errorf("%s: first fed a %s", in, first[in])
				}
			}
		})
	}
}

// TestReplayAnyLineOrder: the recording's lines in any order (shuffled
// with fixed seeds) replay with every bucket counted once on its own
// instance, each instance named by its hello before anything else of it,
// and nothing fed late.
func TestReplayAnyLineOrder(t *testing.T) {
	lines := backfillLines(t)
	want := bucketSums(t, lines)
	for seed := uint64(1); seed <= 8; seed++ {
		shuffled := slices.Clone(lines)
		rng := rand.New(rand.NewPCG(seed, seed))
		rng.Shuffle(len(shuffled)-1, func(i, j int) { shuffled[i+1], shuffled[j+1] = shuffled[j+1], shuffled[i+1] })
		rp, log := startBackfill(t, shuffled, ReplayOptions{})
		_, to := rp.Range()
		seekTo(t, rp, to)
		checkExact(t, log.Collector, want)
		first := map[string]string{}
		for _, f := range log.fed {
			if _, ok := first[f.Instance]; !ok {
				first[f.Instance] = f.Kind
			}
		}
		for in, kind := range first {
			if kind != "hello" {
				t.Errorf("seed %d: %s first fed a %s", seed, in, kind)
			}
		}
		if n := lateNotice(t, log.Collector); n.Count != 0 {
			t.Errorf("seed %d: %d fed late", seed, n.Count)
		}
	}
}

// TestReplayReversedInputBounded: a file in reverse time order (12,000
// lines), one instance's hellos, rules and buckets interleaved, goes
// through within the reorder bound: what could not be put in order is
// counted late, and what the store then turns away is counted.
func TestReplayReversedInputBounded(t *testing.T) {
	const n = 12_000
	var buf bytes.Buffer
	w := wire.NewWriter(&buf)
	var pass int64
	for i := n; i > 0; i-- {
		ts := t0ms + int64(i)*500
		var m wire.Message
		switch i % 3 {
		case 0:
			m = &wire.Hello{Header: wire.Header{Ts: ts, Instance: "x-1"}, App: "x", StartedAt: t0ms, BucketMs: 500}
		case 1:
			m = &wire.Rules{Header: wire.Header{Ts: ts, Instance: "x-1"}, Version: "v1"}
		default:
			m = &wire.Buckets{Header: wire.Header{Ts: ts + 500, Instance: "x-1"}, BucketMs: 500,
				Items: []wire.BucketItem{{Resource: "r", Start: ts, Metrics: core.Metrics{Pass: int64(i), Complete: int64(i)}}}}
			pass += int64(i)
		}
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rp, err := NewReplay("reversed", bytes.NewReader(buf.Bytes()), 0, ReplayOptions{MaxReorderBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c := collector.New(collector.Options{Clock: rp.Clock(), Mode: collector.ModeReplay, Source: "reversed"})
	if err := rp.Start(c); err != nil {
		t.Fatal(err)
	}
	if err := rp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Minute { // a hang guard: the race detector and a shared machine slow it ten times
		t.Errorf("%d lines took %s", n, d)
	}
	// What came late by more than the store keeps apart (its dedupe
	// span) the store turns away, counted too: none of it is lost unseen.
	got, _ := c.Totals("x-1", "r")
	refused := byReason(c.Publish().Overflow)[collector.ReasonDedupeSpan]
	if got.Pass == 0 || (got.Pass < pass && refused == 0) {
		t.Errorf("pass %d of %d, %d items refused", got.Pass, pass, refused)
	}
	if late := lateNotice(t, c); late.Count == 0 {
		t.Error("nothing counted late")
	}
}
