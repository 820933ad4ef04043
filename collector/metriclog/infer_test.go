package metriclog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

const inferT0 = 1796083500000

// inferSecond is one second of one resource: "pass/block", and optionally
// "/complete/rt/errors" (complete defaults to pass, rt to 10).
type inferSecond string

func (s inferSecond) item(resource string, start int64) wire.BucketItem {
	var p, b, c, rt, e int64 = 0, 0, -1, 10, 0
	fmt.Sscanf(strings.ReplaceAll(string(s), "/", " "), "%d %d %d %d %d", &p, &b, &c, &rt, &e)
	if c < 0 {
		c = p
	}
	return wire.BucketItem{Resource: resource, Start: start, Metrics: core.Metrics{Pass: p, Block: b, Complete: c, Error: e, RtSum: rt * c, RtMin: rt, RtMax: rt}}
}

// inferRun feeds seconds of resource "r" ("" is a second without a line)
// and returns the transitions as "second from>to" (seconds from inferT0),
// a probe as (rtMs) or (error).
func inferRun(x *Inference, seconds ...inferSecond) string {
	var out []string
	for i, s := range seconds {
		start := inferT0 + int64(i)*BucketMs
		var items []wire.BucketItem
		if s != "" {
			items = append(items, s.item("r", start))
		}
		for _, m := range x.Second(start, items) {
			out = append(out, stateText(m))
		}
	}
	return strings.Join(out, " ")
}

func stateText(m *wire.State) string {
	s := fmt.Sprintf("%d %s>%s", (m.Ts-inferT0)/BucketMs, short(m.From), short(m.To))
	if !m.Inferred || m.Instance != "i" || m.Resource != "r" || (m.Ts-inferT0)%BucketMs != 0 {
		s += fmt.Sprintf("!%+v", m)
	}
	if m.Probe != nil {
		if m.Probe.Error {
			s += "(error)"
		} else {
			s += fmt.Sprintf("(%d)", m.Probe.RtMs)
		}
	}
	return s
}

func short(s core.State) string {
	return map[core.State]string{core.Closed: "C", core.Open: "O", core.HalfOpen: "H"}[s]
}

func slowRule(retryMs uint32) core.BreakerRule {
	return core.BreakerRule{Resource: "r", Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 100, Threshold: 0.5,
		RetryTimeoutMs: retryMs, MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Semantics: core.SemanticsJava}
}

// sparseRule is the slow-ratio rule of testdata/java/sparse-1.8.9.
var sparseRule = func() core.BreakerRule { r := slowRule(1000); r.MinRequestAmount = 3; return r }()

func known(breakers []core.BreakerRule, flows []core.FlowRule) *Inference {
	x := NewInference("i")
	x.SetRules(inferT0-BucketMs, breakers, flows)
	return x
}

