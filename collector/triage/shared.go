package triage

import (
	"slices"
)

// The shared-resource detector: one resource name reported by several apps.

// reported records that an app reports a resource.
func (d *sharedDetector) reported(r *resState, appName string, ts int64) {
	if _, ok := r.apps[appName]; ok || appName == "" {
		return
	}
	r.apps[appName] = struct{}{}
	if len(r.apps) == 2 && !r.listed {
		r.listed, r.since = true, ts
		d.res = append(d.res, r)
	}
}

// sharedFinding is a shared resource's finding but for its To and
// timelines, kept while its members are (ok: made from them).
type sharedFinding struct {
	ok bool
	f  Finding
}

// sharedDetector is the shared-resource detector's own state: the engine it
// observes, and its res: resources reported by two or more apps.
type sharedDetector struct {
	e   *Engine
	res []*resState
}

func (d *sharedDetector) init(e *Engine) detector { d.e = e; return d }
func (*sharedDetector) kind() Kind                { return KindSharedResource }

// shared-resource: one finding per resource, whose app is the first of its
// apps in name order (so the finding does not depend on which app connected
// first); instances are those of all its apps. From is when a second app
// reported the resource, To the latest report. Always a warning. Only To
// and the timelines are made at every call, the rest when an instance or
// app joins.
func (d *sharedDetector) findings(_ int64, out []Finding) []Finding {
	e := d.e
	for _, r := range e.shared.res {
		e.sharedMembers(r)
		if !r.finding.ok {
			apps := make([]string, 0, len(r.apps))
			for a := range r.apps {
				apps = append(apps, a)
			}
			slices.Sort(apps)
			f := Finding{
				Kind: KindSharedResource, Severity: Warning, App: apps[0], Resource: r.name,
				From: r.since, Facts: &SharedResourceFacts{Apps: apps}, Instances: r.names,
			}
			words(&f)
			r.finding = sharedFinding{ok: true, f: f}
		}
		f := r.finding.f
		f.To = max(r.last, r.since)
		out = append(out, f)
	}
	return out
}

// sharedMembers is the instances of a shared resource's apps, sorted; kept
// (with their names and its finding) until an instance reports it, an app
// joins it or an instance moves app. Instances that began reporting it since are sorted
// among themselves and merged in: a fleet's instances arriving a few at a
// time cost what arrived, not a sort of every member each time.
func (e *Engine) sharedMembers(r *resState) []*instState {
	at := [3]int{len(r.insts), len(r.apps), e.appMoves}
	if r.members != nil && r.membersAt == at {
		return r.members
	}
	from := 0
	if r.members != nil && r.membersAt[1] == at[1] && r.membersAt[2] == at[2] {
		from = r.membersAt[0] // only new reporters
	}
	var insts []*instState
	for _, in := range r.insts[from:] {
		if _, ok := r.apps[in.app.name]; ok {
			insts = append(insts, in)
		}
	}
	insts = sortInsts(insts)
	names := names(insts)
	if from > 0 {
		insts, names = mergeInsts(r.members, insts), mergeNames(r.names, names)
	}
	r.members, r.names, r.membersAt, r.finding = insts, names, at, sharedFinding{}
	return r.members
}
