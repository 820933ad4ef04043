package cliflag

import (
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"now", now},
		{"2026-03-01T10:00:00Z", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		{"2026-03-01T11:00:00+01:00", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		{"2026-03-01T13:00:00Z", time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)}, // after now: the caller's to judge
		{"-30m", now.Add(-30 * time.Minute)},
		{"-1h30m", now.Add(-90 * time.Minute)},
		{"-1s", now.Add(-time.Second)},
	} {
		got, err := ParseWhen(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseWhen(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	const want = `: want RFC 3339 (2026-03-01T10:00:00Z), now, or a time before now such as -30m`
	for _, in := range []string{
		"", "30m", "+30m", "1h30m", "-0s", "-5", "-", "--30m", "Now", "yesterday",
		"2026-03-01", "2026-03-01 10:00:00", "-2026-03-01T10:00:00Z",
	} {
		got, err := ParseWhen(in, now)
		if err == nil {
			t.Errorf("ParseWhen(%q) = %v, want an error", in, got)
			continue
		}
		if msg := err.Error(); msg != `"`+in+`"`+want {
			t.Errorf("ParseWhen(%q): %q, want %q", in, msg, `"`+in+`"`+want)
		}
		if !got.IsZero() {
			t.Errorf("ParseWhen(%q) = %v with its error, want the zero time", in, got)
		}
	}
}

// TestDuration: the flag sets the duration and says it was given; a value
// it refuses leaves both as they were, with time's own error.
func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    time.Duration
		set     bool
		wantErr string
	}{
		{nil, 15 * time.Second, false, ""},
		{[]string{"--step", "5s"}, 5 * time.Second, true, ""},
		{[]string{"-step=1m30s"}, 90 * time.Second, true, ""},
		{[]string{"--step", "15s"}, 15 * time.Second, true, ""}, // the default, given
		{[]string{"--step", "0"}, 0, true, ""},
		{[]string{"--step", "abc"}, 15 * time.Second, false, `invalid value "abc" for flag -step: time: invalid duration "abc"`},
		{[]string{"--step", "5"}, 15 * time.Second, false, `invalid value "5" for flag -step: time: missing unit in duration "5"`},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		d, set := 15*time.Second, false
		fs.Var(Duration(&d, &set), "step", "")
		err := fs.Parse(tc.args)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.wantErr)
		}
		if d != tc.want || set != tc.set {
			t.Errorf("%q: %s, given %t; want %s, %t", tc.args, d, set, tc.want, tc.set)
		}
	}
	d := time.Second
	if err := Duration(&d, nil).Set("2s"); err != nil || d != 2*time.Second {
		t.Errorf("without set: %s, %v", d, err)
	}
}

// TestDurationUsage: the usage shows a default as flag.Duration's does
// (none when it is zero), with the name the usage gives the value.
func TestDurationUsage(t *testing.T) {
	for _, tc := range []struct {
		def  time.Duration
		want string
	}{
		{15 * time.Second, "  -step duration\n    \ta `duration` step (default 15s)\n"},
		{0, "  -step duration\n    \ta `duration` step\n"},
	} {
		tc.want = strings.ReplaceAll(tc.want, "`", "")
		for _, own := range []bool{true, false} {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			var b strings.Builder
			fs.SetOutput(&b)
			d := tc.def
			if own {
				fs.Var(Duration(&d, nil), "step", "a `duration` step")
			} else {
				fs.DurationVar(&d, "step", tc.def, "a `duration` step")
			}
			fs.PrintDefaults()
			if b.String() != tc.want {
				t.Errorf("default %s, Duration %t:\n%q\nwant\n%q", tc.def, own, b.String(), tc.want)
			}
		}
	}
}

func TestParseSpeed(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{in: "max", want: 0},
		{in: "1", want: 1},
		{in: "0.5", want: 0.5},
		{in: "10", want: 10},
		{in: "10000", want: 10000},
		{in: "1e3", want: 1000},
		{in: "0", err: true},
		{in: "-2", err: true},
		{in: "10000.5", err: true},
		{in: "NaN", err: true},
		{in: "Inf", err: true},
		{in: "", err: true},
		{in: "Max", err: true},
		{in: "2x", err: true},
	} {
		got, err := ParseSpeed(tc.in)
		if !tc.err {
			if err != nil || got != tc.want {
				t.Errorf("ParseSpeed(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if want := strconv.Quote(tc.in) + ": want a factor in (0, 10000] or max"; err == nil || err.Error() != want || got != 0 {
			t.Errorf("ParseSpeed(%q) = %v, %v; want the error %q", tc.in, got, err, want)
		}
	}
}
