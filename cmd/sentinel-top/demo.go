package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/sim"
)

// openDemo starts a simulated fleet, each instance's agent on its own
// loopback port, and a collector dialing them over real websockets.
func (f *inputFlags) openDemo(ctx context.Context, s *session, opts collector.Options) (*session, error) {
	sc := sim.DemoScenario()
	if f.demo != "" {
		var ok bool
		if sc, ok = sim.Lookup(f.demo); !ok {
			return nil, usagef("--demo %q: no such scenario (%s)", f.demo, strings.Join(sim.Names(), ", "))
		}
	}
	speed, _ := f.parseSpeed()
	if speed == 0 {
		return nil, usagef("--speed max is for replays; a demo runs in real time (or N times faster: --speed N)")
	}
	d, err := sim.StartDemo(ctx, sc, speed)
	if err != nil {
		return nil, fmt.Errorf("--demo: %w", err)
	}
	s.closers = append(s.closers, d.Close)
	targets, err := source.ParseTargets(strings.Join(d.Targets(), ","))
	if err != nil {
		d.Close()
		return nil, err
	}
	s.source = "demo " + sc.Name
	if sc.Name == "demo" {
		s.source = "demo" // not "demo demo"
	}
	opts.Mode, opts.Source, opts.Clock = collector.ModeLive, s.source, d.Clock()
	s.c = collector.New(opts)
	s.dial.Clock = d.Clock()
	s.feed = func(ctx context.Context) error {
		source.Dial(ctx, s.c, targets, s.dial)
		return nil
	}
	return s, nil
}
