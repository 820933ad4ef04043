package metriclog

import (
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// TestInferenceProbeInTheSecondTheRetryEnds: a breaker that tripped in
// second 0 may let its probe through in the second its retry timeout ends
// in (a trip late in second 0 with a 3 s retry ends in second 2, or 3): a
// pass in second 2 is the probe, not a close the breaker never made; a
// pass in second 1 is still before any retry could end.
func TestInferenceProbeInTheSecondTheRetryEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		x       *Inference
		seconds []inferSecond
		want    string
	}{
		{"a pass one second before the retry's end: the probe", known([]core.BreakerRule{slowRule(3000)}, nil),
			[]inferSecond{"20/2", "0/20", "1/20/1/30", "14/0"},
			"0 C>O 2 O>H 2 H>C(30)"},
		{"a pass two seconds before it: not the breaker's", known([]core.BreakerRule{slowRule(3000)}, nil),
			[]inferSecond{"20/2", "1/20/1/30", "14/0"},
			"0 C>O 1 O>C"},
		{"a 5 s retry: the probe in second 4", known([]core.BreakerRule{slowRule(5000)}, nil),
			[]inferSecond{"20/2", "0/20", "0/20", "0/20", "1/20/1/400", "0/20"},
			"0 C>O 4 O>H 4 H>O(400)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inferRun(tc.x, tc.seconds...); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
