package triage

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
)

// Rule history: the versions each instance ran over the input, with when;
// the versions each app ran, with when each was first seen; and, for each
// app and resource, the rules it ran for the resource (their content,
// compared as rule drift compares them), with when each was first seen.
// Rule drift reads it to tell the newest rules (first seen last, never
// rules the app ran before others) and the instances that went back to
// older ones (reverted). Rules are dated by content, not version, so that
// a version of each instance's own (a retryTimeoutMs jittered per
// instance) does not make old rules new.

// Bounds of the rule history.
const (
	// maxVersionSteps is how many version changes are kept per instance:
	// the oldest go first, counted in versionLog.dropped.
	maxVersionSteps = 64
	// maxAppVersions is how many versions are kept per app, and
	// maxContents how many rule contents per app and resource. Past one,
	// the quarter first seen earliest is forgotten (counted); a forgotten
	// version's first seen is then told as the latest forgotten one's (it
	// was at or before), and a content first seen after some were
	// forgotten may be one of them coming back: it is never told as the
	// newest, nor as the older rules of a revert.
	maxAppVersions = 1 << 14
	maxContents    = 1 << 12
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

// contentSeen is when an app first ran one content of a resource's rules;
// late: first seen after the resource's contents were forgotten, so it
// may be one of them coming back.
type contentSeen struct {
	firstSeen int64
	late      bool
}

// Revert is an instance that went back to rules its app ran before the
// ones it left: a restart loading a stale local snapshot of the rules, or
// a second loadRules (an init class) replacing the pushed ones.
type Revert struct {
	Instance string `json:"instance"`
	// From is the version it left, To the older one it went back to.
	From string `json:"from"`
	To   string `json:"to"`
	// At is when it reported To, Unix ms.
	At int64 `json:"at"`
	// Restarted says that a new process (a later hello startedAt) sent
	// To: the old rules came with a restart.
	Restarted bool `json:"restarted"`
}

// noteVersion records the version of an instance's rules message at ts
// in its history and its app's, and the reverts it makes: one per
// resource whose rules differ from those of the instance's latest version
// with rules for it, when the app first ran these rules before those.
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
	a.seeVersion(r.Version, ts)
	for res, rr := range r.Resources {
		d := &e.appRes(a, res).drift
		to := d.seeContent(rr.Key, ts)
		from := log.lastWith(res)
		if from == nil {
			continue
		}
		fk := from.rules.Of(res).Key
		if fk == rr.Key {
			continue
		}
		if fc := d.contents[fk]; to.late || fc == nil || to.firstSeen >= fc.firstSeen {
			continue
		}
		d.addRevert(Revert{Instance: in.id.Name, From: from.version, To: r.Version, At: ts, Restarted: from.proc != proc})
	}
	if len(log.steps) == maxVersionSteps {
		log.steps = slices.Delete(log.steps, 0, 1)
		log.dropped++
	}
	log.steps = append(log.steps, versionStep{version: r.Version, at: ts, proc: proc, rules: r})
}

// noteMoved dates, in app a, the versions and rules an instance ran
// before it moved there.
func (e *Engine) noteMoved(in *instState, a *appState) {
	for _, st := range in.versions.steps {
		a.seeVersion(st.version, st.at)
		for res, rr := range st.rules.Resources {
			e.appRes(a, res).drift.seeContent(rr.Key, st.at)
		}
	}
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

// seeVersion notes that one of the app's instances ran version at ts.
func (a *appState) seeVersion(version string, ts int64) {
	if at, ok := a.versions[version]; ok {
		a.versions[version] = min(at, ts)
		return
	}
	if a.versions == nil {
		a.versions = map[string]int64{}
	}
	if len(a.versions) >= maxAppVersions {
		n, latest := forgetEarliest(a.versions, func(at int64) int64 { return at })
		a.forgotten += n
		a.forgottenTo = max(a.forgottenTo, latest)
	}
	a.versions[version] = ts
}

// firstSeen is when the app first ran version: for one forgotten, the
// latest forgotten one's (it was at or before); 0 for one never run.
func (a *appState) firstSeen(version string) int64 {
	if at, ok := a.versions[version]; ok {
		return at
	}
	if a.forgotten > 0 {
		return a.forgottenTo
	}
	return 0
}

// seeContent notes that one of the app's instances ran rules of content
// key for the resource at ts, and returns when the app first did.
func (d *drift) seeContent(key string, ts int64) *contentSeen {
	if c := d.contents[key]; c != nil {
		c.firstSeen = min(c.firstSeen, ts)
		return c
	}
	if d.contents == nil {
		d.contents = map[string]*contentSeen{}
	}
	if len(d.contents) >= maxContents {
		n, _ := forgetEarliest(d.contents, func(c *contentSeen) int64 { return c.firstSeen })
		d.contentsForgotten += n
	}
	c := &contentSeen{firstSeen: ts, late: d.contentsForgotten > 0}
	d.contents[key] = c
	return c
}

// forgetEarliest deletes the quarter of m first seen earliest (at tells
// when), and returns how many it deleted and the latest of their times.
func forgetEarliest[V any](m map[string]V, at func(V) int64) (n, latest int64) {
	type entry struct {
		key string
		at  int64
	}
	all := make([]entry, 0, len(m))
	for k, v := range m {
		all = append(all, entry{k, at(v)})
	}
	slices.SortFunc(all, func(x, y entry) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		return strings.Compare(x.key, y.key)
	})
	for _, x := range all[:len(all)/4] {
		delete(m, x.key)
		latest = max(latest, x.at)
	}
	return int64(len(all) / 4), latest
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
	// NewestTie: different rules for the resource were first seen at the
	// same instant, the latest any were.
	NewestTie NewestUnknown = "tie"
	// NewestLeft: the rules for the resource first seen last are run by
	// none of the instances compared: every version they run has rules
	// the app ran before others.
	NewestLeft NewestUnknown = "left"
	// NewestForgotten: the rules first seen last may be rules the app ran
	// before those it forgot (maxContents).
	NewestForgotten NewestUnknown = "forgotten"
	// NewestNone: no version has rules for the resource.
	NewestNone NewestUnknown = "none"
)

// newestOf tells the newest version of the resource's rules among groups
// (with FirstSeen set; keys[i] is groups[i]'s content), counting every
// content of them the app ran and first saw at or before until: the
// group whose rules for the resource the app first ran last, and of those
// the group whose version was first seen last (the first in order on a
// tie). A version without rules for the resource is never the newest. The
// third result is when the rules first seen last were (0: none).
func newestOf(d *drift, groups []RuleGroup, keys []groupKey, until int64) (string, NewestUnknown, int64) {
	var latest int64
	var key string
	found, tie, late := false, false, false
	for k, c := range d.contents {
		if c.firstSeen > until {
			continue
		}
		switch {
		case !found || c.firstSeen > latest:
			found, latest, key, tie, late = true, c.firstSeen, k, false, c.late
		case c.firstSeen == latest:
			tie, late = true, late || c.late
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
