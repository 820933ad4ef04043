package source_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/fixtures"
)

// Replaying a recorded incident as fast as possible into a collector on
// the replay's clock, then reading what the collector made of it.
func ExampleNewReplay() {
	f, err := fixtures.Open("sawtooth-db-slow")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	r, err := source.NewReplay("sawtooth-db-slow", f, 0, source.ReplayOptions{})
	if err != nil {
		panic(err)
	}
	c := collector.New(collector.Options{Clock: r.Clock(), Mode: collector.ModeReplay, Source: r.Name()})
	if err := r.Start(c); err != nil {
		panic(err)
	}
	if err := r.Run(context.Background()); err != nil {
		panic(err)
	}
	snap := c.Publish()
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

// Opening what a --replay names: here a built-in recording by name (a
// file's path, or Sentinel metric logs, open the same way), then whether
// it holds anything once started.
func ExampleOpenReplay() {
	r, name, _, err := source.OpenReplay("sawtooth-db-slow", 0, source.ReplayOptions{},
		source.Builtin{Names: fixtures.Names(), Open: fixtures.Open})
	if err != nil {
		panic(err)
	}
	c := collector.New(collector.Options{Clock: r.Clock(), Mode: collector.ModeReplay, Source: name})
	if err := r.Start(c); err != nil {
		panic(err)
	}
	fmt.Println(name, r.Messages() > 0, r.Replayable())

	_, _, _, err = source.OpenReplay("no-such-incident", 0, source.ReplayOptions{}, source.Builtin{})
	fmt.Println(errors.Is(err, os.ErrNotExist))
	// Output:
	// sawtooth-db-slow true <nil>
	// true
}
