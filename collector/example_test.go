package collector_test

import (
	"context"
	"fmt"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/fixtures"
)

// Replaying a recorded incident as fast as possible, then reading what the
// collector made of it.
func ExampleNewReplay() {
	f, err := fixtures.Open("sawtooth-db-slow")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	r, err := collector.NewReplay("sawtooth-db-slow", f, 0, collector.Options{})
	if err != nil {
		panic(err)
	}
	if err := r.Run(context.Background()); err != nil {
		panic(err)
	}
	snap := r.Collector().Publish()
	// Both instances said bye at the end of the recording: none is live,
	// while the rows keep their last data for the stale period.
	fmt.Println(snap.Instances, "live instances,", len(snap.Rows), "resources")
	for _, f := range snap.Findings {
		fmt.Println(f.Severity, f.Kind, f.Resource)
	}
	// Output:
	// 0 live instances, 2 resources
	// warning sawtooth GET:http://member-service/api/user/info
}

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
