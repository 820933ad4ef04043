package collector

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestPublishedMissesNoSnapshot: readers that take Published's channel,
// read Snapshot and wait on the channel alone, while snapshots are
// published as fast as they can be from another goroutine, always reach
// the last one (a wake-up before the snapshot is stored, or a channel
// replaced unclosed, leaves one waiting for a snapshot that never comes).
// Several readers at once also race to install the channel a Publish
// takes away.
func TestPublishedMissesNoSnapshot(t *testing.T) {
	const n, readers = 200, 4
	var total int
	var mu sync.Mutex
	for round := range 50 {
		c := New(Options{})
		var want uint64 = n
		if s := c.Snapshot(); s != nil {
			want += s.Seq
		}
		var wg sync.WaitGroup
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wakes := 0
				timeout := time.After(10 * time.Second)
				for {
					next := c.Published()
					if s := c.Snapshot(); s != nil && s.Seq == want {
						break
					}
					select {
					case <-next:
						wakes++
					case <-timeout:
						t.Errorf("round %d: still waiting after snapshot %d of %d", round, c.Snapshot().Seq, want)
						return
					}
				}
				// The publishing may finish before a reader first looks.
				if wakes > n {
					t.Errorf("round %d: %d wake-ups for %d snapshots", round, wakes, n)
				}
				mu.Lock()
				total += wakes
				mu.Unlock()
			}()
		}
		for range n {
			c.Publish()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
	if total == 0 {
		t.Error("no reader ever waited: the publishing finished first every round")
	}
}

// TestSnapshotsShareUnchangedTargets: a target's status that did not
// change since the last snapshot is the same value in the next one; one
// that changed is a new value, and the one published before keeps what
// it said. A target whose instance is shown as NAME@TARGET is shown so
// without the record's own status changing.
func TestSnapshotsShareUnchangedTargets(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc})
	a := feed.NewTargetRecord(feed.TargetStatus{Name: "gw-1:8720", State: feed.TargetUp, Instance: "gw-1"})
	b := feed.NewTargetRecord(feed.TargetStatus{Name: "gw-2:8720", State: feed.TargetUp, Instance: "gw-2"})
	c.AddTargets(a, b)
	first := c.Publish().Targets
	if len(first) != 2 || first[0].Name != "gw-1:8720" || first[1].Name != "gw-2:8720" {
		t.Fatalf("targets %+v", first)
	}
	vc.Advance(time.Second)
	if second := c.Publish().Targets; second[0] != first[0] || second[1] != first[1] {
		t.Fatal("unchanged targets copied again")
	}
	b.Update(func(s *feed.TargetStatus) { s.Messages++ })
	third := c.Publish().Targets
	if third[0] != first[0] || third[1] == first[1] || third[1].Messages != 1 || first[1].Messages != 0 {
		t.Fatalf("after one target changed: shared %v %v, messages now %d, before %d",
			third[0] == first[0], third[1] == first[1], third[1].Messages, first[1].Messages)
	}

	// evil:8720 announces gw-1 too: shown as gw-1@evil:8720, its record
	// unchanged, and the status published before it was named so kept.
	evil := feed.NewTargetRecord(feed.TargetStatus{Name: "evil:8720", State: feed.TargetUp, Instance: "gw-1"})
	c.AddTargets(evil)
	hello := func(name string) *wire.Hello {
		return &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: name}, App: "gateway", StartedAt: t0ms, BucketMs: 500}
	}
	before := c.Publish().Targets[2]
	if !c.Bound("gw-1:8720").Ingest("gw-1:8720", hello("gw-1")) || !c.Bound("evil:8720").Ingest("evil:8720", hello("gw-1")) {
		t.Fatal("a hello was refused")
	}
	for range 2 {
		shown := c.Publish().Targets
		if shown[2].Instance != "gw-1@evil:8720" || shown[0].Instance != "gw-1" {
			t.Fatalf("instances shown %q and %q", shown[0].Instance, shown[2].Instance)
		}
	}
	if before.Instance != "gw-1" || evil.Status().Instance != "gw-1" || evil.Published().Instance != "gw-1" {
		t.Fatalf("the record's status was written: %q, %q, %q", before.Instance, evil.Status().Instance, evil.Published().Instance)
	}
}

