package collector_test

import (
	"fmt"

	"github.com/sentinel-top/sentinel-top/collector"
)

// Waiting for the next snapshot instead of polling for it: take the
// channel before reading the latest snapshot, so that none is missed.
func ExampleCollector_Published() {
	c := collector.New(collector.Options{})
	var seen uint64
	if s := c.Snapshot(); s != nil {
		seen = s.Seq
	}
	next := c.Published()
	go c.Publish() // as Run does every 250 ms
	<-next
	fmt.Println(c.Snapshot().Seq-seen, "new snapshot")
	// Output:
	// 1 new snapshot
}
