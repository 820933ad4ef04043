package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/record"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/cliflag"
	"github.com/sentinel-top/sentinel-top/internal/tlsfile"
)

// inputFlags are the flags that choose and shape the input, shared by the
// dashboard and the report.
type inputFlags struct {
	// keepGone: the input is reported at its end (report), so instances
	// gone early are kept for their findings' timelines.
	keepGone     bool
	targets      string
	replay       string
	demo         string
	demoSet      bool
	token        string
	caFile       string
	speed        string
	record       string
	recordOver   bool
	maxInstances int
	maxResources int
	maxFrame     int
	maxName      int
	maxRate      float64
	maxMemory    int64
	maxReplay    int64
	retention    time.Duration
	prom         promFlags
}

func (f *inputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.targets, "targets", "", "instances to watch: HOST:PORT, ws://... or wss://... URLs, or @FILE, comma-separated (a FILE's line may add token=TOKEN or token-file=PATH, sent to its targets alone)")
	fs.StringVar(&f.replay, "replay", "", "replay a recording: a .ndjson[.gz] file, a built-in fixture name, or Sentinel metric logs (APP-metrics.log.DATE[,rotations])")
	fs.Func("demo", "run a simulated fleet over loopback (optionally a scenario NAME)", func(s string) error {
		f.demo, f.demoSet = s, true
		return nil
	})
	fs.StringVar(&f.token, "token", "", "bearer token for the targets without their own (a --targets file line's token= or token-file=); one shared by all lets any target learn it (env SENTINEL_TOP_TOKEN)")
	fs.StringVar(&f.caFile, "ca", "", "PEM file of the CA that signs wss:// targets (default: system roots)")
	fs.StringVar(&f.speed, "speed", "1", "replay speed: a factor (1 = real time) or max")
	fs.StringVar(&f.record, "record", "", "record every accepted message to FILE (.ndjson, or .ndjson.gz), replayable later; flushed every second, so a crash loses at most the last")
	fs.BoolVar(&f.recordOver, "record-overwrite", false, "let --record replace an existing file (never through a symbolic link)")
	fs.IntVar(&f.maxInstances, "max-instances", collector.DefaultMaxInstances, "most instances tracked; more are counted and ignored")
	fs.IntVar(&f.maxResources, "max-resources", collector.DefaultMaxResourcesPerApp, "most resources tracked per instance")
	fs.IntVar(&f.maxFrame, "max-frame-bytes", wire.DefaultMaxFrameBytes, "largest message (frame or fixture line); a larger frame drops its connection")
	fs.IntVar(&f.maxName, "max-name-bytes", wire.DefaultMaxNameBytes, "longest resource, instance or app name; messages with longer ones are rejected")
	f.maxMemory = collector.DefaultMaxMemory
	fs.Var(cliflag.Bytes(&f.maxMemory), "max-memory", "most memory the process may take, e.g. 512MiB or 2GiB (default 512MiB): three quarters of it for what the targets make it keep, each target a share; what does not fit is refused, and counted per target")
	f.maxReplay = source.DefaultMaxReplayBytes
	fs.Var(cliflag.Bytes(&f.maxReplay), "max-replay-bytes", "most a --replay reads in one pass, decompressed, and copies of a pipe, e.g. 2GiB (default 512MiB); a larger input ends with an error. A replay holds one message at a time, whatever the size")
	fs.Float64Var(&f.maxRate, "max-rate", source.DefaultMaxMessageRate, "most messages a second from one target, in bursts of up to 10 s' worth (0: no limit); more are dropped and counted. An agent sends 2 a second; an upstream serve sends 2 per instance: raise it above 400 instances")
	fs.DurationVar(&f.retention, "retention", collector.DefaultRetention, "how much history to keep")
	f.prom.register(fs)
}

// errChooseInput is validate's error when no input, or more than one, is
// given: the one a first-time user meets, followed by the command's hint.
var errChooseInput = errors.New("choose one input: --targets, --replay, --demo or --prometheus")

func (f *inputFlags) validate() error {
	n := 0
	for _, set := range []bool{f.targets != "", f.replay != "", f.demoSet, f.prom.url != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usageError{errChooseInput}
	}
	if _, err := f.parseSpeed(); err != nil {
		return err
	}
	if f.maxInstances <= 0 || f.maxResources <= 0 || f.retention < time.Minute {
		return usagef("--max-instances and --max-resources must be positive and --retention at least 1m")
	}
	if f.maxFrame < minFrameBytes || f.maxName < minNameBytes || f.maxName > f.maxFrame || f.maxRate < 0 {
		return usagef("--max-frame-bytes must be at least %d, --max-name-bytes at least %d (and at most --max-frame-bytes), --max-rate 0 or more",
			minFrameBytes, minNameBytes)
	}
	if f.record != "" && f.replay != "" {
		return usagef("--record goes with live input (--targets or --demo), not --replay")
	}
	if err := f.prom.validate(time.Now()); err != nil {
		return err
	}
	return nil
}

// Smallest values of --max-frame-bytes and --max-name-bytes: below them an
// ordinary agent's messages would not fit.
const (
	minFrameBytes = 4 << 10
	minNameBytes  = 64
)

// limits are the collector options the limit flags set.
func (f *inputFlags) limits(opts *collector.Options) {
	opts.MaxInstances, opts.MaxResourcesPerInstance = f.maxInstances, f.maxResources
	opts.MaxClockSkew = collector.DefaultMaxClockSkew
	opts.MaxMemory = f.maxMemory
}