// A snapshot reads only the target records updated since the last one,
// yet shows every target as its record says, and counts the targets of
// each remark as a recount would: targets updated at random between
// snapshots (their counts, states and remarks set and cleared), or their
// running counts alone tallied, some of them read meanwhile by the
// signature, more added on the way. A live snapshot of Run's may show a
// target's counts as they were less than TalliesEvery before or
// TalliesAfter snapshots before, never ahead of its record and never
// going back; the rest of its status is always the record's. A replay's
// snapshot, and one asked for (Publish), shows the record whole.
func TestSnapshotTargetsAreTheRecords(t *testing.T) {
	for _, mode := range []Mode{ModeLive, ModeReplay} {
		t.Run(mode.String(), func(t *testing.T) { snapshotTargetsAreTheRecords(t, mode) })
	}
}

func snapshotTargetsAreTheRecords(t *testing.T, mode Mode) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc, Mode: mode})
	rng := rand.New(rand.NewPCG(5, 6))
	remarks := []feed.TargetRemark{{}, {StatesInferred: true}, {RulesError: "403"}, {StatesInferred: true, RulesError: "timeout"}}
	var recs []*feed.TargetRecord
	// behind[i] is how many snapshots in a row showed target i's counts
	// short of its record's, exactAt[i] when they last did not.
	var behind []int
	var exactAt []int64
	add := func(n int) {
		for range n {
			r := feed.NewTargetRecord(feed.TargetStatus{Name: fmt.Sprintf("t%d:8719", len(recs)), State: feed.TargetUp})
			recs = append(recs, r)
			behind = append(behind, 0)
			exactAt = append(exactAt, vc.Now().UnixMilli())
			c.AddTargets(r)
		}
	}
	counts := func(st *feed.TargetStatus) [4]int64 {
		return [4]int64{st.Messages, st.Bytes, st.Items, st.LastMessageAt}
	}
	add(50)
	var last [5]int64
	var shown []*feed.TargetStatus
	tallied := false
	for round := range 300 {
		if round == 80 {
			add(30)
		}
		for range rng.IntN(40) {
			r := recs[rng.IntN(len(recs))]
			if rng.IntN(3) > 0 {
				tallied = true
				r.Tally(func(s *feed.TargetStatus) {
					s.Messages++
					s.Bytes += 400
					s.Items += 20
					s.LastMessageAt = vc.Now().UnixMilli()
				})
				continue
			}
			r.Update(func(s *feed.TargetStatus) {
				s.Messages++
				switch rng.IntN(4) {
				case 0:
					s.Note = remarks[rng.IntN(len(remarks))]
				case 1:
					s.State = feed.TargetState(rng.IntN(3))
				}
			})
		}
		if rng.IntN(3) == 0 {
			last = c.signature(last)
		}
		vc.Advance([]time.Duration{0, 100 * time.Millisecond, 400 * time.Millisecond}[rng.IntN(3)])
		// Run's snapshots, and now and then one asked for (Publish).
		asked := round%25 == 24
		s := c.publish(!asked)
		want := map[feed.TargetRemark]int{}
		if len(s.Targets) != len(recs) {
			t.Fatalf("round %d: %d targets shown of %d", round, len(s.Targets), len(recs))
		}
		for i, r := range recs {
			st, got := r.Status(), *s.Targets[i]
			have, now := counts(&got), counts(&st)
			if (mode != ModeLive || asked) && have != now {
				t.Fatalf("round %d: target %d's counts shown %v (%v, asked for: %v), its record says %v", round, i, have, mode, asked, now)
			}
			for k := range have {
				if have[k] > now[k] || i < len(shown) && have[k] < counts(shown[i])[k] {
					t.Fatalf("round %d: target %d's counts shown %v, before %v, its record says %v", round, i, have, counts(shown[i]), now)
				}
			}
			switch behind[i]++; {
			case have == now:
				behind[i], exactAt[i] = 0, s.At
			case behind[i] >= TalliesAfter || s.At-exactAt[i] >= TalliesEvery.Milliseconds():
				t.Fatalf("round %d: target %d's counts shown short of its record %d snapshots in a row, for %d ms", round, i, behind[i], s.At-exactAt[i])
			}
			got.Messages, got.Bytes, got.Items, got.LastMessageAt = st.Messages, st.Bytes, st.Items, st.LastMessageAt
			if got != st {
				t.Fatalf("round %d: target %d shown %+v, its record says %+v", round, i, *s.Targets[i], st)
			}
			if n := s.Targets[i].Note; n != (feed.TargetRemark{}) {
				want[n]++
			}
		}
		shown = s.Targets
		got := map[feed.TargetRemark]int{}
		for _, w := range s.Warnings {
			if n, ok := w.(TargetNote); ok {
				got[n.Note] = n.Targets
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("round %d: remarks counted %v, recounted %v", round, got, want)
		}
	}
	if !tallied {
		t.Fatal("no record was tallied")
	}
}
