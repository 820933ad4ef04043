package core

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// javaRecordings holds request sequences played through Java Sentinel 1.8's
// own ResponseTimeCircuitBreaker and ExceptionCircuitBreaker on a virtual
// clock, with every decision, window and transition Java made.
// docs/SEMANTICS.md says how it was recorded.
const javaRecordings = "testdata/java_breaker_sequences.ndjson"

// javaDegradeRule is the part of Java Sentinel's DegradeRule a breaker reads.
type javaDegradeRule struct {
	Grade              int     `json:"grade"`
	Count              float64 `json:"count"`
	SlowRatioThreshold float64 `json:"slowRatioThreshold"`
	TimeWindow         int     `json:"timeWindow"` // seconds
	MinRequestAmount   int     `json:"minRequestAmount"`
	StatIntervalMs     int     `json:"statIntervalMs"`
}

// coreRule is the field map of docs/SEMANTICS.md: grade is the strategy; count
// is the response-time bound of a slow-ratio rule, rounded as Java's
// Math.round(count) rounds it (half up, which math.Round matches for the
// non-negative counts Java accepts), and the threshold of the other two;
// slowRatioThreshold is a slow-ratio rule's threshold; timeWindow is seconds.
func (j javaDegradeRule) coreRule() BreakerRule {
	r := BreakerRule{Resource: "r", Strategy: Strategy(j.Grade), RetryTimeoutMs: uint32(j.TimeWindow) * 1000,
		MinRequestAmount: uint64(j.MinRequestAmount), StatIntervalMs: uint32(j.StatIntervalMs), Semantics: SemanticsJava}
	if r.Strategy == SlowRequestRatio {
		r.MaxAllowedRtMs, r.Threshold = uint64(math.Round(j.Count)), j.SlowRatioThreshold
	} else {
		r.Threshold = j.Count
	}
	return r
}

// javaOp is one step of a recorded sequence: a request ("p" passed, "P"
// passed as the probe, "b" blocked), a probe blocked by a later rule ("a"),
// or a completion ("d") with its response time, whether it failed, and the
// window Java held right after it.
type javaOp struct {
	at, rt     int64
	kind       string
	failed     bool
	total, bad int64
}

func (o *javaOp) UnmarshalJSON(b []byte) error {
	var a []any
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) < 2 {
		return fmt.Errorf("op %s: too short", b)
	}
	o.at, o.kind = int64(a[0].(float64)), a[1].(string)
	if o.kind == "d" {
		if len(a) != 6 {
			return fmt.Errorf("completion %s: want 6 fields", b)
		}
		o.rt, o.failed = int64(a[2].(float64)), a[3].(float64) != 0
		o.total, o.bad = int64(a[4].(float64)), int64(a[5].(float64))
	}
	return nil
}

// javaTransition is a transition as Java's observer saw it: time, states,
// snapshot value (null when Java passes none) and the window at that moment.
type javaTransition struct {
	at         int64
	from, to   string
	value      *float64
	total, bad int64
}

func (t *javaTransition) UnmarshalJSON(b []byte) error {
	var a []any
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 6 {
		return fmt.Errorf("transition %s: want 6 fields", b)
	}
	t.at, t.from, t.to = int64(a[0].(float64)), a[1].(string), a[2].(string)
	if v, ok := a[3].(float64); ok {
		t.value = &v
	}
	t.total, t.bad = int64(a[4].(float64)), int64(a[5].(float64))
	return nil
}

func (t javaTransition) String() string {
	v := "null"
	if t.value != nil {
		v = fmt.Sprint(*t.value)
	}
	return fmt.Sprintf("%d %s>%s value %s window %d/%d", t.at, t.from, t.to, v, t.bad, t.total)
}

type javaRecording struct {
	Seed        int64            `json:"seed"`
	Rule        javaDegradeRule  `json:"rule"`
	Ops         []javaOp         `json:"ops"`
	Transitions []javaTransition `json:"transitions"`
}

