package source

import (
	"maps"
	"slices"
	"sync"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// What a Java target's poller keeps across its connections, so that a
// reconnect goes on from what it delivered, and what the Java targets of
// one Dial share: the source reads nothing of the store.

// javaMemory is what a Java target's polls delivered and the sink took:
// where the instance's data ends, and the breaker state inferred for each
// resource, as the store holds them from those messages.
type javaMemory struct {
	// dataEnd is the end of the data taken, on the sender's clock (a
	// buckets message's ts on its bucket, or its items' ends).
	dataEnd int64
	// states is each resource's latest inferred transition taken (the
	// inference's transitions name no rule: one per resource).
	states map[string]javaState
}

// javaState is a resource's inferred breaker state and since when.
type javaState struct {
	state core.State
	since int64
}

// took remembers what a message the sink took tells of the instance.
func (j *javaMemory) took(m wire.Message) {
	switch m := m.(type) {
	case *wire.Buckets:
		if m.BucketMs <= 0 {
			return
		}
		j.dataEnd = max(j.dataEnd, floorDown(m.Ts, m.BucketMs))
		for i := range m.Items {
			j.dataEnd = max(j.dataEnd, m.Items[i].Start+m.BucketMs)
		}
	case *wire.State:
		if !m.Inferred {
			return
		}
		// One older than the latest goes in its place in the store's
		// timeline and does not change the state.
		if st, ok := j.states[m.Resource]; ok && m.Ts < st.since {
			return
		}
		if j.states == nil {
			j.states = map[string]javaState{}
		}
		j.states[m.Resource] = javaState{state: m.To, since: m.Ts}
	}
}

// resume starts a connection to instance at now: the first second its
// first poll reads (next), and the inference (from the states the target's
// polls left) with the next second to feed it (fed). A target that
// delivered nothing yet is read from javaBacklog ago. One that did is read
// from where its data ends, so that a reconnect fills its gap from Java's
// metric logs, at most javaCatchUp back; lost is when that data ends when
// it is older than that: once the first poll answers, [lost, next) is
// counted as never received (DialSink.Unreceived).
func (j *javaMemory) resume(instance string, now int64) (inf *metriclog.Inference, next, fed, lost int64) {
	inf = metriclog.NewInference(instance)
	next = floorDown(now-javaBacklog.Milliseconds(), metriclog.BucketMs)
	for name, st := range j.states {
		if st.state != core.Closed {
			inf.Restore(name, st.state, st.since)
		}
	}
	end := floorDown(j.dataEnd, metriclog.BucketMs)
	if end > 0 && end < next {
		next = max(end, floorDown(now-javaCatchUp.Milliseconds(), metriclog.BucketMs))
		if end < next {
			lost = end
		}
	}
	return inf, next, max(next, end), lost
}

// javaApps are the resources the Java targets of one Dial reported, by
// app: a regex rule governs every resource of its app that an instance
// reported, on every instance that has the rule (javaExpand).
type javaApps struct {
	mu   sync.Mutex
	apps map[string]map[string]bool
}

// javaMaxResources bounds the resources remembered of one Java target
// and of one app (twice the store's default --max-resources per instance,
// which turns away, and counts, what is beyond its own): a target naming
// new resources at every poll cannot grow the sets without end. A
// resource past the bound is still delivered; only a regex rule is not
// listed over it.
const javaMaxResources = 10_000

// add tells that an instance of app reported resource; false when app
// has javaMaxResources already.
func (a *javaApps) add(app, resource string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.apps == nil {
		a.apps = map[string]map[string]bool{}
	}
	if a.apps[app] == nil {
		a.apps[app] = map[string]bool{}
	}
	set := a.apps[app]
	if !set[resource] && len(set) >= javaMaxResources {
		return false
	}
	set[resource] = true
	return true
}

// resources lists the resources of app, sorted.
func (a *javaApps) resources(app string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.apps[app]))
}
