package collector

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// TestRestreamReadersWithinTheirShare: eleven readers (and a subscriber) of the re-served
// stream that never read, over real websockets on loopback, nine arriving
// one by one after the backlog has filled, while 25 MiB of buckets pass
// through a
// collector whose budget is 16 MiB. Each reader's queue stays within its
// share (2 MiB over 16 readers), the backlog within its own (2 MiB), a
// reader arriving holds no copy of the backlog, the heap grows by less
// than the budget, what the shares turned away is counted by
// reason in the snapshot and /metrics, and a reader that reads still gets
// the stream.
func TestRestreamReadersWithinTheirShare(t *testing.T) {
	const budget = 16 << 20
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock, MaxMemory: budget})
	srv := c.Restream(RestreamOptions{})
	addr, closeSrv := serveRestream(t, srv)
	var stalledConns []*websocket.Conn
	defer func() {
		for _, conn := range stalledConns {
			conn.Close() // or Close waits for their writes to time out
		}
		closeSrv()
	}()
	url := "ws://" + addr + source.DefaultStreamPath
	stalled := func() { // connects, then never reads
		conn, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		stalledConns = append(stalledConns, conn)
	}
	reader, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	got := make(chan int, 1)
	go func() { // a reader that reads: counts the buckets frames it gets
		n := 0
		for {
			_, data, err := reader.ReadMessage()
			if err != nil {
				got <- n
				return
			}
			if strings.Contains(string(data[:min(len(data), 64)]), `"kind":"buckets"`) {
				n++
			}
		}
	}()
	stalled()
	stalled()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("GET:http://hostile/%01000d", i)
	}
	c.Ingest("burst", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "hostile"}, App: "burst", StartedAt: t0ms, BucketMs: 500})
	var published int
	var queued int64 // the most every queue held together
	var sub *wsstream.Subscription
	for i := 0; i < 450; i++ {
		if i >= 100 && i%40 == 0 {
			stalled() // arrives to a full backlog, of other frames each time
		}
		if i == 100 {
			if sub, err = srv.Subscribe(0); err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
		}
		start := t0ms + int64(i)*500
		b := &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: "hostile"}, BucketMs: 500}
		for _, n := range names {
			b.Items = append(b.Items, wire.NewBucketItem(n, start, core.Metrics{Pass: 1, Complete: 1}, true))
		}
		clock.Advance(500 * time.Millisecond)
		if !c.Ingest("burst", b) {
			t.Fatalf("buckets %d refused", i)
		}
		published += len(wire.AppendBuckets(nil, b))
		queued = max(queued, srv.QueuedBytes())
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	readers, _ := srv.Stats()
	snap := c.Publish()
	t.Logf("%d MiB through; %d readers queued at most %d KiB; kept %d KiB; heap grew %d KiB; memory %d of %d KiB; overflow %+v",
		published>>20, readers, queued>>10, c.restream.bytes.Load()>>10, grew>>10, snap.MemoryUsed>>10, snap.MemoryBudget>>10, snap.Overflow)
	share := int64(budget / ReadersShare / 16)
	if readers != 13 || queued > 13*share {
		t.Errorf("%d readers queue %d bytes, more than their shares (%d each)", readers, queued, share)
	}
	if kept := c.restream.bytes.Load(); kept > budget/RestreamShare {
		t.Errorf("the re-served stream keeps %d bytes, share %d", kept, budget/RestreamShare)
	}
	if grew > budget || snap.MemoryUsed > budget || published < 4*budget/5 {
		t.Errorf("heap grew by %d bytes and the budget counts %d, for a budget of %d (%d bytes published)", grew, snap.MemoryUsed, budget, published)
	}
	counted := map[string]int64{}
	for _, o := range snap.Overflow {
		counted[o.Reason] = o.Count
	}
	if counted[ReasonReaderQueue] == 0 || counted[ReasonRestreamBacklog] == 0 {
		t.Errorf("overflow %+v: the shares' refusals are not counted", snap.Overflow)
	}
	metrics := scrape(t, c)
	for _, r := range []string{ReasonReaderQueue, ReasonRestreamBacklog} {
		if v := metrics["sentinel_top_limit_overflow_total{limit="+r+"}"]; v != float64(counted[r]) {
			t.Errorf("/metrics counts %v %s, the snapshot %d", v, r, counted[r])
		}
	}
	if v := metrics["sentinel_top_memory_bytes{of=used}"]; v != float64(snap.MemoryUsed) || v == 0 {
		t.Errorf("/metrics memory used %v, the snapshot %d", v, snap.MemoryUsed)
	}
	// The subscriber that arrived at the 100th message and read nothing
	// since gets none of the backlog it found, forgotten since: it held
	// no copy of it.
	for {
		data, ok := sub.Next()
		if !ok {
			break
		}
		if m, err := wire.Decode(data); err != nil {
			t.Fatal(err)
		} else if b, ok := m.(*wire.Buckets); ok && b.Items[0].Start < t0ms+100*500 {
			t.Fatalf("a reader received buckets of %d, forgotten before it read them", b.Items[0].Start)
		}
	}
	reader.Close()
	if n := <-got; n == 0 {
		t.Errorf("the reader that reads got no buckets")
	}
}
