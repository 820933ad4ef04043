package triage

import (
	"cmp"
	"slices"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
)

// Rule history: the versions each instance ran over the input, with when,
// and the versions each app ran, with when each was first seen. Rule
// drift reads it to tell the newest version (the one first seen last,
// never one the app ran before another) and the instances that went back
// to an older version (reverted).

// Bounds of the rule history.
const (
	// maxVersionSteps is how many version changes are kept per instance:
	// the oldest go first, counted in versionLog.dropped.
	maxVersionSteps = 64
	// maxAppVersions is how many versions are kept per app. Past it the
	// quarter first seen earliest is forgotten (counted in
	// appState.forgotten), and a version first seen after that may be one
	// of them coming back: it is never told as the newest, nor as the
	// older version of a revert.
	maxAppVersions = 1 << 14
	// maxReverts is how many reverts are kept per app and resource: the
	// oldest go first, counted in drift.revertsDropped.
	maxReverts = 64
)

// versionStep is one version an instance ran: from at, sent by the
// process that started at proc (its hello's startedAt, 0 unknown).
type versionStep struct {
	version string
	at      int64
	proc    int64
	rules   *fleet.Rules
}

// versionLog is an instance's versions in the order it ran them: a step
// for each change of version or of process.
type versionLog struct {
	steps   []versionStep
	dropped int64
}

// appVersion is one version an app's instances ran: when first seen, and
// its rules as they came then.
type appVersion struct {
	firstSeen int64
	rules     *fleet.Rules
	// late: first seen after the app forgot versions, so it may be one of
	// them coming back.
	late bool
}

// Revert is an instance that went back to a version its app ran before
// the one it left: a restart loading a stale local snapshot of the rules,
// or a second loadRules (an init class) replacing the pushed ones.
type Revert struct {
	Instance string `json:"instance"`
	// From is the version it left, To the older one it went back to.
	From string `json:"from"`
	To   string `json:"to"`
	// At is when it reported To, Unix ms.
	At int64 `json:"at"`
	// Restarted says that a new process (a later hello startedAt) sent
	// To: the old version came with a restart.
	Restarted bool `json:"restarted"`
}

// noteVersion records the version of an instance's rules message at ts
// in its history and its app's, and the reverts it makes: one per
// resource whose rules differ from those of the instance's latest version
// with rules for it, when that version was first seen after this one.
func (e *Engine) noteVersion(in *instState, ts int64) {
	r := in.id.Rules
	if r == nil {
		return
	}
	log := &in.versions
	proc := in.id.StartedAt
	if n := len(log.steps); n > 0 && log.steps[n-1].version == r.Version && log.steps[n-1].proc == proc {
		return // the same version again
	}
	a := in.app
	a.seeVersion(r, ts)
	step := versionStep{version: r.Version, at: ts, proc: proc, rules: r}
	to := a.versions[r.Version]
	for res, rr := range r.Resources {
		from := log.lastWith(res)
		if from == nil || from.version == step.version || from.rules.Of(res).Key == rr.Key {
			continue
		}
		fv := a.versions[from.version]
		if to.late || fv == nil || to.firstSeen >= fv.firstSeen {
			continue
		}
		e.appRes(a, res).drift.addRevert(Revert{
			Instance: in.id.Name, From: from.version, To: step.version, At: ts, Restarted: from.proc != proc,
		})
	}
	if len(log.steps) == maxVersionSteps {
		log.steps = slices.Delete(log.steps, 0, 1)
		log.dropped++
	}
	log.steps = append(log.steps, step)
}

// lastWith is the latest step with rules for resource (nil: none kept).
func (l *versionLog) lastWith(resource string) *versionStep {
	for i := len(l.steps) - 1; i >= 0; i-- {
		if l.steps[i].rules.Of(resource) != nil {
			return &l.steps[i]
		}
	}
	return nil
}

// seeVersion notes that one of the app's instances ran r at ts.
func (a *appState) seeVersion(r *fleet.Rules, ts int64) {
	if v := a.versions[r.Version]; v != nil {
		if ts < v.firstSeen {
			v.firstSeen, v.rules = ts, r
		}
		return
	}
	if a.versions == nil {
		a.versions = map[string]*appVersion{}
	}
	if len(a.versions) >= maxAppVersions {
		a.forget()
	}
	a.versions[r.Version] = &appVersion{firstSeen: ts, rules: r, late: a.forgotten > 0}
}

// forget drops the quarter of the app's versions first seen earliest.
func (a *appState) forget() {
	type seen struct {
		version string
		at      int64
	}
	all := make([]seen, 0, len(a.versions))
	for v, x := range a.versions {
		all = append(all, seen{v, x.firstSeen})
	}
	slices.SortFunc(all, func(x, y seen) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		return cmp.Compare(x.version, y.version)
	})
	for _, s := range all[:len(all)/4] {
		delete(a.versions, s.version)
		a.forgotten++
	}
}

// firstSeen is when the app first ran version (0: not kept).
func (a *appState) firstSeen(version string) int64 {
	if v := a.versions[version]; v != nil {
		return v.firstSeen
	}
	return 0
}

// addRevert keeps a revert of the resource's rules.
func (d *drift) addRevert(r Revert) {
	if len(d.reverts) == maxReverts {
		d.reverts = slices.Delete(d.reverts, 0, 1)
		d.revertsDropped++
	}
	d.reverts = append(d.reverts, r)
}

// NewestUnknown says why rule-drift's newest version cannot be told.
type NewestUnknown string

// The reasons the newest version cannot be told.
const (
	// NewestTold: it can.
	NewestTold NewestUnknown = ""
	// NewestTie: versions with different rules for the resource were
	// first seen at the same instant, the latest any was.
	NewestTie NewestUnknown = "tie"
	// NewestLeft: the version first seen last with rules for the resource
	// is run by none of the instances compared: every version they run
	// was run before it.
	NewestLeft NewestUnknown = "left"
	// NewestForgotten: it may be a version the app ran before the
	// versions it forgot (maxAppVersions).
	NewestForgotten NewestUnknown = "forgotten"
	// NewestNone: no version has rules for the resource.
	NewestNone NewestUnknown = "none"
)

// newestOf tells the newest version of app a's rules for resource among
// groups (with FirstSeen set; keys[i] is groups[i]'s content), counting
// every version the app ran and first saw at or before until: the version
// with rules for the resource first seen last. A group of another version
// with the same rules for the resource stands for it (a retryTimeoutMs of
// each instance's own makes a version per instance), the one first seen
// latest. The third result is when the versions first seen last were.
func newestOf(a *appState, resource string, groups []RuleGroup, keys []groupKey, until int64) (string, NewestUnknown, int64) {
	var latest int64
	var key string
	found, tie, late := false, false, false
	for _, v := range a.versions {
		rr := v.rules.Of(resource)
		if rr == nil || v.firstSeen > until {
			continue
		}
		switch {
		case !found || v.firstSeen > latest:
			found, latest, key, tie, late = true, v.firstSeen, rr.Key, false, v.late
		case v.firstSeen == latest:
			tie = tie || rr.Key != key
			late = late || v.late
		}
	}
	switch {
	case !found:
		return "", NewestNone, 0
	case tie:
		return "", NewestTie, latest
	case late:
		return "", NewestForgotten, latest
	}
	best := -1
	for i, g := range groups {
		if keys[i].content == key && (best < 0 || g.FirstSeen > groups[best].FirstSeen) {
			best = i
		}
	}
	if best < 0 {
		return "", NewestLeft, latest
	}
	return groups[best].Version, NewestTold, latest
}
