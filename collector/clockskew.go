package collector

import (
	"fmt"
	"slices"
)

// An instance's clock offset is the least arrival-minus-ts of its recent
// buckets messages (instance.observeOffset): network delay and backlog
// only add to it. Off by more than its bucket length, it is warned about
// as that instance's clock. But when most of a fleet is off the same
// way, the odd one out is the collector: its own clock is wrong, or it is
// reading late (starved of CPU, or behind a backlog), which delays every
// message alike and reads as every clock being behind. A warning per
// instance would blame thousands of correct clocks and bury the cause, so
// the fleet gets one warning instead.

// fleetSkewMin is the least number of instances off the same way that
// are taken as the collector being off; they must also be at least three
// quarters of the instances measured (those with an offset).
const fleetSkewMin = 3

// skewed is an instance off by more than its bucket length.
type skewed struct {
	name string
	off  int64 // ms; > 0: messages arrive after their ts (behind)
}

// clockWarnings words the clock skew of a snapshot: skews are the
// instances off, of measured instances with an offset. When enough are
// off the same way, they are one warning about the collector; those off
// the other way are still warned about one by one.
func clockWarnings(skews []skewed, measured int) []string {
	if len(skews) == 0 {
		return nil
	}
	var out []string
	fleet := 0 // the way the collector is off: 1 behind, -1 ahead, 0 not
	// The cause first: a status line shows as much of a warning as fits.
	for _, side := range []struct {
		sign         int
		cause, words string
	}{
		{1, "the collector reads late or its clock is ahead", "after"},
		{-1, "the collector's clock is behind", "before"},
	} {
		var offs []int64
		for _, s := range skews {
			if sign(s.off) == side.sign {
				offs = append(offs, s.off*int64(side.sign))
			}
		}
		if n := len(offs); n >= fleetSkewMin && 4*n >= 3*measured {
			slices.Sort(offs)
			out = append(out, fmt.Sprintf("%s: messages of %d of %d instances arrive %.1f-%.1f s %s their timestamps (median %.1f s)",
				side.cause, n, measured, secs(offs[0]), secs(offs[n-1]), side.words, secs(offs[n/2])))
			fleet = side.sign
			break
		}
	}
	for _, s := range skews {
		if sign(s.off) == fleet {
			continue
		}
		dir, off := "behind", s.off
		if off < 0 {
			dir, off = "ahead of", -off
		}
		out = append(out, fmt.Sprintf("clock of %s is %.1f s %s the collector's", s.name, secs(off), dir))
	}
	return out
}

func sign(v int64) int {
	if v < 0 {
		return -1
	}
	return 1
}

func secs(ms int64) float64 { return float64(ms) / 1000 }
