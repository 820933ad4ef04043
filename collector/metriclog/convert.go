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

	"github.com/sentinel-top/sentinel-top/core/wire"
)

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

// Convert reads a whole metric log (gzip-compressed or not) named name and
// returns it as wire messages: a hello for instance of app (both from
// Identify(name) when empty), then one buckets message per second, in time
// order, each stamped with its bucket's end. Lines of the same second are
// merged into one message, whatever their order in the file. Pseudo
// resources (Internal) are skipped. Every line that cannot be used is a
// *wire.LineError (file:line) in errs, and reading goes on; an I/O error
// ends the reading, reported the same way. A file without a usable line
// gives no messages.
func Convert(r io.Reader, name, app, instance string) (msgs []wire.Message, errs []error) {
	if app == "" || instance == "" {
		a, in := Identify(name)
		app, instance = cmp.Or(app, a), cmp.Or(instance, in)
	}
	var cv converter
	cv.read(r, name)
	return cv.messages(app, instance), cv.report()
}

// ConvertFiles is Convert over the files of one instance's metric log, a
// day's file and its rotations (as a shell glob gives them, in any order):
// they are read in the order they were written (SortFiles) and make one
// stream with one hello. app and instance default to Identify of the first
// file.
func ConvertFiles(paths []string, app, instance string) (msgs []wire.Message, errs []error) {
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
	return cv.messages(app, instance), cv.report()
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

// messages turns the items into a hello and one buckets message per second.
func (cv *converter) messages(app, instance string) []wire.Message {
	items := cv.items
	if len(items) == 0 {
		return nil
	}
	slices.SortStableFunc(items, func(a, b wire.BucketItem) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), strings.Compare(a.Resource, b.Resource))
	})
	msgs := []wire.Message{&wire.Hello{
		Header:   wire.Header{Ts: items[0].Start, Instance: instance},
		App:      app,
		SDK:      SDK,
		BucketMs: BucketMs,
	}}
	for len(items) > 0 {
		k := 1
		for k < len(items) && k < wire.DefaultMaxItems && items[k].Start == items[0].Start {
			k++
		}
		msgs = append(msgs, &wire.Buckets{
			Header:   wire.Header{Ts: items[0].Start + BucketMs, Instance: instance},
			BucketMs: BucketMs,
			Items:    items[:k:k],
		})
		items = items[k:]
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
