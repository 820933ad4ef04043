package main

import (
	"errors"
	"fmt"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/fixtures"
)

// openReplay opens what --replay names (source.OpenReplay: a recording, a
// built-in fixture, or Sentinel metric logs) and the collector it feeds,
// of opts on the replay's clock.
func openReplay(spec string, speed float64, ropts source.ReplayOptions, opts collector.Options) (*source.Replay, *collector.Collector, string, error) {
	rp, name, collisions, err := source.OpenReplay(spec, speed, ropts, source.Builtin{Names: fixtures.Names(), Open: fixtures.Open})
	if err != nil {
		return nil, nil, "", replayError(err)
	}
	c, err := replayInto(rp, name, opts)
	if err != nil {
		return nil, nil, "", err
	}
	for _, x := range collisions {
		c.Notice(collector.Notice{Kind: collector.NoticeNameCollision, Instance: x.Instance,
			Resource: x.Resource, At: x.First, Count: int64(x.Seconds)})
	}
	if err := rp.Replayable(); err != nil {
		return nil, nil, "", err
	}
	return rp, c, name, nil
}

// replayError is an error of opening --replay as the user is told it: the
// spec's own is bad usage, an input with nothing to replay names itself.
func replayError(err error) error {
	var se *source.SpecError
	switch {
	case errors.As(err, &se):
		return usageError{fmt.Errorf("--replay %w", err)}
	case errors.Is(err, source.ErrNothingToReplay):
		return err
	}
	return fmt.Errorf("--replay: %w", err)
}

// replayInto builds the collector rp feeds (of opts, on rp's clock) and
// starts rp.
func replayInto(rp *source.Replay, name string, opts collector.Options) (*collector.Collector, error) {
	opts.Clock, opts.Mode, opts.Source = rp.Clock(), collector.ModeReplay, name
	c := collector.New(opts)
	if err := rp.Start(c); err != nil {
		return nil, fmt.Errorf("--replay: %w", err)
	}
	c.Publish()
	return c, nil
}
