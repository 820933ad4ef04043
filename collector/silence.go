package collector

import "github.com/sentinel-top/sentinel-top/core"

// Silences of inferred breakers. A Java Sentinel breaker's state is
// inferred from its resource's per-second counts (metriclog.Inference),
// and the counts show it only while calls come: a breaker trips at a
// completion, and with no call after it nothing shows it; the first call
// after its timeWindow passes as the probe, and may close it again, as if
// it never opened. A call within the timeWindow would have been blocked,
// and seen: the inference then dates the trip back to the completion. So
// an inferred CLOSED followed by a silence at least the timeWindow long
// (silentAfter) is not known over that silence: from the end of the last
// second with a line (a call passed, was blocked or completed) to the next
// one, or on, while the silence goes on. An inferred OPEN or HALF_OPEN
// stays what it was: Java's breaker moves only at a call.

// maxQuietSpans bounds the silences a series keeps (the latest; 2 KiB):
// an older one shows the inferred state again.
const maxQuietSpans = 128

// silentAfter is how long a silence (whole seconds without a line) must
// last for an inferred CLOSED to be unknown over it: a call that many
// milliseconds after the last second with a line may have come a whole
// timeWindow after the trip, with the trip early in that second. Without
// the rules (a metric log: retryMs 0), one second.
func silentAfter(retryMs, bucketMs int64) int64 {
	return max(retryMs-bucketMs, bucketMs)
}

// noteLine takes a second of the series with a line, of an instance
// whose states are inferred: the silence since the last such second, when
// long enough to matter for its breaker, is kept; a second older than the
// last, arriving late, cuts the silence it falls in.
func (s *series) noteLine(start, bucketMs int64) {
	switch {
	case s.lastLine == 0:
		s.lastLine = start
	case start > s.lastLine:
		if from := s.lastLine + bucketMs; s.inferred && start-from >= silentAfter(s.retryMs, bucketMs) {
			if len(s.quiet) == maxQuietSpans {
				s.quiet = append(s.quiet[:0], s.quiet[maxQuietSpans/4:]...)
			}
			s.quiet = append(s.quiet, Span{From: from, To: start})
		}
		s.lastLine = start
	default:
		for i := len(s.quiet) - 1; i >= 0; i-- {
			q := s.quiet[i]
			if q.To <= start || q.From >= start+bucketMs {
				continue
			}
			var keep []Span
			if start-q.From >= silentAfter(s.retryMs, bucketMs) {
				keep = append(keep, Span{From: q.From, To: start})
			}
			if q.To-(start+bucketMs) >= silentAfter(s.retryMs, bucketMs) {
				keep = append(keep, Span{From: start + bucketMs, To: q.To})
			}
			s.quiet = append(s.quiet[:i], append(keep, s.quiet[i+1:]...)...)
			break
		}
	}
}

// silentNow reports whether the series' inferred breaker is silent at the
// instance's data end: no line for at least silentAfter.
func (in *instance) silentNow(s *series) bool {
	if !s.inferred || s.lastLine == 0 || in.bucketMs <= 0 {
		return false
	}
	return in.dataEndSecond()-(s.lastLine+in.bucketMs) >= silentAfter(s.retryMs, in.bucketMs)
}

// silent is where, over [from, to], the series' inferred breaker is not
// known for a silence: its silences (and the one going on) in which its
// history (start at from, then steps, in time order) says CLOSED, each
// up to the next step.
func (in *instance) silent(s *series, start core.State, steps []Transition, from, to int64) []Span {
	if !s.inferred {
		return nil
	}
	spans := s.quiet
	if in.silentNow(s) {
		end := to + 1
		if in.Gone {
			end = min(end, in.lastTs)
		}
		spans = append(spans[:len(spans):len(spans)], Span{From: s.lastLine + in.bucketMs, To: end})
	}
	var out []Span
	for _, sp := range spans {
		sp.From, sp.To = max(sp.From, from), min(sp.To, to+1)
		if sp.To <= sp.From {
			continue
		}
		state := start
		for _, st := range steps {
			if st.AtMs > sp.From {
				sp.To = min(sp.To, st.AtMs)
				break
			}
			state = st.To
		}
		if state == core.Closed && sp.To > sp.From {
			out = append(out, sp)
		}
	}
	return out
}
