package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// JavaCalls makes a JavaService's calls one by one, through Java Sentinel
// 1.8's circuit breakers (core's, with the rules' core.SemanticsJava), for
// scenarios whose breakers act: arrivals are Poisson at the service's QPS;
// each call's response time is drawn from Latency, or from a fault's, and
// it fails at ErrorRate (or the fault's); each second's /metric line is
// made from the calls as Java's StatisticSlot counts them (passes and
// blocks by arrival, completions, errors and their mean response time by
// completion, the calls in flight at its end as its concurrency); and the
// state messages are those the collector's poller infers from the lines
// with the rules known (metriclog.Inference), marked inferred. The rules
// may hold degrade rules of Java semantics only. Java exposes no
// transition of its own: Observe, when set, is told every transition the
// breakers made, for checking what is inferred against them.
type JavaCalls struct {
	// Latency is the healthy response time (default Fixed(20 ms)), and
	// ErrorRate the healthy share of calls that fail.
	Latency   Dist
	ErrorRate float64
	// Faults change what calls take and whether they fail during their
	// windows (offsets from the scenario's start; Instances limits one to
	// some callers).
	Faults  []Fault
	Observe func(instance string, t core.Transition)
}

// javaStatMaxRt is Java Sentinel's statistic cap on one call's response
// time (SentinelConfig.statisticMaxRt, 5000 ms by default): the /metric
// line's rt is the mean of capped times. The breakers judge the real one.
const javaStatMaxRt = 5000

// javaCompletion is a call in flight: when it completes and how.
type javaCompletion struct {
	at, rt int64 // ms
	failed bool
}

// javaInFlight orders the calls in flight by completion time.
type javaInFlight []javaCompletion

func (h javaInFlight) Len() int           { return len(h) }
func (h javaInFlight) Less(i, j int) bool { return h[i].at < h[j].at }
func (h javaInFlight) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *javaInFlight) Push(x any)        { *h = append(*h, x.(javaCompletion)) }
func (h *javaInFlight) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// javaInstance is one instance's calls as they are played.
type javaInstance struct {
	name     string
	rng      *randSource
	breakers []*core.Breaker
	inFlight javaInFlight
	next     int64 // the next call's arrival, ms
	line     metriclog.Line
	rtSum    int64
	inf      *metriclog.Inference
}

// validateCalls reports what makes a Java service's calls unplayable.
func (j *JavaService) validateCalls() error {
	if j.QPS <= 0 {
		return fmt.Errorf("%w: java service %q: QPS must be positive", ErrScenario, j.App)
	}
	for _, b := range j.Rules.Breakers {
		if b.Semantics != core.SemanticsJava {
			return fmt.Errorf("%w: java service %q: breaker of %q without Java semantics", ErrScenario, j.App, b.Resource)
		}
	}
	if len(j.Rules.Flows) > 0 || len(j.Rules.Params) > 0 {
		return fmt.Errorf("%w: java service %q: played calls enforce degrade rules only", ErrScenario, j.App)
	}
	return nil
}

// playCalls is Script for a service whose Calls are set, after the
// hellos: one buckets message a second of each instance (an empty one, a
// heartbeat, for a second without a line), the inferred transitions, and
// the byes, all in time order.
func (j *JavaService) playCalls(start time.Time, s *Scenario, emit func(wire.Message) error) error {
	t0 := start.UnixMilli()
	end := t0 + s.Duration.Milliseconds()
	insts := make([]*javaInstance, len(j.Instances))
	for i, name := range j.Instances {
		in := &javaInstance{name: name, rng: &randSource{stream(s.Seed, "java", name)}, inf: metriclog.NewInference(name)}
		observe := core.TransitionFunc(func(t core.Transition) {
			if j.Calls.Observe != nil {
				j.Calls.Observe(name, t)
			}
		})
		for _, r := range j.Rules.Breakers {
			if r.Resource != j.Resource {
				continue
			}
			b, err := core.NewBreaker(r, observe)
			if err != nil {
				return fmt.Errorf("java service %q: %w", j.App, err)
			}
			in.breakers = append(in.breakers, b)
		}
		in.next = t0 + in.gap(j.QPS)
		// The poller's inference reads the rules as /getRules gives them.
		in.inf.SetRules(t0, j.Rules.Breakers, j.Rules.Flows)
		insts[i] = in
	}
	var q timeOrder
	for sec := t0; sec+metriclog.BucketMs <= end; sec += metriclog.BucketMs {
		for _, in := range insts {
			in.second(j, sec, t0)
			var items []wire.BucketItem
			if l := in.line; l.Pass+l.Block+l.Success > 0 {
				items = []wire.BucketItem{l.Item()}
			}
			q.add(&wire.Buckets{Header: wire.Header{Ts: sec + metriclog.BucketMs, Instance: in.name}, BucketMs: metriclog.BucketMs, Items: items})
			for _, st := range in.inf.Second(sec, items) {
				q.add(st)
			}
		}
		if err := q.flush(sec-inferLagMs, emit); err != nil {
			return err
		}
	}
	if err := q.flush(end, emit); err != nil {
		return err
	}
	for _, name := range j.Instances {
		if err := emit(&wire.Bye{Header: wire.Header{Ts: end, Instance: name}, Reason: "shutdown"}); err != nil {
			return err
		}
	}
	return nil
}

