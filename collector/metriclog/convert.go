package metriclog

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// idleSeconds is how many seconds without a line the inference is told of
// in a row: enough for what waits on silence (a probe without traffic
// after it).
const idleSeconds = 5

// SDK is the hello's sdk of a converted metric log.
const SDK = "sentinel-metric-log"

// Bounds of Convert: a day of a busy service is millions of lines.
const (
	// MaxItems is the most lines one Convert keeps; the rest of the file is
	// reported as one error.
	MaxItems = 5_000_000
	// MaxErrors is the most bad lines reported one by one; the others are
	// summed up in one last error.
	MaxErrors = 10_000
)

// fileName matches the names both writers give metric logs:
// APP-metrics.log[.pidPID].yyyy-MM-dd[.N] (APP with "." replaced by "-").
var fileName = regexp.MustCompile(`^(.*)-metrics\.log(?:\.pid([0-9]+))?\.([0-9]{4}-[0-9]{2}-[0-9]{2})(?:\.([0-9]+))?$`)

// ParseFileName reads a metric log's name (any directory is ignored, as is a
// ".gz" suffix): the app as written (its dots were replaced by "-"), the
// pid when the writer put it in the name (0 otherwise), and the date.
func ParseFileName(name string) (app string, pid int, date string, ok bool) {
	base := strings.TrimSuffix(filepath.Base(name), ".gz")
	m := fileName.FindStringSubmatch(base)
	if m == nil {
		return "", 0, "", false
	}
	if m[2] != "" {
		p, err := strconv.Atoi(m[2])
		if err != nil {
			return "", 0, "", false
		}
		pid = p
	}
	return m[1], pid, m[3], true
}

// Identify names the app and instance of a metric log from its file name:
// the app part of the name (or "sentinel" when there is none), and the app
// with "-pidPID" when the name carries a pid.
func Identify(name string) (app, instance string) {
	app, pid, _, ok := ParseFileName(name)
	if !ok || app == "" {
		app = "sentinel"
	}
	instance = app
	if pid > 0 {
		instance = app + "-pid" + strconv.Itoa(pid)
	}
	return app, instance
}

// Detect tells whether a file is a metric log rather than an NDJSON
// recording, from its name (see ParseFileName; index files *.idx and lock
// files *.lck are not) or else from head, the file's first bytes: its first
// non-blank line must parse as a metric log line. head may be gzip data.
func Detect(name string, head []byte) bool {
	base := filepath.Base(name)
	if strings.HasSuffix(base, ".idx") || strings.HasSuffix(base, ".lck") {
		return false
	}
	if _, _, _, ok := ParseFileName(base); ok {
		return true
	}
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(head))
		if err != nil {
			return false
		}
		plain, _ := io.ReadAll(io.LimitReader(zr, MaxLineBytes+1))
		head = plain
	}
	for len(head) > 0 {
		line, rest, _ := bytes.Cut(head, []byte{'\n'})
		head = rest
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] == '{' {
			return false
		}
		_, err := ParseFat(string(line))
		return err == nil
	}
	return false
}

// Result is what a conversion gives.
type Result struct {
	// Messages are, for each instance, a hello, then one buckets message per
	// second, each stamped with its bucket's end and followed by the
	// breaker transitions that second let the Inference decide (stamped
	// with their own, earlier, seconds); instances are interleaved in that
	// order.
	Messages []wire.Message
	// Errors are the lines that could not be used, each a *wire.LineError
	// (file:line).
	Errors []error
	// Collisions are the resource names that several lines of one second
	// carried (their counts were summed), once per instance and name.
	Collisions []Collision
}

// Collision is a resource name written on several lines of one second by
// one process: Java Sentinel writes "|" as "_", so "a|b" and "a_b" both
// come out as "a_b". The lines are summed, as Sentinel's dashboard does.
type Collision struct {
	Instance, Resource string
	// First is the first second it happened, Unix ms; Seconds counts the
	// seconds it happened in.
	First   int64
	Seconds int
}

