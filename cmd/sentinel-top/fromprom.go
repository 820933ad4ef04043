package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/cliflag"
)

// promFlags are the flags of the Prometheus input (--prometheus).
type promFlags struct {
	url       string
	token     string
	tokenFile string
	from, to  string
	step      time.Duration
	stepSet   bool // --prometheus-step was given
	maxSeries int
	maxBytes  int64
	timeout   time.Duration
}

func (f *promFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "prometheus", "", "read the fleet from a Prometheus server's HTTP API (http://HOST:9090): sentinel-golang's exporter, Java Sentinel's, or sentinel-top's own /metrics, at --prometheus-step; live unless --to is given")
	fs.StringVar(&f.token, "prometheus-token", "", "bearer token for --prometheus (env SENTINEL_TOP_PROMETHEUS_TOKEN)")
	fs.StringVar(&f.tokenFile, "prometheus-token-file", "", "file holding the bearer token for --prometheus (kept off the command line)")
	fs.StringVar(&f.from, "from", "", "with --prometheus: where the range begins, RFC 3339 (2026-03-01T10:00:00Z) or relative to now (-30m); report default -15m; the live dashboard begins with the last minute, and takes --from with --to alone")
	fs.StringVar(&f.to, "to", "", "with --prometheus: where the range ends, RFC 3339 or relative (-5m); report default now; the dashboard follows now without it")
	f.step = source.DefaultPromStep
	fs.Var(cliflag.Duration(&f.step, &f.stepSet), "prometheus-step", "with --prometheus: the resolution of counts and inferred transitions, a `duration` of whole seconds, at least the scrape interval")
	fs.IntVar(&f.maxSeries, "prometheus-max-series", source.DefaultPromMaxSeries, "with --prometheus: most series one query may return; a query returning more is refused")
	f.maxBytes = source.DefaultPromMaxBytes
	fs.Var(cliflag.Bytes(&f.maxBytes), "prometheus-max-bytes", "with --prometheus: largest answer read, e.g. 64MiB (default 64MiB); a larger one is refused")
	fs.DurationVar(&f.timeout, "prometheus-timeout", source.DefaultPromTimeout, "with --prometheus: most time one query may take")
}

// validate checks the Prometheus flags given without --prometheus, and
// with it their values.
func (f *promFlags) validate(now time.Time) error {
	if f.url == "" {
		if f.from != "" || f.to != "" || f.token != "" || f.tokenFile != "" || f.stepSet {
			return usagef("--from, --to, --prometheus-step and --prometheus-token go with --prometheus")
		}
		return nil
	}
	if f.token != "" && f.tokenFile != "" {
		return usagef("--prometheus-token or --prometheus-token-file, not both")
	}
	if f.step < time.Second || f.step%time.Second != 0 || f.maxSeries <= 0 || f.timeout <= 0 {
		return usagef("--prometheus-step must be whole seconds, at least 1s; --prometheus-max-series and --prometheus-timeout positive")
	}
	for _, v := range []string{f.from, f.to} {
		if _, err := cliflag.ParseWhen(v, now); v != "" && err != nil {
			return usageError{err}
		}
	}
	return nil
}

// promRange is the range a report (or a dashboard given --to) reads.
func (f *promFlags) promRange(now time.Time) (from, to time.Time, err error) {
	from, to = now.Add(-15*time.Minute), now
	if f.from != "" {
		if from, err = cliflag.ParseWhen(f.from, now); err != nil {
			return from, to, usageError{fmt.Errorf("--from %w", err)}
		}
	}
	if f.to != "" {
		if to, err = cliflag.ParseWhen(f.to, now); err != nil {
			return from, to, usageError{fmt.Errorf("--to %w", err)}
		}
	}
	if to.Before(from) {
		return from, to, usageError{fmt.Errorf("--from %s is after --to %s: the range is reversed",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))}
	}
	if !to.After(from.Add(f.step)) {
		return from, to, usageError{fmt.Errorf("--from %s to --to %s: want at least one --prometheus-step (%s)",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), f.step)}
	}
	return from, to, nil
}

// options are the source's options the flags set; ca is --ca's TLS.
func (f *promFlags) options(ca *tls.Config, lim wire.Limits) (source.PromOptions, error) {
	o := source.PromOptions{URL: f.url, Token: f.token, Step: f.step, MaxSeries: f.maxSeries,
		MaxBytes: f.maxBytes, Timeout: f.timeout, Limits: lim, TLS: ca}
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return o, fmt.Errorf("--prometheus-token-file: %w", err)
		}
		if o.Token = strings.TrimSpace(string(b)); o.Token == "" {
			return o, usagef("--prometheus-token-file %s: it is empty", f.tokenFile)
		}
	}
	return o, nil
}

// openPrometheus opens the --prometheus input: a range read at once and
// replayed (a report, or a dashboard given --to), or the live fleet.
func (f *inputFlags) openPrometheus(ctx context.Context, s *session, opts collector.Options, speed float64, ranged bool) (*session, error) {
	ca, err := f.caConfig()
	if err != nil {
		return nil, err
	}
	po, err := f.prom.options(ca, wire.Limits{MaxFrameBytes: f.maxFrame, MaxNameBytes: f.maxName})
	if err != nil {
		return nil, err
	}
	// A range is converted whole before it is replayed: at most a sample
	// per 512 bytes of --max-memory (an item of a bucket takes about 250).
	po.MaxPoints = max(f.maxMemory/512, 10_000)
	p, err := source.NewPrometheus(po)
	if err != nil {
		return nil, usageError{fmt.Errorf("--prometheus: %w", err)}
	}
	s.prom = p
	s.closers = append(s.closers, func() error { p.Close(); return nil })
	opts.Coarse(f.prom.step)
	if ranged {
		if f.record != "" {
			return nil, usagef("--record goes with live input, not a --prometheus range")
		}
		now := time.Now()
		from, to, err := f.prom.promRange(now)
		if err != nil {
			return nil, err
		}
		msgs, rejects, err := p.Range(ctx, from, to)
		if err != nil {
			return nil, err
		}
		s.promFrom, s.promTo = from, to
		name := p.Name()
		rp, err := source.NewReplayMessages(name, msgs, rejects, speed, f.replayLimits())
		if err != nil {
			return nil, fmt.Errorf("--prometheus: %w", err)
		}
		c, err := replayInto(rp, name, opts)
		if err != nil {
			return nil, err
		}
		s.c, s.replay, s.source = c, rp, name
		s.feed = rp.Run
		return s, nil
	}
	if f.prom.from != "" {
		return nil, usagef("--from without --to: the live view begins with the last minute; give --to as well to read a past range")
	}
	// Live: a server that cannot be reached, or does not answer, fails
	// here (exit 3), not as an empty dashboard.
	if err := p.Check(ctx); err != nil {
		return nil, err
	}
	s.source = p.Name()
	opts.Mode, opts.Source = collector.ModeLive, s.source
	s.c = collector.New(opts)
	s.feed = func(ctx context.Context) error {
		p.Follow(ctx, s.c)
		return nil
	}
	return s, nil
}
