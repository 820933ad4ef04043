package collector

import (
	"testing"
	"time"
)

// TestPublishedMissesNoSnapshot: a reader that takes Published's channel,
// reads Snapshot and waits on the channel alone, while snapshots are
// published as fast as they can be from another goroutine, always reaches
// the last one (a wake-up before the snapshot is stored, or a channel
// replaced unclosed, leaves it waiting for a snapshot that never comes).
func TestPublishedMissesNoSnapshot(t *testing.T) {
	const n = 200
	total := 0
	for round := range 50 {
		c := New(Options{})
		var want uint64 = n
		if s := c.Snapshot(); s != nil {
			want += s.Seq
		}
		go func() {
			for range n {
				c.Publish()
			}
		}()
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
				t.Fatalf("round %d: still waiting after snapshot %d of %d", round, c.Snapshot().Seq, want)
			}
		}
		// The publishing may finish before the reader first looks.
		if wakes > n {
			t.Fatalf("round %d: %d wake-ups for %d snapshots", round, wakes, n)
		}
		total += wakes
	}
	if total == 0 {
		t.Error("the reader never waited: the publishing finished first every round")
	}
}
