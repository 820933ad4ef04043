package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/metriclog"
)

// openReplay opens what --replay names: a wire v1 fixture file (.ndjson,
// .ndjson.gz), a built-in fixture, or Sentinel metric log files
// (app-metrics.log.YYYY-MM-DD and its rotations, comma-separated), as
// Java Sentinel and sentinel-golang write them.
func openReplay(spec string, speed float64, opts collector.Options) (*collector.Replay, string, error) {
	if paths := strings.Split(spec, ","); isMetricLog(paths[0]) {
		for _, p := range paths[1:] {
			if !isMetricLog(p) {
				return nil, "", usagef("--replay %q: %s is not a Sentinel metric log like %s", spec, p, paths[0])
			}
		}
		msgs, errs := metriclog.ConvertFiles(paths, "", "")
		if len(msgs) == 0 && len(errs) > 0 {
			return nil, "", fmt.Errorf("--replay %s: no usable line: %w", spec, errs[0])
		}
		rp, err := collector.NewReplayMessages(spec, msgs, errs, speed, opts)
		if err != nil {
			return nil, "", fmt.Errorf("--replay: %w", err)
		}
		if err := replayable(rp, spec); err != nil {
			return nil, "", err
		}
		return rp, spec, nil
	}
	rc, name, err := openFixture(spec)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	rp, err := collector.NewReplay(name, rc, speed, opts)
	if err != nil {
		return nil, "", fmt.Errorf("--replay: %w", err)
	}
	if err := replayable(rp, name); err != nil {
		return nil, "", err
	}
	return rp, name, nil
}

// replayable refuses an input with nothing to replay, in one line that
// says why: a dashboard or a report of nothing would look like a quiet
// fleet.
func replayable(rp *collector.Replay, name string) error {
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

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