func (c Collision) String() string {
	return fmt.Sprintf("%s: several lines a second named %q, summed (a \"|\" in a name is written \"_\"): %d %s from %s",
		c.Instance, c.Resource, c.Seconds, plural(c.Seconds, "second", "seconds"),
		time.UnixMilli(c.First).UTC().Format("2006-01-02 15:04:05 UTC"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Convert reads a whole metric log (gzip-compressed or not) named name and
// returns it as wire messages of instance of app (both from Identify(name)
// when empty). Lines of the same second are merged into one message,
// whatever their order in the file, and lines of one second naming the
// same resource are summed. Pseudo resources (Internal) are skipped. Every
// line that cannot be used is an error, and reading goes on; an I/O error
// ends the reading, reported the same way. A file without a usable line
// gives no messages.
func Convert(r io.Reader, name, app, instance string) Result {
	if app == "" || instance == "" {
		a, in := Identify(name)
		app, instance = cmp.Or(app, a), cmp.Or(instance, in)
	}
	var cv converter
	cv.read(r, name)
	return cv.result(app, instance)
}

// ConvertFiles is Convert over the files of one instance's metric log, a
// day's file and its rotations (as a shell glob gives them, in any order):
// they are read in the order they were written (SortFiles) and make one
// stream with one hello. app and instance default to Identify of the first
// file.
func ConvertFiles(paths []string, app, instance string) Result {
	paths = slices.Clone(paths)
	SortFiles(paths)
	if len(paths) > 0 && (app == "" || instance == "") {
		a, in := Identify(paths[0])
		app, instance = cmp.Or(app, a), cmp.Or(instance, in)
	}
	var cv converter
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			cv.errs = append(cv.errs, &wire.LineError{Pos: wire.Pos{File: p, Line: 1}, Err: err})
			continue
		}
		cv.read(f, p)
		f.Close()
	}
	return cv.result(app, instance)
}

// ConvertSources converts the metric logs of several processes (see
// Group), each its own instance, into one stream in time order.
func ConvertSources(srcs []Source) Result {
	var out Result
	var streams [][]wire.Message
	for _, src := range srcs {
		r := ConvertFiles(src.Paths, src.App, src.Instance)
		streams = append(streams, r.Messages)
		out.Errors = append(out.Errors, r.Errors...)
		out.Collisions = append(out.Collisions, r.Collisions...)
	}
	out.Messages = interleave(streams)
	return out
}

// interleave merges streams by the time each message was known: a hello's
// or buckets message's ts, and for a transition the ts of the buckets
// message before it. Ties keep the streams' order.
func interleave(streams [][]wire.Message) []wire.Message {
	if len(streams) == 1 {
		return streams[0]
	}
	type keyed struct {
		at     int64
		stream int
		m      wire.Message
	}
	var all []keyed
	for i, s := range streams {
		at := int64(0)
		for _, m := range s {
			if _, isState := m.(*wire.State); !isState {
				at = m.Head().Ts
			}
			all = append(all, keyed{at, i, m})
		}
	}
	slices.SortStableFunc(all, func(a, b keyed) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.stream, b.stream)) })
	out := make([]wire.Message, len(all))
	for i, k := range all {
		out[i] = k.m
	}
	return out
}

// SortFiles orders metric log names as their writer created them: by
// date, then the day's first file before its rotations .1, .2, ...; names
// that are not metric logs keep their order, after the others.
func SortFiles(names []string) {
	key := func(name string) (date string, n int, ok bool) {
		_, _, date, ok = ParseFileName(name)
		if !ok {
			return "", 0, false
		}
		m := fileName.FindStringSubmatch(strings.TrimSuffix(filepath.Base(name), ".gz"))
		n, _ = strconv.Atoi(m[4])
		return date, n, true
	}
	slices.SortStableFunc(names, func(a, b string) int {
		da, na, oka := key(a)
		db, nb, okb := key(b)
		switch {
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		case !oka:
			return 0
		}
		return cmp.Or(cmp.Compare(da, db), cmp.Compare(na, nb))
	})
}

// converter gathers the items of one or more files.
type converter struct {
	items          []wire.BucketItem
	errs           []error
	dropped, extra int
	last           wire.Pos
}

func (cv *converter) fail(pos wire.Pos, err error) {
	if len(cv.errs) < MaxErrors {
		cv.errs = append(cv.errs, &wire.LineError{Pos: pos, Err: err})
	} else {
		cv.extra++
	}
}

