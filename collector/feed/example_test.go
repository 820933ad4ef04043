package feed_test

import (
	"fmt"

	"github.com/sentinel-top/sentinel-top/collector/feed"
)

// A store watching thousands of target records takes, at each snapshot,
// only those updated since the last: each once, however often updated.
func ExampleTargetChanges() {
	var changes feed.TargetChanges
	a := feed.NewTargetRecord(feed.TargetStatus{Name: "gw-1:8720"})
	b := feed.NewTargetRecord(feed.TargetStatus{Name: "gw-2:8720"})
	a.Watch(&changes)
	b.Watch(&changes)
	fmt.Println(len(changes.Take(nil)), "to read at first")
	for range 3 {
		b.Update(func(s *feed.TargetStatus) { s.Messages++ })
	}
	for _, r := range changes.Take(nil) {
		fmt.Println(r.Published().Name, r.Published().Messages)
	}
	fmt.Println(len(changes.Take(nil)), "since")
	// Output:
	// 2 to read at first
	// gw-2:8720 3
	// 0 since
}

// A target's running counts move at every message; tallied, they are
// gathered apart from its other changes, for a store to take less often.
func ExampleTargetRecord_Tally() {
	var changes feed.TargetChanges
	r := feed.NewTargetRecord(feed.TargetStatus{Name: "gw-1:8720", State: feed.TargetUp})
	r.Watch(&changes)
	changes.Take(nil)
	for range 3 {
		r.Tally(func(s *feed.TargetStatus) { s.Messages++; s.Bytes += 400 })
	}
	fmt.Println(len(changes.Take(nil)), "changed")
	for _, r := range changes.TakeTallied(nil) {
		st := r.Published()
		fmt.Println(st.Name, st.Messages, st.Bytes)
	}
	fmt.Println(len(changes.TakeTallied(nil)), "tallied since")
	// Output:
	// 0 changed
	// gw-1:8720 3 1200
	// 0 tallied since
}
