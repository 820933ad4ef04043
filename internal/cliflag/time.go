package cliflag

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseWhen reads a point in time: RFC 3339 (2026-03-01T10:00:00Z),
// "now", or a negative duration before now ("-30m", "-1h30m"). A
// duration that is not negative, or anything else, is refused with an
// error saying what is wanted.
func ParseWhen(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if strings.HasPrefix(s, "-") {
		if d, err := time.ParseDuration(s); err == nil && d < 0 {
			return now.Add(d), nil
		}
	} else if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-03-01T10:00:00Z), now, or a time before now such as -30m", s)
}

// Duration is a flag setting *p to a duration (time.ParseDuration) and
// *set to true once it is given, so that a flag that goes with another
// one can be told given from left at its default. set may be nil. Its
// default shows in the usage as flag.Duration's does.
func Duration(p *time.Duration, set *bool) flag.Value { return durationValue{p, set} }

type durationValue struct {
	p   *time.Duration
	set *bool
}

func (v durationValue) String() string {
	if v.p == nil { // the flag package's zero value, to tell a default
		return time.Duration(0).String()
	}
	return v.p.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.p = d
	if v.set != nil {
		*v.set = true
	}
	return nil
}

// ParseSpeed reads a replay's speed: a factor in (0, 10000], 1 being real
// time, or "max", as fast as possible, which is 0.
func ParseSpeed(s string) (float64, error) {
	if s == "max" {
		return 0, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || !(x > 0 && x <= 10000) { // NaN too
		return 0, fmt.Errorf("%q: want a factor in (0, 10000] or max", s)
	}
	return x, nil
}
