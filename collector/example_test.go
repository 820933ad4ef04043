package collector_test

import (
	"errors"
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

// A RejectLog is an Options.OnReject that keeps the first rejects for a
// command to print.
func ExampleRejectLog() {
	log := &collector.RejectLog{Max: 2}
	c := collector.New(collector.Options{OnReject: log.Add})
	for i := range 3 {
		c.Reject(fmt.Sprintf("incident.ndjson:%d", i+1), errors.New("unknown type \"bucket\""))
	}
	kept, more := log.Rejects()
	for _, r := range kept {
		fmt.Printf("rejected: %s: %v\n", r.Place, r.Err)
	}
	fmt.Printf("... and %d more\n", more)
	// Output:
	// rejected: incident.ndjson:1: unknown type "bucket"
	// rejected: incident.ndjson:2: unknown type "bucket"
	// ... and 1 more
}