func loadJavaRecordings(t *testing.T) (string, []javaRecording) {
	t.Helper()
	f, err := os.Open(javaRecordings)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	var header struct {
		RecordedWith string `json:"recordedWith"`
	}
	var recs []javaRecording
	for first := true; sc.Scan(); first = false {
		if first {
			if err := json.Unmarshal(sc.Bytes(), &header); err != nil || header.RecordedWith == "" {
				t.Fatalf("%s: first line is not the header: %v", javaRecordings, err)
			}
			continue
		}
		var r javaRecording
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", javaRecordings, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return header.RecordedWith, recs
}

// TestBreakerJavaReplay plays every sequence recorded from Java Sentinel
// through core with java semantics and requires, step by step, Java's
// pass/probe/block decision, Java's window (completions and bad ones) after
// every completion, and Java's transitions (time, states, snapshot value, and
// the window the observer would read). Each sequence runs three times, with
// probeNum 0, 3 and 1 and statSlidingWindowBucketCount 0, 10 and 4: Java has
// neither field, so the results must not change.
//
// It pins every java branch of core/breaker.go against the real thing: the
// one-bucket tumbling window (ResponseTimeCircuitBreaker's
// `new SlowRequestLeapArray(1, rule.getStatIntervalMs())`), the strict
// comparisons (`currentRatio > maxSlowRequestRatio`, `curCount > threshold`),
// the 1.0-at-1.0 slow-ratio case, the single probe (AbstractCircuitBreaker's
// tryPass returns false in HALF_OPEN), resetStat before the close is notified,
// the probe blocked by a later rule (the whenTerminate hook), and a clock that
// goes back (LeapArray.currentWindow's detached bucket, values' bound).
func TestBreakerJavaReplay(t *testing.T) {
	source, recs := loadJavaRecordings(t)
	if len(recs) < 100 {
		t.Fatalf("%s holds %d sequences", javaRecordings, len(recs))
	}
	t.Logf("%d sequences recorded with %s", len(recs), source)
	variants := []struct{ probeNum, buckets uint64 }{{0, 0}, {3, 10}, {1, 4}}
	for _, rec := range recs {
		for _, v := range variants {
			rule := rec.Rule.coreRule()
			rule.ProbeNum, rule.StatSlidingWindowBucketCount = v.probeNum, uint32(v.buckets)
			if err := replayJava(rule, rec); err != nil {
				t.Errorf("seed %d, java rule %+v, probeNum %d, buckets %d: %v", rec.Seed, rec.Rule, v.probeNum, v.buckets, err)
				break
			}
		}
	}
}

// javaObserver adapts a function to TransitionListener.
type javaObserver func(Transition)

func (f javaObserver) OnTransition(t Transition) { f(t) }

// replayJava plays rec through a core breaker for rule and returns the first
// difference from what Java recorded.
func replayJava(rule BreakerRule, rec javaRecording) error {
	var b *Breaker
	var got []javaTransition
	listener := javaObserver(func(tr Transition) {
		w := b.Window(tr.AtMs)
		jt := javaTransition{at: tr.AtMs, from: tr.From.String(), to: tr.To.String(), total: w.Total, bad: w.Bad}
		if !(tr.From == Open && tr.To == HalfOpen) && !(tr.From == HalfOpen && tr.To == Closed) {
			v := tr.Snapshot.Value
			jt.value = &v
		}
		got = append(got, jt)
	})
	b, err := NewBreaker(rule, listener)
	if err != nil {
		return err
	}
	for i, op := range rec.Ops {
		switch op.kind {
		case "p", "P", "b":
			pass, probe := b.TryPass(op.at)
			if pass != (op.kind != "b") || probe != (op.kind == "P") {
				return fmt.Errorf("op %d: request at %d: pass=%v probe=%v, Java %q", i, op.at, pass, probe, op.kind)
			}
		case "a":
			b.AbortProbe(op.at)
		case "d":
			b.OnComplete(op.at, op.rt, op.failed)
			if w := b.Window(op.at); w.Total != op.total || w.Bad != op.bad {
				return fmt.Errorf("op %d: completion at %d rt %d failed %v: window %d/%d, Java %d/%d",
					i, op.at, op.rt, op.failed, w.Bad, w.Total, op.bad, op.total)
			}
		default:
			return fmt.Errorf("op %d: unknown kind %q", i, op.kind)
		}
		for k := range got {
			if k >= len(rec.Transitions) {
				return fmt.Errorf("op %d at %d: extra transition %v (Java made %d)", i, op.at, got[k], len(rec.Transitions))
			}
			if !sameJavaTransition(got[k], rec.Transitions[k]) {
				return fmt.Errorf("op %d at %d: transition %d is %v, Java %v", i, op.at, k, got[k], rec.Transitions[k])
			}
		}
	}
	if len(got) != len(rec.Transitions) {
		return fmt.Errorf("%d transitions, Java %d; Java's next: %v", len(got), len(rec.Transitions), rec.Transitions[len(got)])
	}
	return nil
}

func sameJavaTransition(a, b javaTransition) bool {
	if a.at != b.at || a.from != b.from || a.to != b.to || a.total != b.total || a.bad != b.bad || (a.value == nil) != (b.value == nil) {
		return false
	}
	return a.value == nil || *a.value == *b.value
}
