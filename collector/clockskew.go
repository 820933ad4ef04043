package collector

import "slices"

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

// clockWarnings judges the clock skew of a snapshot: skews are the
// instances off, of measured instances with an offset. When enough are
// off the same way, they are one warning about the collector; those off
// the other way are still warned about one by one.
func clockWarnings(skews []skewed, measured int) []Warning {
	if len(skews) == 0 {
		return nil
	}
	var out []Warning
	fleet := 0 // the way the collector is off: 1 behind, -1 ahead, 0 not
	// The collector first: a status line shows the first warning.
	for _, side := range []int{1, -1} {
		var offs []int64
		for _, s := range skews {
			if sign(s.off) == side {
				offs = append(offs, s.off*int64(side))
			}
		}
		if n := len(offs); n >= fleetSkewMin && 4*n >= 3*measured {
			slices.Sort(offs)
			out = append(out, CollectorClock{Late: side > 0, Instances: n, Measured: measured,
				MinMs: offs[0], MedianMs: offs[n/2], MaxMs: offs[n-1]})
			fleet = side
			break
		}
	}
	for _, s := range skews {
		if sign(s.off) == fleet {
			continue
		}
		out = append(out, ClockSkew{Instance: s.name, OffsetMs: s.off})
	}
	return out
}

func sign(v int64) int {
	if v < 0 {
		return -1
	}
	return 1
}
