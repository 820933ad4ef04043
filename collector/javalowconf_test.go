package collector

import (
	"path/filepath"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// javaLowByProbe lists the real trips of a resource (transitions.csv) that
// the probes alone leave low-confidence: the first probe after the trip
// closed the breaker, and the breaker did not trip again within the rule's
// statIntervalMs (1000 ms in both recordings) after that close. Each is
// the trip's time and its close's.
func javaLowByProbe(real []javaTransition, resource string) [][2]int64 {
	var ts []javaTransition
	for _, x := range real {
		if x.resource == resource {
			ts = append(ts, x)
		}
	}
	var out [][2]int64
	for i, x := range ts {
		if x.from != core.Closed || x.to != core.Open {
			continue
		}
		k := i + 1
		for k < len(ts) && ts[k].from != core.HalfOpen {
			k++
		}
		if k == len(ts) || ts[k].to != core.Closed {
			continue
		}
		if k+1 < len(ts) && ts[k+1].from == core.Closed && ts[k+1].to == core.Open && ts[k+1].at-ts[k].at <= 1000 {
			continue
		}
		out = append(out, [2]int64{x.at, ts[k].at})
	}
	return out
}

// The recorded Java Sentinel 1.8.9 applications, replayed through the
// poller with their rules known (1 s windows; queryPrice slow ratio 0.5
// with minRequestAmount 5 at 25 calls a second in price-1.8.9, 3 at 6 in
// sparse-1.8.9; checkStock error ratio 0.4): the inferred trips are judged
// from the per-second completions. Every trip counted is one of the real
// trips the probes leave low-confidence; those not counted among them are
// a trip whose second completed 29 calls (price-1.8.9 queryPrice at
// 00:07:58.894: its window may have held 20 or more) and trips whose next trip
// is dated to the second after the close's (it may have come within the
// 1000 ms statIntervalMs: the downstream may really have been failing):
// the judgment errs on the side of no advice.
func TestJavaLowConfidenceFromTransport(t *testing.T) {
	type want struct {
		resource            string
		count, closed       int64
		worst               triage.Evidence
		real                int // the real trips the probes leave low-confidence
		fromTrip, toClosing int // the real ones the finding's From and To are of
	}
	cases := []struct {
		dir  string
		want []want
	}{
		{"testdata/java/price-1.8.9", []want{
			// Real: 00:07:03.227 (closed at 00:07:06.288, the next trip
			// 1.9 s later), 00:07:58.894 (29 calls completed in its
			// second), 00:08:03.243 (the next trip 1.1 s after the close,
			// dated 1 s after) and 00:08:21.830 (closed at 00:08:24.862).
			{"queryPrice", 2, 2, triage.Evidence{K: 7, N: 12, Lower: 0.4}, 4, 0, 3},
			// Real: 00:07:24.229, whose next trip came 1.1 s after the
			// close, dated 1 s after.
			{"checkStock", 0, 0, triage.Evidence{}, 1, -1, -1},
		}},
		{"testdata/java/sparse-1.8.9", []want{
			// Real: 00:22:15.908 (closed at 00:22:17.074, the next trip
			// 32 s later), 00:22:58.210 and 00:23:15.211 (the next trips
			// 1.2 s and 1.5 s after their closes, dated 1 s after).
			{"queryPrice", 1, 1, triage.Evidence{K: 2, N: 3, Lower: 0.32}, 3, 0, 0},
			{"checkStock", 3, 3, triage.Evidence{K: 2, N: 3, Lower: 0.32}, 3, 0, 2},
		}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.dir), func(t *testing.T) {
			real := javaRealTransitions(t, c.dir)
			last := real[len(real)-1].at
			col, _, _, _ := javaReplayPolled(t, c.dir, "price-service", func(int64, *javaReplayServer) int64 { return last + 5000 })
			s := col.Publish()
			for _, w := range s.Warnings {
				if _, ok := w.(UnjudgedTrips); ok {
					t.Errorf("rules known, yet %s", WarningText(w))
				}
			}
			for _, w := range c.want {
				low := javaLowByProbe(real, w.resource)
				if len(low) != w.real {
					t.Fatalf("%s: %d real trips left low-confidence by the probes, want %d: %v", w.resource, len(low), w.real, low)
				}
				var got *triage.Finding
				for i := range s.Findings {
					if f := &s.Findings[i]; f.Kind == triage.KindLowConfidenceTrip && f.Resource == w.resource {
						got = f
					}
				}
				if w.count == 0 {
					if got != nil {
						t.Errorf("%s: %+v", w.resource, *got)
					}
					continue
				}
				if got == nil {
					t.Errorf("%s: no low-confidence-trip", w.resource)
					continue
				}
				x := got.Facts.(*triage.LowConfidenceFacts)
				if x.Count != w.count || x.ClosedAtFirstProbe != w.closed || x.Worst != w.worst || !x.Inferred ||
					x.InferredTrips != w.count || x.ColdStart != nil || x.Unjudged != 0 || x.Count > int64(len(low)) {
					t.Errorf("%s: %+v", w.resource, *x)
				}
				// Inferred times are dated to the start of their second.
				trip, closing := low[w.fromTrip][0], low[w.toClosing][1]
				if got.From > trip || trip-got.From >= 1000 || got.To > closing || closing-got.To >= 1000 {
					t.Errorf("%s: from %d to %d, want the seconds of the real trip at %d and close at %d", w.resource, got.From, got.To, trip, closing)
				}
			}
		})
	}
}
