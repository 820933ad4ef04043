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
	fmt.Println(snap.Instances, "instances,", len(snap.Rows), "resources")
	for _, f := range snap.Findings {
		fmt.Println(f.Severity, f.Kind, f.Resource)
	}
	// Output:
	// 2 instances, 2 resources
	// warning sawtooth GET:http://member-service/api/user/info
	// info rule-advice GET:http://member-service/api/user/info
}
