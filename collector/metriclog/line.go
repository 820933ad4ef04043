package metriclog

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// BucketMs is the length of the buckets the metric format counts: one second.
const BucketMs = 1000

// The pseudo resources Sentinel writes beside the real ones.
const (
	TotalInbound = "__total_inbound_traffic__" // every inbound entry, summed
	CPUUsage     = "__cpu_usage__"             // passQps is the CPU usage x 10000
	SystemLoad   = "__system_load__"           // passQps is the load average x 10000
)

// MaxLineBytes bounds one line; longer lines are errors.
const MaxLineBytes = 64 << 10

// Line is one resource's counts for one second.
type Line struct {
	// Timestamp is the second, Unix ms (a multiple of 1000 as Sentinel
	// writes it; Item floors it when it is not).
	Timestamp int64
	// Resource is the name as written: every "|" already replaced by "_".
	Resource string
	// Pass and Block count entries admitted and rejected.
	Pass, Block int64
	// Success counts completions, Exception those that ended in an error.
	Success, Exception int64
	// Rt is the average response time of the second's completions, ms.
	Rt int64
	// OccupiedPass counts entries admitted against a future window.
	OccupiedPass int64
	// Concurrency is the number of entries in flight.
	Concurrency int64
	// Classification is the resource type (0 common, 1 web, 2 RPC, ...).
	Classification int64
}

// Internal reports whether resource is one of the pseudo resources
// Sentinel writes beside real ones.
func Internal(resource string) bool {
	switch resource {
	case TotalInbound, CPUUsage, SystemLoad:
		return true
	}
	return false
}

// LegalName maps a resource name as Sentinel does before writing it: every
// "|" becomes "_". Rules name resources unmapped; statistics, mapped.
func LegalName(resource string) string {
	return strings.ReplaceAll(resource, "|", "_")
}

// The fields after the resource, in order; the first five are required.
var countNames = [...]string{"passQps", "blockQps", "successQps", "exceptionQps", "rt",
	"occupiedPassQps", "concurrency", "classification"}

const requiredCounts = 5

// ParseThin parses a line of the transport API's /metric answer:
// timestamp|resource|passQps|blockQps|successQps|exceptionQps|rt[|occupiedPassQps[|concurrency[|classification]]].
func ParseThin(s string) (Line, error) { return parse(s, false) }

// ParseFat parses a metric log line:
// timestamp|yyyy-MM-dd HH:mm:ss|resource|passQps|blockQps|successQps|exceptionQps|rt[|occupiedPassQps[|concurrency[|classification]]].
// The date-time field must be there; its value is not used (it is the
// writer's local time of timestamp).
func ParseFat(s string) (Line, error) { return parse(s, true) }

func parse(s string, fat bool) (Line, error) {
	var l Line
	s = strings.TrimSuffix(s, "\r")
	if len(s) > MaxLineBytes {
		return l, fmt.Errorf("%w: line of %d bytes exceeds %d", wire.ErrTooLarge, len(s), MaxLineBytes)
	}
	if s == "" {
		return l, fmt.Errorf("%w: empty line", wire.ErrMalformed)
	}
	var buf [maxFields]string
	fields := splitFields(s, buf[:0])
	want := 2 + requiredCounts
	if fat {
		want++
	}
	if len(fields) < want {
		return l, fmt.Errorf("%w: %d fields, want at least %d (%s)", wire.ErrMalformed, len(fields), want, layout(fat))
	}
	ts, err := number(fields[0], "timestamp")
	if err != nil {
		return l, err
	}
	if ts > wire.MaxTimeMs {
		return l, fmt.Errorf("%w: timestamp %d is not a Unix millisecond time", wire.ErrMalformed, ts)
	}
	l.Timestamp = ts
	i := 1
	if fat {
		i++ // the date-time: informative only
	}
	res := fields[i]
	i++
	if !utf8.ValidString(res) {
		// Before the length check: a replacement can be longer than the
		// bytes it replaces.
		res = strings.ToValidUTF8(res, "\uFFFD")
	}
	switch {
	case res == "":
		return l, fmt.Errorf("%w: empty resource name", wire.ErrMalformed)
	case len(res) > wire.DefaultMaxNameBytes:
		return l, fmt.Errorf("%w: resource name of %d bytes exceeds %d", wire.ErrNameTooLong, len(res), wire.DefaultMaxNameBytes)
	}
	l.Resource = res
	dst := [...]*int64{&l.Pass, &l.Block, &l.Success, &l.Exception, &l.Rt, &l.OccupiedPass, &l.Concurrency, &l.Classification}
	for k := 0; k < len(dst) && i+k < len(fields); k++ {
		f := fields[i+k]
		switch countNames[k] {
		case "classification":
			// Any int32 in Sentinel; not used here.
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				return l, fmt.Errorf("%w: classification %s is not an integer", wire.ErrMalformed, clip(f))
			}
			*dst[k] = v
		case "concurrency":
			// A racing counter can read below zero for a moment.
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return l, fmt.Errorf("%w: concurrency %s is not an integer", wire.ErrMalformed, clip(f))
			}
			*dst[k] = max(v, 0)
		default:
			v, err := number(f, countNames[k])
			if err != nil {
				return l, err
			}
			*dst[k] = v
		}
	}
	if l.Success > 0 && l.Rt > math.MaxInt64/l.Success {
		return l, fmt.Errorf("%w: rt %d x successQps %d overflows", wire.ErrMalformed, l.Rt, l.Success)
	}
	return l, nil
}

