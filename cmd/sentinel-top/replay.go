package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/internal/english"
)

// openReplay opens what --replay names: a wire v1 fixture file (.ndjson,
// .ndjson.gz), a built-in fixture, or Sentinel metric log files
// (app-metrics.log[.pidPID].YYYY-MM-DD and its rotations, comma-separated,
// each optionally @INSTANCE), as Java Sentinel and sentinel-golang write
// them: each process's files are an instance of their own. The replay
// feeds a collector of opts on its clock, which it returns.
func openReplay(spec string, speed float64, ropts source.ReplayOptions, opts collector.Options) (*source.Replay, *collector.Collector, string, error) {
	if specs := strings.Split(spec, ","); len(specs) > 1 {
		for _, p := range specs {
			if _, err := os.Stat(metricLogPath(p)); err != nil {
				// The input failed (exit 3), as a file that cannot be read
				// does: the flags were well formed.
				return nil, nil, "", fmt.Errorf("--replay: %s: %w (one of the files named in %q)", metricLogPath(p), errors.Unwrap(err), spec)
			}
		}
	}
	if specs := strings.Split(spec, ","); isMetricLog(metricLogPath(specs[0])) {
		return openMetricLogs(spec, specs, speed, ropts, opts)
	}
	if log, ok := metriclog.IndexOf(spec); ok {
		return nil, nil, "", fmt.Errorf("nothing replayable in %s: it is the index of a Sentinel metric log, not the log: replay %s", spec, log)
	}
	rc, name, err := openFixture(spec)
	if err != nil {
		return nil, nil, "", err
	}
	defer rc.Close()
	rp, err := source.NewReplay(name, rc, speed, ropts)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--replay: %w", err)
	}
	c, err := replayInto(rp, name, opts)
	if err != nil {
		return nil, nil, "", err
	}
	if err := replayable(rp, name); err != nil {
		return nil, nil, "", err
	}
	return rp, c, name, nil
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

// openMetricLogs opens the Sentinel metric logs of --replay: each PATH or
// PATH@INSTANCE of specs, grouped into the processes that wrote them (one
// instance each: see metriclog.Group).
func openMetricLogs(spec string, specs []string, speed float64, ropts source.ReplayOptions, opts collector.Options) (*source.Replay, *collector.Collector, string, error) {
	for _, s := range specs {
		p := metricLogPath(s)
		if log, ok := metriclog.IndexOf(p); ok {
			return nil, nil, "", fmt.Errorf("nothing replayable in %s: it is the index of a Sentinel metric log, not the log: replay %s", p, log)
		}
		if !isMetricLog(p) {
			return nil, nil, "", usagef("--replay %q: %s is not a Sentinel metric log like %s", spec, p, metricLogPath(specs[0]))
		}
	}
	srcs, err := metriclog.Group(specs)
	if err != nil {
		return nil, nil, "", usagef("--replay %q: %v", spec, err)
	}
	r := metriclog.ConvertSources(srcs)
	if len(r.Messages) == 0 {
		if len(r.Errors) > 0 {
			return nil, nil, "", fmt.Errorf("nothing replayable in %s: no usable line: %w", spec, r.Errors[0])
		}
		return nil, nil, "", fmt.Errorf("nothing replayable in %s: it holds no metric lines", spec)
	}
	rp, err := source.NewReplayMessages(spec, r.Messages, r.Errors, speed, ropts)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--replay: %w", err)
	}
	c, err := replayInto(rp, spec, opts)
	if err != nil {
		return nil, nil, "", err
	}
	for _, x := range r.Collisions {
		c.Notice(collector.Notice{Kind: collector.NoticeNameCollision, Instance: x.Instance,
			Resource: x.Resource, At: x.First, Count: int64(x.Seconds)})
	}
	if err := replayable(rp, spec); err != nil {
		return nil, nil, "", err
	}
	return rp, c, spec, nil
}

// metricLogPath is the path of a --replay item, PATH or PATH@INSTANCE.
func metricLogPath(spec string) string {
	p, _ := metriclog.SplitSpec(spec)
	return p
}

// replayable refuses an input with nothing to replay, in one line that
// says why: a dashboard or a report of nothing would look like a quiet
// fleet.
func replayable(rp *source.Replay, name string) error {
	if rp.Messages() > 0 {
		return nil
	}
	n, place, err := rp.Rejects()
	if n == 0 {
		return fmt.Errorf("nothing replayable in %s: it holds no messages", name)
	}
	return fmt.Errorf("nothing replayable in %s: %d %s rejected, the first at %s: %w", name, n, plural(n, "line", "lines"), place, err)
}

// isMetricLog reports whether path is a Sentinel metric log, by its name or
// its first line.
func isMetricLog(path string) bool {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		// A pipe (<(zcat ...), a FIFO) or a device cannot be read twice:
		// judge it by its name alone, and read it once, later.
		return err == nil && metriclog.Detect(path, nil)
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head, _ := bufio.NewReader(f).Peek(4096)
	return metriclog.Detect(path, head)
}

// plural is english.Plural for the counts of this package's messages.
func plural(n int, one, many string) string { return english.Plural(n, one, many) }
