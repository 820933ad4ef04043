package whatif

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Result as the report and the dashboard show it: one row per measure,
// the current rule's value beside the proposed one's, in words and numbers
// of the package's own (no input string).

// Row is one measure of a Result, the current and the proposed rule's
// values as text.
type Row struct {
	Label             string
	Current, Proposed string
}

// maxDetectListed is how many detection delays a row lists before it
// gives their median instead.
const maxDetectListed = 4

// Rows are the result's measures, side by side: trips, trips on fewer than
// SoundCalls calls, outages caught (of the sound ones), how long after
// each outage began the breaker tripped (ms), probes, calls passed during
// outages and healthy calls blocked. A count the input cannot tell exactly
// is "lo-hi".
func (r *Result) Rows() []Row {
	c, p := &r.Current, &r.Proposed
	caught := func(m *Metrics) string {
		return strconv.FormatInt(m.OutagesCaught, 10) + " of " + strconv.FormatInt(r.Outages, 10)
	}
	// A count the readings disagree on shows both (the JSON holds the
	// worse); a Result made by hand has no ranges: its counts show.
	count := func(n int64, r Range) string {
		if r != (Range{}) {
			return r.String()
		}
		return strconv.FormatInt(n, 10)
	}
	return []Row{
		{"trips", count(c.Trips, c.TripsRange), count(p.Trips, p.TripsRange)},
		{fmt.Sprintf("trips on fewer than %d calls", SoundCalls), count(c.LowConfidenceTrips, c.LowConfidenceRange), count(p.LowConfidenceTrips, p.LowConfidenceRange)},
		{"outages caught", caught(c), caught(p)},
		{"detected after (ms)", DetectText(c.DetectMs), DetectText(p.DetectMs)},
		{"probes", count(c.Probes, c.ProbesRange), count(p.Probes, p.ProbesRange)},
		{"calls passed during outages", c.PassedDuringOutage.String(), p.PassedDuringOutage.String()},
		{"healthy calls blocked", c.BlockedHealthy.String(), p.BlockedHealthy.String()},
	}
}

// String is "lo-hi", or "lo" when both ends are the same.
func (r Range) String() string {
	if r[0] == r[1] {
		return strconv.FormatInt(r[0], 10)
	}
	return strconv.FormatInt(r[0], 10) + "-" + strconv.FormatInt(r[1], 10)
}

// DetectText is a list of detection delays (ms) in a few cells: "620,
// 669", or with more than 4 "median 505 over 32 (312-648)"; "none" when
// no outage was caught.
func DetectText(ms []int64) string {
	switch {
	case len(ms) == 0:
		return "none"
	case len(ms) <= maxDetectListed:
		s := make([]string, len(ms))
		for i, v := range ms {
			s[i] = strconv.FormatInt(v, 10)
		}
		return strings.Join(s, ", ")
	}
	sorted := slices.Sorted(slices.Values(ms))
	n := len(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return fmt.Sprintf("median %d over %d (%s)", median, n, Range{sorted[0], sorted[n-1]})
}

// Basis says what the replay rests on: its resolution, and whether some
// of it is estimated.
func (r *Result) Basis() string {
	s := fmt.Sprintf("replayed in %d ms steps", r.StepMs)
	if r.StepMs <= 0 {
		s = "no traffic bucket to replay"
	}
	if r.Estimated {
		s += "; estimated: the outcomes of calls the real breaker refused, and response times between histogram edges " +
			"(counts a range over both readings where they differ, the JSON the reading worse for the rule)"
	}
	return s
}