// inferLagMs is how far back the inference may date a transition from the
// second it decides it in: the trip dated to the last completion before a
// silence, at most a retry timeout, and a probe's completion a second or
// two before. The messages are written in time order, held back as long.
const inferLagMs = 120_000

// timeOrder holds messages back until none can come before them: the
// inference decides a transition from the seconds after it.
type timeOrder struct {
	held    []wire.Message
	written int64 // the time of the last message written
}

func (q *timeOrder) add(m wire.Message) { q.held = append(q.held, m) }

// flush writes the messages up to until, in time order (in the order
// added among equal times).
func (q *timeOrder) flush(until int64, emit func(wire.Message) error) error {
	slices.SortStableFunc(q.held, func(a, b wire.Message) int { return cmp.Compare(a.Head().Ts, b.Head().Ts) })
	n := 0
	for ; n < len(q.held) && q.held[n].Head().Ts <= until; n++ {
		m := q.held[n]
		if m.Head().Ts < q.written {
			return fmt.Errorf("java service: a transition dated %d, after messages of %d were written", m.Head().Ts, q.written)
		}
		q.written = m.Head().Ts
		if err := emit(m); err != nil {
			return err
		}
	}
	q.held = slices.Delete(q.held, 0, n)
	return nil
}

// gap is the time to the next arrival at qps (Poisson arrivals), at least
// 1 ms.
func (in *javaInstance) gap(qps float64) int64 {
	return max(int64(math.Round(in.rng.ExpFloat64()/qps*1000)), 1)
}

// second plays the calls of the second starting at sec: arrivals are
// admitted or blocked by the breakers and counted in the second they
// arrive, completions in the second they complete (Java's StatisticSlot
// counts a call's success and response time at its exit).
func (in *javaInstance) second(j *JavaService, sec, t0 int64) {
	in.line = metriclog.Line{Timestamp: sec, Resource: j.Resource}
	in.rtSum = 0
	end := sec + metriclog.BucketMs
	for {
		next := in.next
		if len(in.inFlight) > 0 && in.inFlight[0].at < next {
			next = in.inFlight[0].at
		}
		if next >= end {
			break
		}
		if len(in.inFlight) > 0 && in.inFlight[0].at == next {
			c := heap.Pop(&in.inFlight).(javaCompletion)
			for _, b := range in.breakers {
				b.OnComplete(c.at, c.rt, c.failed)
			}
			in.line.Success++
			if c.failed {
				in.line.Exception++
			}
			in.rtSum += min(c.rt, javaStatMaxRt)
			continue
		}
		in.arrive(j, next, t0)
		in.next = next + in.gap(j.QPS)
	}
	if in.line.Success > 0 {
		in.line.Rt = in.rtSum / in.line.Success // Java's long division
	}
	in.line.Concurrency = int64(len(in.inFlight))
}

// arrive admits or blocks a call arriving at at: every breaker must let it
// through (a probe a later breaker blocks goes back to OPEN).
func (in *javaInstance) arrive(j *JavaService, at, t0 int64) {
	var probes []*core.Breaker
	for _, b := range in.breakers {
		pass, probe := b.TryPass(at)
		if !pass {
			for _, p := range probes {
				p.AbortProbe(at)
			}
			in.line.Block++
			return
		}
		if probe {
			probes = append(probes, b)
		}
	}
	in.line.Pass++
	rt, failed := j.Calls.respond(in.rng, time.Duration(at-t0)*time.Millisecond, in.name)
	heap.Push(&in.inFlight, javaCompletion{at: at + rt, rt: rt, failed: failed})
}

// respond is a call's response time (ms, at least 1) and whether it
// failed, at offset t into the scenario: the healthy latency and error
// rate, or a fault's where one hits the call.
func (c *JavaCalls) respond(r *randSource, t time.Duration, instance string) (rt int64, failed bool) {
	lat, errRate := c.Latency, c.ErrorRate
	if lat == nil {
		lat = Fixed(20 * time.Millisecond)
	}
	for i := range c.Faults {
		f := &c.Faults[i]
		if !f.hits(instance) {
			continue
		}
		if sh := f.share(t); sh > 0 && r.Float64() < sh {
			if f.Latency != nil {
				lat = f.Latency
			}
			errRate = f.ErrorRate
			break
		}
	}
	rt = max(lat.Sample(r.Rand).Milliseconds(), 1)
	return rt, errRate > 0 && r.Float64() < errRate
}