// maxFields is the most fields a line has that are read; more are ignored.
const maxFields = 3 + len(countNames)

// splitFields splits s at "|" into dst, up to cap(dst) fields; the rest of
// the line is dropped.
func splitFields(s string, dst []string) []string {
	for len(dst) < cap(dst) {
		f, rest, found := strings.Cut(s, "|")
		dst = append(dst, f)
		if !found {
			break
		}
		s = rest
	}
	return dst
}

func layout(fat bool) string {
	if fat {
		return "timestamp|date time|resource|passQps|blockQps|successQps|exceptionQps|rt|..."
	}
	return "timestamp|resource|passQps|blockQps|successQps|exceptionQps|rt|..."
}

// number parses a non-negative decimal integer field.
func number(f, name string) (int64, error) {
	v, err := strconv.ParseInt(f, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: %s %s is not a non-negative integer", wire.ErrMalformed, name, clip(f))
	}
	return v, nil
}

// clip quotes a field for an error message, at most 32 bytes of it.
func clip(f string) string {
	if len(f) <= 32 {
		return strconv.Quote(f)
	}
	cut := 32
	for cut > 0 && !utf8.RuneStart(f[cut]) {
		cut--
	}
	return strconv.Quote(f[:cut]) + "..."
}

// Item maps the line to a wire v1 bucket item of BucketMs; the item always
// passes wire validation. See the package documentation for the mapping.
func (l *Line) Item() wire.BucketItem {
	ts := max(l.Timestamp, 0)
	it := wire.BucketItem{
		Resource: l.Resource,
		Start:    ts - ts%BucketMs,
		Metrics:  core.Metrics{Pass: max(l.Pass, 0), Block: max(l.Block, 0), Complete: max(l.Success, 0), Concurrency: max(l.Concurrency, 0)},
	}
	it.Error = min(max(l.Exception, 0), it.Complete)
	if rt := l.Rt; it.Complete > 0 && rt > 0 {
		it.RtMin, it.RtMax = rt, rt
		if rt > math.MaxInt64/it.Complete {
			it.RtSum = math.MaxInt64
		} else {
			it.RtSum = rt * it.Complete
		}
	}
	return it
}

// Merge sums the items of one second that name the same resource, as
// Sentinel's dashboard does with lines whose names met when "|" was
// written as "_". items must be sorted by start, then resource; the
// merged items are written over them. collided lists one item per merge
// (its resource and start).
func Merge(items []wire.BucketItem) (merged []wire.BucketItem, collided []wire.BucketItem) {
	merged = items[:0]
	for i := range items {
		it := items[i]
		if n := len(merged); n > 0 && merged[n-1].Start == it.Start && merged[n-1].Resource == it.Resource {
			m := &merged[n-1]
			if len(collided) == 0 || collided[len(collided)-1].Start != it.Start || collided[len(collided)-1].Resource != it.Resource {
				collided = append(collided, wire.BucketItem{Resource: it.Resource, Start: it.Start})
			}
			switch {
			case m.Complete == 0:
				m.RtMin, m.RtMax = it.RtMin, it.RtMax
			case it.Complete > 0:
				m.RtMin, m.RtMax = min(m.RtMin, it.RtMin), max(m.RtMax, it.RtMax)
			}
			m.Pass, m.Block = satAdd(m.Pass, it.Pass), satAdd(m.Block, it.Block)
			m.Complete, m.Error = satAdd(m.Complete, it.Complete), satAdd(m.Error, it.Error)
			m.Concurrency = satAdd(m.Concurrency, it.Concurrency)
			m.RtSum = satAdd(m.RtSum, it.RtSum)
			continue
		}
		merged = append(merged, it)
	}
	return merged, collided
}

// satAdd adds two counts, saturating at MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
