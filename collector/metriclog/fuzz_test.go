package metriclog

import (
	"errors"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

var fuzzSeeds = []string{
	"1764460800000|2025-11-30 00:00:00|GET:/api_v2|10|1|9|1|20|0|2|1",
	"1764460800000|2025-11-30 00:00:00|db|5|0|5|0|3",
	"1764460800000|__cpu_usage__|3100|0|0|0|0|0|0|0",
	"1764460800000|db|5|0|5|0|3",
	"1764460800000|2025-11-30 00:00:00|x|1|0|9|0|9223372036854775807",
	"1764460800000|2025-11-30 00:00:00||1|0|1|0|1",
	"-1|x|||||",
	"||||||||||||||",
	"1764460800000|\xff\xfe|1|0|1|0|1|0|-7|-2147483648",
	"",
	"1764460800000|2025-11-30 00:00:00|" + strings.Repeat("\xffa", 500) + "|1|0|1|0|1",
}

// checkParsed requires a parsed line to make a valid wire item and a failed
// one to say why with a known error class.
func checkParsed(t *testing.T, l Line, err error) {
	if err != nil {
		if !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrTooLarge) {
			t.Fatalf("unclassified error %v", err)
		}
		return
	}
	it := l.Item()
	b := &wire.Buckets{Header: wire.Header{Ts: it.Start + BucketMs, Instance: "i"}, BucketMs: BucketMs, Items: []wire.BucketItem{it}}
	if err := wire.Validate(b, wire.Limits{}); err != nil {
		t.Fatalf("%+v gave an invalid item: %v", l, err)
	}
}

// FuzzParseFat: the metric log line parser never panics, and what it
// accepts maps to a valid wire bucket item.
func FuzzParseFat(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseFat(s)
		checkParsed(t, l, err)
	})
}

// FuzzParseThin: the same for the lines of Java Sentinel's /metric answer.
func FuzzParseThin(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseThin(s)
		checkParsed(t, l, err)
	})
}

// FuzzConvert: a whole file never panics Convert, every message it returns
// is valid, and every error has a file:line.
func FuzzConvert(f *testing.F) {
	f.Add(sampleLog)
	f.Add(strings.Join(fuzzSeeds, "\n"))
	f.Add("\x1f\x8b\x08")
	f.Fuzz(func(t *testing.T, s string) {
		msgs, errs := split(Convert(strings.NewReader(s), "f", "", ""))
		for _, m := range msgs {
			if err := wire.Validate(m, wire.Limits{}); err != nil {
				t.Fatalf("%+v: %v", m, err)
			}
		}
		for _, err := range errs {
			var le *wire.LineError
			if !errors.As(err, &le) || le.Pos.File != "f" || le.Pos.Line < 1 {
				t.Fatalf("error without a place: %v", err)
			}
		}
	})
}
