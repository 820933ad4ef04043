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
// scenarios whose breakers act: each second's metric line is made from
// the calls (passes and blocks by arrival, completions, errors and their
// mean response time by completion, as Java's StatisticSlot counts
// them), and the state messages are those the collector's poller infers
// from the lines with the rules known (metriclog.Inference), marked
// inferred. Java exposes no transition of its own: Observe, when set, is
// told every transition the breakers made, for checking what is inferred
// against them.
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

// javaCall is a passed call awaiting its completion.
type javaCall struct {
	done, rt int64 // completion time and response time, ms
	failed   bool
	seq      int
}

// javaCalls orders calls by completion, then by arrival.
type javaCalls []javaCall

func (h javaCalls) Len() int { return len(h) }
func (h javaCalls) Less(i, j int) bool {
	return h[i].done < h[j].done || h[i].done == h[j].done && h[i].seq < h[j].seq
}
func (h javaCalls) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *javaCalls) Push(x any)   { *h = append(*h, x.(javaCall)) }
func (h *javaCalls) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// javaSecondCounts are one second's counts of the resource.
type javaSecondCounts struct {
	pass, block, success, exception, rtSum int64
}

// scriptCalls writes the recording of a JavaService whose Calls are set:
// per instance its hello and rules, one buckets message a second (an empty
// one, a heartbeat, for a second without a line) and the inferred
// transitions, all in time order.
func (j *JavaService) scriptCalls(start time.Time, s *Scenario, emit func(wire.Message) error) error {
	t0 := start.UnixMilli()
	end := t0 + s.Duration.Milliseconds()
	version := wire.RulesVersion(j.Rules.Breakers, j.Rules.Flows, j.Rules.Params...)
	var msgs []wire.Message
	for i, name := range j.Instances {
		msgs = append(msgs,
			&wire.Hello{Header: wire.Header{Ts: t0, Instance: name}, App: j.App, Host: fmt.Sprintf("10.0.9.%d", i+1),
				SDK: "java-sentinel/" + j.Version, BucketMs: metriclog.BucketMs},
			&wire.Rules{Header: wire.Header{Ts: t0, Instance: name}, Version: version,
				Breakers: j.Rules.Breakers, Flows: j.Rules.Flows, Params: j.Rules.Params})
		seconds, err := j.calls(name, t0, end, s.Seed)
		if err != nil {
			return scenarioErr(s, "%v", err)
		}
		inf := metriclog.NewInference(name)
		inf.SetRules(t0, j.Rules.Breakers, j.Rules.Flows)
		for k, c := range seconds {
			sec := t0 + int64(k)*metriclog.BucketMs
			var items []wire.BucketItem
			if c != (javaSecondCounts{}) {
				l := metriclog.Line{Timestamp: sec, Resource: j.Resource, Pass: c.pass, Block: c.block,
					Success: c.success, Exception: c.exception}
				if c.success > 0 {
					l.Rt = c.rtSum / c.success
				}
				items = []wire.BucketItem{l.Item()}
			}
			msgs = append(msgs, &wire.Buckets{Header: wire.Header{Ts: sec + metriclog.BucketMs, Instance: name},
				BucketMs: metriclog.BucketMs, Items: items})
			for _, st := range inf.Second(sec, items) {
				msgs = append(msgs, st)
			}
		}
		msgs = append(msgs, &wire.Bye{Header: wire.Header{Ts: end, Instance: name}, Reason: "shutdown"})
	}
	slices.SortStableFunc(msgs, func(a, b wire.Message) int { return cmp.Compare(a.Head().Ts, b.Head().Ts) })
	for _, m := range msgs {
		if err := emit(m); err != nil {
			return err
		}
	}
	return nil
}

// calls plays one instance's calls from t0 to end: Poisson arrivals at
// j.QPS, each let through or blocked by the breakers of j.Resource, and
// the counts of each second.
func (j *JavaService) calls(name string, t0, end int64, seed uint64) ([]javaSecondCounts, error) {
	c := j.Calls
	var breakers []*core.Breaker
	for _, r := range j.Rules.Breakers {
		if r.Resource != j.Resource {
			continue
		}
		b, err := core.NewBreaker(r, core.TransitionFunc(func(t core.Transition) {
			if c.Observe != nil {
				c.Observe(name, t)
			}
		}))
		if err != nil {
			return nil, err
		}
		breakers = append(breakers, b)
	}
	r := &randSource{stream(seed, "java-calls", name)}
	seconds := make([]javaSecondCounts, (end-t0)/metriclog.BucketMs)
	count := func(at int64) *javaSecondCounts {
		if k := (at - t0) / metriclog.BucketMs; k >= 0 && k < int64(len(seconds)) {
			return &seconds[k]
		}
		return &javaSecondCounts{}
	}
	var flying javaCalls
	complete := func(until int64) {
		for len(flying) > 0 && flying[0].done <= until {
			x := heap.Pop(&flying).(javaCall)
			for _, b := range breakers {
				b.OnComplete(x.done, x.rt, x.failed)
			}
			sc := count(x.done)
			sc.success++
			sc.rtSum += x.rt
			if x.failed {
				sc.exception++
			}
		}
	}
	seq := 0
	for t := float64(t0) + 1000*r.ExpFloat64()/j.QPS; t < float64(end); t += 1000 * r.ExpFloat64() / j.QPS {
		at := int64(t)
		complete(at)
		pass, probes := true, []*core.Breaker(nil)
		for _, b := range breakers {
			ok, probe := b.TryPass(at)
			if !ok {
				pass = false
				break
			}
			if probe {
				probes = append(probes, b)
			}
		}
		if !pass {
			for _, b := range probes {
				b.AbortProbe(at)
			}
			count(at).block++
			continue
		}
		count(at).pass++
		rt, failed := j.answer(name, time.Duration(at-t0)*time.Millisecond, r)
		seq++
		heap.Push(&flying, javaCall{done: at + rt, rt: rt, failed: failed, seq: seq})
	}
	complete(math.MaxInt64)
	return seconds, nil
}

// answer is how long a call at offset t takes on the instance, and
// whether it fails: the first fault that takes it, else the healthy
// service.
func (j *JavaService) answer(name string, t time.Duration, r *randSource) (rt int64, failed bool) {
	c := j.Calls
	lat, rate := c.Latency, c.ErrorRate
	if lat == nil {
		lat = Fixed(20 * time.Millisecond)
	}
	for i := range c.Faults {
		f := &c.Faults[i]
		if sh := f.share(t); sh > 0 && f.hits(name) && r.Float64() < sh {
			if f.Latency != nil {
				lat = f.Latency
			}
			rate = f.ErrorRate
			break
		}
	}
	rt = max(lat.Sample(r.Rand).Milliseconds(), 1)
	return rt, r.Float64() < rate
}
