package collector

import (
	"fmt"
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// startsWithin checks the bucket starts of m (when it is a buckets
// message) as the collector checks a dialed target's ts: a start further
// than skew ms from the message's own ts is not believable from any source
// (a bucket is sent after it closes, and a reconnect re-sends 60 s), and a
// dialed target's (live: true) must also be within skew of the
// collector's clock, now. One such item refuses the message, as one
// invalid item refuses a frame: nil when all are within, or skew is not
// positive (no check).
func startsWithin(m wire.Message, skew int64, live bool, now int64) error {
	b, ok := m.(*wire.Buckets)
	if !ok || skew <= 0 {
		return nil
	}
	for i := range b.Items {
		start := b.Items[i].Start
		if d := start - b.Ts; d > skew || -d > skew {
			return fmt.Errorf("items[%d].start %d is %s the message's ts %d", i, start, skewText(d), b.Ts)
		}
		if d := start - now; live && (d > skew || -d > skew) {
			return fmt.Errorf("items[%d].start %d is %s the collector's clock", i, start, skewText(d))
		}
	}
	return nil
}

// skewText words an offset of d ms before what it is compared with: "3h0m0s
// ahead of", "10.5s behind"; an offset too large for a time.Duration
// (thousands of years) in hours.
func skewText(d int64) string {
	way := "ahead of"
	if d < 0 {
		way, d = "behind", -d // -MinInt64 cannot come: times are in [0, wire.MaxTimeMs]
	}
	if d > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return fmt.Sprintf("%dh %s", d/3_600_000, way)
	}
	return (time.Duration(d) * time.Millisecond).String() + " " + way
}

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
