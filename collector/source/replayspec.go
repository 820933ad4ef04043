package source

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/internal/english"
)

// SpecError is an error of OpenReplay that is the spec's own (a file
// that is not a metric log among metric logs, names of files that do not
// go together): the caller's usage, not a failed input. Its text begins
// with the spec, quoted.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// ErrNothingToReplay is what an input that holds nothing a replay can feed
// is (errors.Is): a directory, an empty file, lines all rejected, the
// index of a metric log. Its text says so and why, naming the input:
// "nothing replayable in NAME: ...".
var ErrNothingToReplay = errors.New("nothing to replay")

// nothing is an ErrNothingToReplay in name, saying why.
func nothing(name, format string, args ...any) error {
	return &nothingError{fmt.Errorf("nothing replayable in %s: "+format, append([]any{name}, args...)...)}
}

type nothingError struct{ err error }

func (e *nothingError) Error() string        { return e.err.Error() }
func (e *nothingError) Unwrap() error        { return e.err }
func (e *nothingError) Is(target error) bool { return target == ErrNothingToReplay }

// Builtin is the recordings a binary carries, opened by name.
type Builtin struct {
	Names []string
	Open  func(name string) (io.ReadCloser, error)
}

// OpenReplay opens what spec names for a replay: a wire v1 recording
// (.ndjson, .ndjson.gz), one of builtin's by name, or Sentinel metric log
// files (app-metrics.log[.pidPID].YYYY-MM-DD and its rotations,
// comma-separated, each optionally @INSTANCE), as Java Sentinel and
// sentinel-golang write them: each process's files are an instance of its
// own (metriclog.Group). It returns the replay, not started, its name, and
// the resource names that several lines of one second of a metric log
// wrote (the collector's NoticeNameCollision). Once started, Replayable
// says whether it holds anything.
func OpenReplay(spec string, speed float64, o ReplayOptions, builtin Builtin) (*Replay, string, []metriclog.Collision, error) {
	specs := strings.Split(spec, ",")
	if len(specs) > 1 {
		for _, p := range specs {
			if _, err := os.Stat(metricLogPath(p)); err != nil {
				// The input failed, as a file that cannot be read does:
				// the spec was well formed.
				return nil, "", nil, fmt.Errorf("%s: %w (one of the files named in %q)", metricLogPath(p), errors.Unwrap(err), spec)
			}
		}
	}
	if isMetricLog(metricLogPath(specs[0])) {
		return openMetricLogs(spec, specs, speed, o)
	}
	if log, ok := metriclog.IndexOf(spec); ok {
		return nil, "", nil, nothing(spec, "it is the index of a Sentinel metric log, not the log: replay %s", log)
	}
	rc, err := openRecording(spec, builtin)
	if err != nil {
		return nil, "", nil, err
	}
	defer rc.Close()
	rp, err := NewReplay(spec, rc, speed, o)
	if err != nil {
		return nil, "", nil, err
	}
	return rp, spec, nil, nil
}

// openRecording opens a recording file, or one of builtin's by name.
func openRecording(name string, builtin Builtin) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err == nil {
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, nothing(name, "it is a directory; name a recording in it")
		}
		return f, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if builtin.Open != nil && slices.Contains(builtin.Names, name) {
		return builtin.Open(name)
	}
	return nil, fmt.Errorf("%q: %w, and not a built-in fixture (%s)", name, os.ErrNotExist, strings.Join(builtin.Names, ", "))
}

// openMetricLogs opens the Sentinel metric logs of spec: each PATH or
// PATH@INSTANCE of specs, grouped into the processes that wrote them.
func openMetricLogs(spec string, specs []string, speed float64, o ReplayOptions) (*Replay, string, []metriclog.Collision, error) {
	for _, s := range specs {
		p := metricLogPath(s)
		if log, ok := metriclog.IndexOf(p); ok {
			return nil, "", nil, nothing(p, "it is the index of a Sentinel metric log, not the log: replay %s", log)
		}
		if !isMetricLog(p) {
			return nil, "", nil, &SpecError{fmt.Errorf("%q: %s is not a Sentinel metric log like %s", spec, p, metricLogPath(specs[0]))}
		}
	}
	srcs, err := metriclog.Group(specs)
	if err != nil {
		return nil, "", nil, &SpecError{fmt.Errorf("%q: %w", spec, err)}
	}
	r := metriclog.ConvertSources(srcs)
	if len(r.Messages) == 0 {
		if len(r.Errors) > 0 {
			return nil, "", nil, nothing(spec, "no usable line: %w", r.Errors[0])
		}
		return nil, "", nil, nothing(spec, "it holds no metric lines")
	}
	rp, err := NewReplayMessages(spec, r.Messages, r.Errors, speed, o)
	if err != nil {
		return nil, "", nil, err
	}
	return rp, spec, r.Collisions, nil
}

// metricLogPath is the path of a metric log spec, PATH or PATH@INSTANCE.
func metricLogPath(spec string) string {
	p, _ := metriclog.SplitSpec(spec)
	return p
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

// Replayable says, once the replay started, whether it holds anything to
// replay, and if not why, in one line: a dashboard or a report of nothing
// would look like a quiet fleet.
func (r *Replay) Replayable() error {
	if r.Messages() > 0 {
		return nil
	}
	n, place, err := r.Rejects()
	if n == 0 {
		return nothing(r.name, "it holds no messages")
	}
	return nothing(r.name, "%d %s rejected, the first at %s: %w", n, english.Plural(n, "line", "lines"), place, err)
}