func TestInferenceKnownRules(t *testing.T) {
	slow := []core.BreakerRule{slowRule(3000)}
	for _, tc := range []struct {
		name    string
		x       *Inference
		seconds []inferSecond
		want    string
	}{
		{"trip, failed probes, a probe that closes", known(slow, nil),
			[]inferSecond{"20/0", "18/6/19/201", "0/22", "0/22", "1/30/1/227", "0/24", "0/21", "1/23/0", "0/29/1/380", "0/20", "0/20", "1/20/1/20", "25/0"},
			"1 C>O 4 O>H 4 H>O(227) 7 O>H 8 H>O(380) 11 O>H 11 H>C(20)"},
		{"the probe closes and traffic passes in its second", known(slow, nil),
			[]inferSecond{"20/2", "0/20", "0/20", "9/12/9/15"},
			"0 C>O 3 O>H 3 H>C"},
		{"a close, then a trip the next second", known(slow, nil),
			[]inferSecond{"20/2", "0/20", "0/20", "1/20/1/30", "14/0", "5/15"},
			"0 C>O 3 O>H 3 H>C(30) 5 C>O"},
		{"no traffic after the probe: judged by the rule", known(slow, nil),
			[]inferSecond{"20/2", "0/20", "0/20", "1/20/1/300", ""},
			"0 C>O 3 O>H 3 H>O(300)"},
		{"a probe completing a second later", known(slow, nil),
			[]inferSecond{"20/2", "0/20", "0/20", "1/20/0", "5/10/6/40"},
			"0 C>O 3 O>H 4 H>C"},
		{"a pass before the retry time: not the breaker's block", known(slow, nil),
			[]inferSecond{"20/2", "5/3"},
			"0 C>O 1 O>C"},
		{"a resource with a flow rule tells nothing", known(slow, []core.FlowRule{{Resource: "r", Threshold: 20}}),
			[]inferSecond{"20/2", "0/20", "0/20", "1/20/1/30", "14/0"}, ""},
		{"without degrade rules nothing either", known(nil, nil),
			[]inferSecond{"20/2", "0/20", "0/20", "1/20/1/30", "14/0"}, ""},
		{"an error probe fails an error-ratio breaker", known([]core.BreakerRule{{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.4,
			RetryTimeoutMs: 2000, MinRequestAmount: 5, StatIntervalMs: 1000, Semantics: core.SemanticsJava}}, nil),
			[]inferSecond{"20/2", "0/20", "1/20/1/10/1", ""},
			"0 C>O 2 O>H 2 H>O(error)"},
		{"timeWindow 1 s: failed probes a second apart, a close, a trip in the close's second", known([]core.BreakerRule{sparseRule}, nil),
			[]inferSecond{"8/0", "4/2/4/182", "1/8/0", "0/1/1/340", "1/8/1/170", "4/9/2/99", "1/5/1/239", "0/4/0"},
			"1 C>O 2 O>H 3 H>O(340) 4 O>H 4 H>O(170) 5 O>H 5 H>C 5 C>O 6 O>H 6 H>O(239)"},
		{"a trip after silence: at the last completion", known([]core.BreakerRule{{Resource: "r", Strategy: core.ErrorCount, Threshold: 3,
			RetryTimeoutMs: 4000, MinRequestAmount: 5, StatIntervalMs: 1000, Semantics: core.SemanticsJava}}, nil),
			[]inferSecond{"5/0/5/27/4", "", "", "0/2", "1/3/1/15", "1/0/1/28/1", "7/0"},
			"0 C>O 4 O>H 4 H>C(15)"},
		{"a trip after silence in a second whose own errors trip it: there", known([]core.BreakerRule{{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5,
			RetryTimeoutMs: 3000, MinRequestAmount: 2, StatIntervalMs: 1000, Semantics: core.SemanticsJava}}, nil),
			// lowtraffic-1.8.9's checkStock: Java tripped at 3.216 s.
			[]inferSecond{"1/0/1/58", "", "", "2/1/2/21/2", "0/1", "", "", "1/0/1/28", "2/0"},
			"3 C>O 7 O>H 7 H>C(28)"},
		{"Java before 1.8 has no probe", known([]core.BreakerRule{{Resource: "r", Strategy: core.AverageRT, Threshold: 100,
			RetryTimeoutMs: 5000, MinRequestAmount: 5, StatIntervalMs: 1000, Semantics: core.SemanticsJava16}}, nil),
			[]inferSecond{"5/5", "0/20", "0/20", "0/20", "0/20", "5/5", "0/19"},
			"0 C>O 5 O>C 6 C>O"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inferRun(tc.x, tc.seconds...); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestInferenceUnknownRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seconds []inferSecond
		want    string
	}{
		{"a fully blocked second confirms the trip, dated to the blocks' start",
			[]inferSecond{"20/0", "18/6/19/201", "0/22", "0/22", "1/30/1/227", "0/24", "0/21", "1/23/1/30", "20/0"},
			"1 C>O 4 O>H 4 H>O(227) 7 O>H 7 H>C(30)"},
		{"a trip at the start of a second",
			[]inferSecond{"20/0", "0/22", "0/22", "3/20/3/30"},
			"1 C>O 3 O>H 3 H>C"},
		{"flow control: blocks while passes go on are no trip",
			[]inferSecond{"20/5", "20/8", "20/3", "20/9", "18/0"}, ""},
		{"blocks with passes, then a trip: dated to the last second with passes",
			[]inferSecond{"20/5", "20/8", "12/9", "0/30", "1/29/1/500", "0/25"},
			"2 C>O 4 O>H 4 H>O(500)"},
		{"a pass among blocks: the probe of a trip dated to the blocks before it",
			[]inferSecond{"8/0", "4/2/4/182", "1/8/0", "0/1/1/340", "1/8/1/170", "1/7/1/184"},
			"1 C>O 2 O>H 3 H>O(340) 4 O>H 4 H>O(170) 5 O>H"},
		{"no traffic after the probe: undecided without rules",
			[]inferSecond{"20/0", "0/22", "0/22", "1/20/1/300", "", "", ""},
			"1 C>O 3 O>H"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inferRun(NewInference("i"), tc.seconds...); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestInferenceRulesChangeAndRestore(t *testing.T) {
	x := known([]core.BreakerRule{slowRule(3000)}, nil)
	if got := inferRun(x, "20/2", "0/20"); got != "0 C>O" {
		t.Fatal(got)
	}
	// Java builds a new breaker for a changed rule: CLOSED.
	changed := slowRule(5000)
	changed.Threshold = 0.8
	if got := x.SetRules(inferT0+5000, []core.BreakerRule{changed}, nil); len(got) != 1 || stateText(got[0]) != "5 O>C" {
		t.Fatalf("%+v", got)
	}
	// Equal rules change nothing.
	if got := x.SetRules(inferT0+6000, []core.BreakerRule{changed}, nil); len(got) != 0 {
		t.Fatalf("%+v", got)
	}
	// A reconnecting poller goes on from the state the collector holds;
	// the first rules describe it.
	y := NewInference("i")
	y.Restore("r", core.Open, inferT0)
	if got := y.SetRules(inferT0, []core.BreakerRule{slowRule(3000)}, nil); len(got) != 0 {
		t.Fatalf("%+v", got)
	}
	if got := inferRun(y, "0/20", "0/20", "0/20", "1/20/1/20", "9/0"); got != "3 O>H 3 H>C(20)" {
		t.Fatal(got)
	}
	if y.Last() != inferT0+4000 || y.Second(inferT0+4000, nil) != nil {
		t.Fatal("a second fed twice")
	}
}

// The transitions name the resource's breaker: strategy, threshold and
// retry timeout of its first rule; an average-RT rule says grade 0.
func TestInferenceStateFields(t *testing.T) {
	x := known([]core.BreakerRule{slowRule(3000)}, nil)
	got := x.Second(inferT0, []wire.BucketItem{inferSecond("20/2").item("r", inferT0)})
	if len(got) != 1 || got[0].Strategy != core.SlowRequestRatio || got[0].Threshold != 0.5 || got[0].RetryTimeoutMs != 3000 ||
		got[0].Snapshot != nil || got[0].RuleID != "" {
		t.Fatalf("%+v", got)
	}
	if err := wire.Validate(got[0], wire.Limits{}); err != nil {
		t.Fatal(err)
	}
	x = known([]core.BreakerRule{{Resource: "r", Strategy: core.AverageRT, Threshold: 100, RetryTimeoutMs: 5000,
		StatIntervalMs: 1000, Semantics: core.SemanticsJava16}}, nil)
	got = x.Second(inferT0, []wire.BucketItem{inferSecond("5/5").item("r", inferT0)})
	if len(got) != 1 || got[0].Strategy != core.SlowRequestRatio || got[0].Threshold != 100 {
		t.Fatalf("%+v", got)
	}
	if err := wire.Validate(got[0], wire.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// FuzzInference: whatever the counts, the inference never panics, and each
// resource's transitions form one chain from CLOSED, in time order, each a
// valid wire message.
func FuzzInference(f *testing.F) {
	f.Add([]byte{20, 0, 18, 6, 0, 22, 0, 22, 1, 30, 0, 24, 1, 23, 25, 0}, true, uint8(3))
	f.Add([]byte{8, 0, 4, 2, 1, 8, 0, 1, 1, 8, 4, 9, 1, 5, 0, 4}, false, uint8(1))
	f.Fuzz(func(t *testing.T, counts []byte, withRules bool, retry uint8) {
		x := NewInference("i")
		if withRules {
			r := slowRule(uint32(retry%8+1) * 1000)
			r.MinRequestAmount = uint64(retry % 6)
			x.SetRules(inferT0-BucketMs, []core.BreakerRule{r}, nil)
		}
		state, last := core.Closed, int64(0)
		for i := 0; i+1 < len(counts); i += 2 {
			start := inferT0 + int64(i/2)*BucketMs
			it := wire.BucketItem{Resource: "r", Start: start, Metrics: core.Metrics{Pass: int64(counts[i] % 16), Block: int64(counts[i+1] % 16)}}
			it.Complete = it.Pass
			it.RtSum, it.RtMin, it.RtMax = it.Complete*int64(counts[i]), int64(counts[i]), int64(counts[i])
			var items []wire.BucketItem
			if counts[i] != 0 || counts[i+1] != 0 {
				items = append(items, it)
			}
			for _, m := range x.Second(start, items) {
				if m.From != state || m.Ts < last || m.Ts > start {
					t.Fatalf("second %d: %s after %s at %d", i/2, stateText(m), state, last)
				}
				if err := wire.Validate(m, wire.Limits{}); err != nil {
					t.Fatal(err)
				}
				state, last = m.To, m.Ts
			}
		}
	})
}
