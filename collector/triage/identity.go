package triage

import "github.com/sentinel-top/sentinel-top/collector/fleet"

// Identity: the engine never decides which process a message belongs to,
// whether it restarted or whether it is still there. Its caller's fleet
// model does, once (JudgeHello is the rule for hellos), and tells the engine
// what it decided through handles: an Instance per emitting process and a
// Series per resource of one, created and retired only on the caller's word.
// Facts (Bucket, Transition, Rules) name a handle, so feeding one looks
// nothing up by name.

// Instance is the engine's handle of one emitting process, from NewInstance
// or Hello. The zero Instance is none; handles are compared with ==.
type Instance struct{ in *instState }

// Series is the engine's handle of one resource on one instance, from
// Engine.Series. The zero Series is none.
type Series struct{ s *series }

// HelloChange is what a hello means for a known instance name.
type HelloChange int

const (
	// HelloSame: the same process says hello again.
	HelloSame HelloChange = iota
	// HelloFirst: the instance's first hello names its app; what it sent
	// before (counted under no app) moves there.
	HelloFirst
	// HelloRestart: the same app with a later startedAt: the process
	// restarted, its breakers start CLOSED and its buckets are new.
	HelloRestart
	// HelloNewProcess: another app after a hello: another process took the
	// name. The old instance leaves at once and a new one begins.
	HelloNewProcess
)

// JudgeHello is the one rule that decides what a hello (app, startedAt)
// means for an instance name already known: whether a hello came before
// (helloed), and the app and startedAt the instance has (the latest
// startedAt seen, 0 for none). The collector's fleet model and Feeder both
// judge with it.
func JudgeHello(helloed bool, app string, startedAt int64, newApp string, newStartedAt int64) HelloChange {
	switch {
	case !helloed:
		return HelloFirst
	case app != newApp:
		return HelloNewProcess
	case startedAt != 0 && newStartedAt > startedAt:
		return HelloRestart
	}
	return HelloSame
}

// NewInstance begins the engine's instance of a fleet model's record,
// present and of no app until its first hello (data may come before it).
// A record taken by another process gets a new instance (Hello).
func (e *Engine) NewInstance(id *fleet.Instance) Instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Instance{e.newInstance(id, "")}
}

// Hello tells the engine of an instance's hello (its ts) and what the
// fleet model judged it to mean (see JudgeHello), once the model's record
// id says so: its App and StartedAt. It returns the instance's handle from
// now on: for HelloNewProcess, a new one for id, the record of the new
// process (the old record the model marked gone); the same one otherwise.
func (e *Engine) Hello(h Instance, ch HelloChange, id *fleet.Instance, ts int64) Instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observeState(ts)
	app := id.App
	if app != "" {
		e.appNames[app] = struct{}{}
	}
	in := h.in
	switch ch {
	case HelloFirst:
		if in.app.name != app {
			e.moveApp(in, app, ts)
			e.attach(in, ts)
		}
	case HelloNewProcess:
		e.detach(in, ts)
		in = e.newInstance(id, app)
	case HelloRestart:
		for _, s := range in.seriesList {
			e.traceRecord(s, recRestart, id.StartedAt) // ends a spell too
			for _, b := range s.breakers {
				b.restart(id.StartedAt)
			}
			s.hz.close(id.StartedAt)
		}
	}
	return Instance{in}
}

// Left tells the engine that an instance is gone at ts, once the fleet
// model's record says so (Gone, LeftAt): it said bye, or the model found
// it silent past its stale period (one rule for every view). It leaves
// the comparisons of rule drift, unprotected traffic and recovery floods
// at once; conditions it was part of still count as lasting when it left
// at the very end of the input, so a fleet that stops at the end of a
// recording keeps its last findings' severities. The zero Instance only
// notes ts as part of the input.
func (e *Engine) Left(h Instance, ts int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observe(ts)
	if in := h.in; in != nil {
		e.detach(in, ts)
	}
}

// Returned tells the engine that an instance gone (see Left) is back at
// ts, the time of the first fact it sent since.
func (e *Engine) Returned(h Instance, ts int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.attach(h.in, ts)
}

// Series returns the handle of an instance's series of a resource,
// beginning it at ts (the time of its first fact) when the instance has
// none: the instance then reports the resource. An instance keeps its
// series when its first hello moves it to its app.
func (e *Engine) Series(h Instance, resource string, ts int64) Series {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Series{e.seriesFor(h.in, resource, ts)}
}

// newInstance begins an instance of record id, attached to its app.
func (e *Engine) newInstance(id *fleet.Instance, appName string) *instState {
	a := e.appFor(appName)
	e.seq++
	in := &instState{id: id, seq: e.seq, app: a, series: map[string]*series{}}
	e.instList = append(e.instList, in)
	e.instNames[id.Name] = struct{}{}
	e.attach(in, 0)
	return in
}