// dialLimits are the options of the dialing source the limit flags set.
func (f *inputFlags) dialLimits() source.DialOptions {
	d := source.DialOptions{Limits: wire.Limits{MaxFrameBytes: f.maxFrame, MaxNameBytes: f.maxName}, MaxMessageRate: f.maxRate}
	if f.maxRate == 0 {
		d.MaxMessageRate = -1 // no limit
	}
	return d
}

// replayLimits are the options of a replay the limit flags set.
func (f *inputFlags) replayLimits() source.ReplayOptions {
	return source.ReplayOptions{Limits: wire.Limits{MaxFrameBytes: f.maxFrame, MaxNameBytes: f.maxName}, MaxBytes: f.maxReplay}
}

func (f *inputFlags) parseSpeed() (float64, error) {
	x, err := cliflag.ParseSpeed(f.speed)
	if err != nil {
		return 0, usageError{fmt.Errorf("--speed %w", err)}
	}
	return x, nil
}

// session is an opened input: a collector and what feeds it.
type session struct {
	c      *collector.Collector
	replay *source.Replay
	// dial is what the dialing source takes (--targets, --demo).
	dial   source.DialOptions
	source string
	// feed runs the input until ctx ends (or, for a replay at max speed,
	// until it has all been fed).
	feed    func(ctx context.Context) error
	closers []func() error
	// rec is the --record file, nil without one; recPath its name.
	rec     *record.Writer
	recPath string
	// prom is the --prometheus source, nil without one; promFrom and
	// promTo its range when one was read.
	prom             *source.Prometheus
	promFrom, promTo time.Time
	// rejects are the first rejected messages, for stderr.
	rejects collector.RejectLog
}

// recordFailed is closed when a write to the --record file fails; without
// one it is nil (never ready).
func (s *session) recordFailed() <-chan struct{} {
	if s.rec == nil {
		return nil
	}
	return s.rec.Failed()
}

// recordError is why the recording stopped, nil while it works (or without
// one).
func (s *session) recordError() error {
	if s.rec == nil {
		return nil
	}
	err := s.rec.Err()
	if err == nil && s.c != nil {
		err = s.c.RecordError()
	}
	if err != nil {
		return fmt.Errorf("--record %s: %w", s.recPath, err)
	}
	return nil
}

func (s *session) close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

// open builds the session for the flags. speedOverride, when >= 0, replaces
// --speed (the report replays as fast as possible).
func (f *inputFlags) open(ctx context.Context, speedOverride float64) (*session, error) {
	s := &session{}
	opts := collector.Options{
		Retention: f.retention,
		KeepGone:  f.keepGone,
		OnReject:  s.rejects.Add,
	}
	if f.keepGone {
		opts.PlanEvery = -1 // reported at its end: the plans of the whole input
	}
	f.limits(&opts)
	restore := collector.FollowBudget(opts.MaxMemory)
	s.closers = append(s.closers, func() error { restore(); return nil })
	if f.record != "" {
		w, err := record.Start(f.record, f.recordOver, &wire.Meta{Header: wire.Header{Ts: core.NewRealClock().UnixMilli()},
			Title: "recorded " + time.Now().UTC().Format(time.RFC3339), RecordedBy: versionString()})
		if errors.Is(err, record.ErrExists) {
			return nil, fmt.Errorf("--record: %w; --record-overwrite replaces it", err)
		}
		if err != nil {
			return nil, fmt.Errorf("--record: %w", err)
		}
		opts.Record = w.Writer
		s.rec, s.recPath = w, f.record
		s.closers = append(s.closers, func() error {
			// A write that failed stopped the recording (the collector
			// keeps the first error): the run fails, whatever Close says.
			var werr error
			if s.c != nil {
				werr = s.c.RecordError()
			}
			if cerr := w.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return fmt.Errorf("--record %s: %w", f.record, werr)
			}
			return nil
		})
	}
	speed, _ := f.parseSpeed()
	if speedOverride >= 0 {
		speed = speedOverride
	}
	switch {
	case f.prom.url != "":
		// A report reads a range; so does a dashboard given --to. A
		// dashboard without it follows now.
		return f.openPrometheus(ctx, s, opts, speed, f.keepGone || f.prom.to != "")
	case f.replay != "":
		rp, c, name, err := openReplay(f.replay, speed, f.replayLimits(), opts)
		if err != nil {
			return nil, err
		}
		s.c, s.replay, s.source = c, rp, name
		s.feed = rp.Run
	case f.targets != "":
		targets, err := source.ParseTargets(f.targets)
		if err != nil {
			return nil, usageError{err}
		}
		dial := f.dialLimits()
		dial.Token = f.token
		if dial.TLS, err = f.caConfig(); err != nil {
			return nil, err
		}
		s.source = source.TargetNames(targets)
		opts.Mode, opts.Source = collector.ModeLive, s.source
		s.c = collector.New(opts)
		s.dial = dial
		s.feed = func(ctx context.Context) error {
			source.Dial(ctx, s.c, targets, s.dial)
			return nil
		}
	case f.demoSet:
		s.dial = f.dialLimits()
		if speed, _ := f.parseSpeed(); speed > 1 && s.dial.MaxMessageRate > 0 {
			s.dial.MaxMessageRate *= speed // a faster demo's agents send as much more often
		}
		return f.openDemo(ctx, s, opts)
	}
	return s, nil
}

// caConfig is the TLS of --ca (tlsfile.ClientCA); a file of no certificate
// is bad usage.
func (f *inputFlags) caConfig() (*tls.Config, error) {
	conf, err := tlsfile.ClientCA(f.caFile)
	if errors.Is(err, tlsfile.ErrNoCertificates) {
		return nil, usageError{fmt.Errorf("--ca %w", err)}
	}
	if err != nil {
		return nil, fmt.Errorf("--ca: %w", err)
	}
	return conf, nil
}
