package triage

import (
	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// Feeder feeds an Engine by instance name, for callers without a fleet model
// of their own (tests, examples, a report built by hand). It keeps each
// name's fleet record (fleet.Instance) and current handle, as the
// collector's store does, and decides nothing else: a hello is judged by
// JudgeHello, the collector's rule too; an instance is gone after its Bye
// and back with its next message (a Feeder has no stale period: the
// collector's fleet model adds that). The collector feeds its engine
// itself, through the handles.
//
// The Engine's methods (Findings, Counts, ...) are reached through the
// embedded *Engine. A Feeder is not safe for concurrent use.
type Feeder struct {
	*Engine
	insts map[string]*fed
	book  fleet.RuleBook
}

// fed is what a Feeder knows of one name.
type fed struct {
	id      *fleet.Instance
	in      Instance
	helloed bool
	tracks  map[[2]string]*fleet.Track // by resource and rule id
}

// NewFeeder returns a Feeder of a new Engine; see Config for the zero value.
func NewFeeder(cfg Config) *Feeder {
	return &Feeder{Engine: New(cfg), insts: map[string]*fed{}}
}

// instance returns the name's current instance, beginning one for a name
// not seen before; one gone comes back at ts.
func (f *Feeder) instance(name string, ts int64) *fed {
	d := f.insts[name]
	if d == nil {
		d = &fed{id: &fleet.Instance{Name: name}}
		d.in = f.NewInstance(d.id)
		f.insts[name] = d
	}
	if d.id.Gone {
		d.id.Gone = false
		f.Returned(d.in, ts)
	}
	return d
}

// Hello feeds an instance's hello: which app it belongs to and when its
// process started (see JudgeHello for what it can mean).
func (f *Feeder) Hello(instance, app string, ts, startedAt int64) {
	d := f.instance(instance, ts)
	ch := JudgeHello(d.helloed, d.id.App, d.id.StartedAt, app, startedAt)
	switch ch {
	case HelloNewProcess:
		d.id.Gone, d.id.LeftAt = true, ts
		d.id, d.tracks = &fleet.Instance{Name: instance}, nil
	case HelloRestart:
		for _, t := range d.tracks { // a new process's breakers start CLOSED
			t.State = core.Closed
		}
	}
	d.helloed, d.id.App = true, app
	d.id.StartedAt = max(d.id.StartedAt, startedAt)
	d.in = f.Engine.Hello(d.in, ch, d.id, ts)
}

// Rules feeds an instance's complete rule set: its record's rules are made
// by the Feeder's fleet.RuleBook, as the collector's store makes them.
func (f *Feeder) Rules(instance string, ts int64, version string, breakers []core.BreakerRule, flows []core.FlowRule, params ...core.HotParamRule) {
	d := f.instance(instance, ts)
	f.mu.Lock()
	prev := d.id.Rules
	d.id.Rules = f.book.Make(version, breakers, flows, params)
	f.mu.Unlock()
	f.Engine.Rules(d.in, ts, prev)
}

// Bucket feeds one completed bucket of an instance's resource.
func (f *Feeder) Bucket(instance string, b BucketStat) {
	bm := b.BucketMs
	if bm <= 0 {
		bm = core.ResourceBucketMs
	}
	end := b.Start + bm
	in := f.instance(instance, end).in
	f.Engine.Bucket(f.Series(in, b.Resource, end), &b)
}

// Unreceived notes in an instance's record that its buckets of [from, to)
// never arrived: a silence overlapping them is not idle traffic.
func (f *Feeder) Unreceived(instance string, from, to int64) {
	if d := f.insts[instance]; d != nil && to > from {
		f.mu.Lock()
		d.id.Unreceived = fleet.AddSpan(d.id.Unreceived, Span{From: from, To: to})
		f.mu.Unlock()
	}
}

// Transition feeds one breaker state change of an instance, which its
// breaker's track (fleet.Track) then holds, as the collector's store does.
func (f *Feeder) Transition(instance string, t core.Transition) {
	if !validState(t.From) || !validState(t.To) || t.From == t.To {
		return // no fact: it neither brings the instance back nor begins a series
	}
	d := f.instance(instance, t.AtMs)
	k := [2]string{t.Resource, t.RuleID}
	tr := d.tracks[k]
	if tr == nil {
		if d.tracks == nil {
			d.tracks = map[[2]string]*fleet.Track{}
		}
		tr = &fleet.Track{RuleID: t.RuleID}
		d.tracks[k] = tr
	}
	f.Engine.Transition(f.Series(d.in, t.Resource, t.AtMs), tr, t)
	f.mu.Lock()
	tr.State, tr.Since = t.To, t.AtMs
	f.mu.Unlock()
}

// Bye feeds an instance's bye at ts: it is gone until its next message.
func (f *Feeder) Bye(instance string, ts int64) {
	d := f.insts[instance]
	if d == nil {
		f.Left(Instance{}, ts)
		return
	}
	if d.id.Gone {
		f.Left(Instance{}, ts)
		return
	}
	f.mu.Lock()
	d.id.Gone, d.id.LeftAt = true, ts
	f.mu.Unlock()
	f.Left(d.in, ts)
}