// read adds the lines of one file.
func (cv *converter) read(r io.Reader, name string) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			cv.fail(wire.Pos{File: name, Line: 1}, err)
			return
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	n := 0
	for {
		raw, long, err := readLine(br)
		if len(raw) > 0 || long || err == nil {
			n++
		}
		pos := wire.Pos{File: name, Line: n}
		switch {
		case long:
			cv.fail(pos, fmt.Errorf("%w: line longer than %d bytes", wire.ErrTooLarge, MaxLineBytes))
		case len(bytes.TrimSpace(raw)) == 0:
			// blank lines carry nothing
		case len(cv.items) >= MaxItems:
			cv.dropped++
		default:
			l, perr := ParseFat(string(raw))
			switch {
			case perr != nil:
				cv.fail(pos, perr)
			case !Internal(l.Resource):
				cv.items = append(cv.items, l.Item())
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				cv.fail(wire.Pos{File: name, Line: max(n, 1)}, fmt.Errorf("reading: %w", err))
			}
			break
		}
	}
	cv.last = wire.Pos{File: name, Line: max(n, 1)}
}

// report returns the errors, with the summaries of what was not listed.
func (cv *converter) report() []error {
	errs := cv.errs
	if cv.dropped > 0 {
		errs = append(errs, &wire.LineError{Pos: cv.last,
			Err: fmt.Errorf("%w: %d more lines after the first %d not read: split the input", wire.ErrTooLarge, cv.dropped, MaxItems)})
	}
	if cv.extra > 0 {
		errs = append(errs, &wire.LineError{Pos: cv.last, Err: fmt.Errorf("%w: and %d more bad lines", wire.ErrMalformed, cv.extra)})
	}
	return errs
}

// result turns the items into a hello and one buckets message per second,
// lines of a second naming one resource summed, each followed by the
// transitions the Inference decided from it; and the errors and collisions.
func (cv *converter) result(app, instance string) Result {
	r := Result{Errors: cv.report()}
	items := cv.items
	if len(items) == 0 {
		return r
	}
	slices.SortStableFunc(items, func(a, b wire.BucketItem) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), strings.Compare(a.Resource, b.Resource))
	})
	items, collided := Merge(items)
	r.Messages = []wire.Message{&wire.Hello{
		Header:   wire.Header{Ts: items[0].Start, Instance: instance},
		App:      app,
		SDK:      SDK,
		BucketMs: BucketMs,
	}}
	byName := map[string]int{}
	for _, c := range collided {
		if i, ok := byName[c.Resource]; ok {
			r.Collisions[i].Seconds++
			continue
		}
		byName[c.Resource] = len(r.Collisions)
		r.Collisions = append(r.Collisions, Collision{Instance: instance, Resource: c.Resource, First: c.Start, Seconds: 1})
	}
	inf := NewInference(instance)
	for len(items) > 0 {
		k := 1
		for k < len(items) && items[k].Start == items[0].Start {
			k++
		}
		second := items[:k:k]
		// The seconds without a line: a few settle what waited for them.
		// The bound is taken before the loop, as feeding a second moves
		// Last: a line years later must not make a loop over every second
		// in between.
		if last := inf.Last(); last != 0 {
			for s, end := last+BucketMs, min(second[0].Start, last+idleSeconds*BucketMs); s < end; s += BucketMs {
				r.Messages = appendStates(r.Messages, inf.Second(s, nil))
			}
		}
		for rest := second; len(rest) > 0; {
			n := min(len(rest), wire.DefaultMaxItems)
			r.Messages = append(r.Messages, &wire.Buckets{
				Header:   wire.Header{Ts: second[0].Start + BucketMs, Instance: instance},
				BucketMs: BucketMs,
				Items:    rest[:n:n],
			})
			rest = rest[n:]
		}
		r.Messages = appendStates(r.Messages, inf.Second(second[0].Start, second))
		items = items[k:]
	}
	return r
}

func appendStates(msgs []wire.Message, states []*wire.State) []wire.Message {
	for _, s := range states {
		msgs = append(msgs, s)
	}
	return msgs
}

// readLine returns the next line without its "\n"; long is set (and the
// line skipped) when it exceeds MaxLineBytes. err is io.EOF after the last
// line.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = true
			line = nil
			continue
		}
		if long {
			return nil, true, err
		}
		line = bytes.TrimSuffix(chunk, []byte{'\n'})
		if len(line) > MaxLineBytes {
			return nil, true, err
		}
		return line, false, err
	}
}
