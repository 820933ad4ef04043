package collector

import (
	"sync"
	"testing"
	"time"
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
