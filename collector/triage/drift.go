package triage

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
)

// The rule-drift detector, and the rule comparison it rests on.

type drift struct {
	listed    bool
	active    bool
	since     int64
	groups    []RuleGroup // while active; their Instances are never changed in place
	keys      []groupKey  // groups[i]'s, while active
	peak      []RuleGroup // the groups holding the most instances in the episode
	reported  bool
	from, to  int64
	repGroups []RuleGroup
}

// recomputeDrift compares the rules of the app's instances at time ts after
// instance x (nil: none) joined or changed its rules for the resources in
// only (nil: all). Resources drifting are regrouped (their groups carry
// versions): x alone moves, from its group to its new one (moveInGroups),
// so that a rollout to thousands of instances costs each rules message
// what x's moves cost, not a regrouping of every instance; when x is nil
// (an instance left) they are grouped again. The others were agreed on by
// every instance but x, so x is compared with one of them.
// rules compares the instance's new rules with its app's, on the
// resources whose rules it had or has.
func (d *driftDetector) rules(in *instState, ts int64, prev *fleet.Rules) {
	if !in.attached {
		return
	}
	var changed map[string]struct{} // resources whose comparison may change; nil: all
	if prev != nil {
		changed = map[string]struct{}{}
		for r := range prev.Resources {
			changed[r] = struct{}{}
		}
		for r := range in.rules() {
			changed[r] = struct{}{}
		}
	}
	d.e.recomputeDrift(in.app, ts, in, changed)
}

// joined compares the rules of an instance that joined its app's
// comparisons (replacing one of its name, or nil); left, those left when
// one left (leaving can end drift, not start it).
func (d *driftDetector) joined(in *instState, ts int64, replaced *instState) {
	switch {
	case in.hasRules():
		d.e.recomputeDrift(in.app, ts, in, nil)
	case replaced != nil && replaced != in && replaced.hasRules():
		// The instance it replaces under its name had rules: it left.
		d.e.recomputeDrift(in.app, ts, nil, nil)
	}
}

func (d *driftDetector) left(in *instState, ts int64) {
	if in.hasRules() {
		d.e.recomputeDrift(in.app, ts, nil, nil)
	}
}

func (e *Engine) recomputeDrift(a *appState, ts int64, x *instState, only map[string]struct{}) {
	var insts []*instState // with rules, sorted by name: taken when needed
	ruled := func() []*instState {
		if insts == nil {
			for _, in := range a.insts {
				if in.hasRules() {
					insts = append(insts, in)
				}
			}
			slices.SortFunc(insts, func(x, y *instState) int { return strings.Compare(x.id.Name, y.id.Name) })
		}
		return insts
	}
	var ref *instState // an instance other than x
	for _, in := range a.insts {
		if in != x && in.hasRules() {
			ref = in
			break
		}
	}
	for _, ar := range a.ars {
		d := &ar.drift
		var groups []RuleGroup
		var keys []groupKey
		var contents int
		switch {
		case d.active && x != nil:
			groups, keys, contents = d.moveInGroups(a, x, ar.resource)
		case d.active:
			groups, keys, contents = groupRules(ruled(), ar.resource)
		default:
			if x == nil || ref == nil || ar.ruleCount == 0 {
				continue
			}
			if _, ok := only[ar.resource]; only != nil && !ok {
				continue
			}
			if ruleKey(x, ar.resource) == ruleKey(ref, ar.resource) {
				continue
			}
			groups, keys, contents = groupRules(ruled(), ar.resource)
		}
		if contents >= 2 {
			if !d.active {
				d.active, d.since = true, ts
				if !d.listed {
					d.listed = true
					e.drift.ars = append(e.drift.ars, ar)
				}
			}
			d.groups, d.keys = groups, keys
			if groupedInstances(groups) >= groupedInstances(d.peak) {
				d.peak = groups
			}
			continue
		}
		if d.active {
			d.active = false
			if ts-d.since >= e.cfg.GraceMs {
				if !d.reported {
					d.reported, d.from, d.to = true, d.since, ts
				}
				d.from, d.to = min(d.from, d.since), max(d.to, ts)
				// Instances leaving can end an episode: report it as it
				// stood at its widest, not as the last one left saw it.
				d.repGroups = d.peak
			}
			d.groups, d.keys, d.peak = nil, nil, nil
		}
	}
}

// groupKey is what tells a group of groupRules apart besides its version,
// and what it keeps of its instances besides their names.
type groupKey struct {
	content string  // the rules' interned content (resRules.key), "" for none
	at      []int64 // the instances' ruleHist.versionAt, in the order of their names
}

// moveInGroups is groupRules after instance x changed (or joined), from
// the groups d holds for resource: x leaves its group and joins the one of
// its version and content now; the groups it changes are copied, the
// others shared. The first instance of a group by name lends it its rules.
func (d *drift) moveInGroups(a *appState, x *instState, resource string) ([]RuleGroup, []groupKey, int) {
	content, rr := "", x.rulesOf(resource)
	if rr != nil {
		content = rr.Key
	}
	at := x.ruleHist.versionAt
	groups, keys := slices.Clone(d.groups), slices.Clone(d.keys)
	for i := range groups {
		j, ok := slices.BinarySearch(groups[i].Instances, x.id.Name)
		if !ok {
			continue
		}
		if keys[i].content == content && groups[i].Version == x.id.Rules.Version && keys[i].at[j] == at {
			// Where it was; its rules may differ in what is not compared
			// (retryTimeoutMs), and the group shows its first instance's.
			if j == 0 {
				groups[i].Rule = ruleSet(rr)
				return groups, keys, countContents(keys)
			}
			return d.groups, d.keys, countContents(keys)
		}
		if len(groups[i].Instances) == 1 {
			groups, keys = slices.Delete(groups, i, i+1), slices.Delete(keys, i, i+1)
			break
		}
		g, k := &groups[i], &keys[i]
		g.Instances = slices.Delete(slices.Clone(g.Instances), j, j+1)
		k.at = slices.Delete(slices.Clone(k.at), j, j+1)
		g.FirstSeen = slices.Min(k.at)
		if j == 0 {
			g.Rule = ruleSet(a.insts[g.Instances[0]].rulesOf(resource))
		}
		break
	}
	i := slices.IndexFunc(groups, func(g RuleGroup) bool { return g.Version == x.id.Rules.Version })
	for ; i >= 0 && i < len(groups); i++ {
		if groups[i].Version == x.id.Rules.Version && keys[i].content == content {
			break
		}
	}
	if i < 0 || i == len(groups) {
		groups = append(groups, RuleGroup{Version: x.id.Rules.Version, Rule: ruleSet(rr), Instances: []string{x.id.Name}, FirstSeen: at})
		keys = append(keys, groupKey{content: content, at: []int64{at}})
	} else {
		g, k := &groups[i], &keys[i]
		j, _ := slices.BinarySearch(g.Instances, x.id.Name)
		g.Instances = slices.Insert(slices.Clone(g.Instances), j, x.id.Name)
		k.at = slices.Insert(slices.Clone(k.at), j, at)
		g.FirstSeen = min(g.FirstSeen, at)
		if j == 0 {
			g.Rule = ruleSet(rr)
		}
	}
	sortGroups(groups, keys)
	return groups, keys, countContents(keys)
}

// ruleSet is a copy of rr's rules (none for nil).
func ruleSet(rr *resRules) RuleSet {
	if rr == nil {
		return RuleSet{}
	}
	return RuleSet{Breakers: slices.Clone(rr.Breakers), Flows: slices.Clone(rr.Flows)}
}

// sortGroups orders groups and their keys together: the largest first, then
// by version, then by content.
func sortGroups(groups []RuleGroup, keys []groupKey) {
	idx := make([]int, len(groups))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(x, y int) int {
		if nx, ny := len(groups[x].Instances), len(groups[y].Instances); nx != ny {
			return ny - nx
		}
		if c := strings.Compare(groups[x].Version, groups[y].Version); c != 0 {
			return c
		}
		return strings.Compare(keys[x].content, keys[y].content)
	})
	gs, ks := slices.Clone(groups), slices.Clone(keys)
	for i, j := range idx {
		groups[i], keys[i] = gs[j], ks[j]
	}
}

// countContents counts the distinct contents among groups' keys.
func countContents(keys []groupKey) int {
	n := 0
	for i, k := range keys {
		if !slices.ContainsFunc(keys[:i], func(h groupKey) bool { return h.content == k.content }) {
			n++
		}
	}
	return n
}

// groupedInstances counts the instances in groups.
func groupedInstances(groups []RuleGroup) int {
	n := 0
	for _, g := range groups {
		n += len(g.Instances)
	}
	return n
}

// ruleKey is the content of an instance's rules for a resource ("" for
// none). Contents are interned, so comparing equal ones is cheap.
func ruleKey(in *instState, resource string) string {
	if rr := in.rulesOf(resource); rr != nil {
		return rr.Key
	}
	return ""
}

// groupRules groups instances (sorted by name) by rule version and content
// for one resource, largest group first, and counts the distinct contents.
// A group is told by its version and its content, compared apart: the
// contents are interned (shareRules), so equal ones compare at once.
func groupRules(insts []*instState, resource string) ([]RuleGroup, []groupKey, int) {
	var groups []RuleGroup
	var keys []groupKey
	for _, in := range insts {
		content := ""
		rr := in.rulesOf(resource)
		if rr != nil {
			content = rr.Key
		}
		i := slices.IndexFunc(keys, func(k groupKey) bool { return k.content == content })
		for ; i >= 0 && i < len(keys); i++ {
			if keys[i].content == content && groups[i].Version == in.id.Rules.Version {
				break
			}
		}
		if i < 0 || i == len(keys) {
			groups = append(groups, RuleGroup{Version: in.id.Rules.Version, Rule: ruleSet(rr), FirstSeen: in.ruleHist.versionAt})
			keys = append(keys, groupKey{content: content})
			i = len(groups) - 1
		}
		groups[i].Instances = append(groups[i].Instances, in.id.Name)
		keys[i].at = append(keys[i].at, in.ruleHist.versionAt)
		groups[i].FirstSeen = min(groups[i].FirstSeen, in.ruleHist.versionAt)
	}
	sortGroups(groups, keys)
	return groups, keys, countContents(keys)
}

// driftDetector is the rule-drift detector's own state: the engine it
// observes, and its ars: app x resource that had rule drift.
type driftDetector struct {
	e   *Engine
	ars []*appRes
}

func (d *driftDetector) init(e *Engine) detector { d.e = e; return d }
func (*driftDetector) kind() Kind                { return KindRuleDrift }

// rule-drift: an episode starts when the present instances of the app (those
// with rules that have not left: see Left) first disagree on the resource's
// rules, and ends when they agree again or the disagreeing ones leave.
// Episodes shorter than GraceMs (a push reaching the instances a moment
// apart) are not reported. It is critical while an episode lasting GraceMs
// is still open at now, with To = now and its current groups, or ended at
// now; else a warning spanning the reported episodes, with the groups of the
// latest at its widest.
func (d *driftDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	for _, ar := range e.drift.ars {
		d := &ar.drift
		f := Finding{Kind: KindRuleDrift, App: ar.app.name, Resource: ar.resource}
		var groups []RuleGroup
		switch {
		case d.active && now-d.since >= e.cfg.GraceMs:
			f.Severity, groups = Critical, d.groups
			f.From, f.To = d.since, max(now, d.since)
			if d.reported {
				f.From = min(d.from, d.since)
			}
		case d.reported:
			// Still critical when it ended at now: the instances left at
			// the very end of the input (a fleet stopped after the
			// recording), not because they came to agree.
			f.Severity, groups = severity(d.to >= now), d.repGroups
			f.From, f.To = d.from, d.to
		default:
			continue
		}
		groups = cloneGroups(groups)
		f.Facts = &RuleDriftFacts{Groups: groups, Newest: newest(groups)}
		var all []string
		for _, g := range groups {
			all = append(all, g.Instances...)
		}
		slices.Sort(all)
		f.Instances = slices.Compact(all)
		words(&f)
		out = append(out, f)
	}
	return out
}

func cloneGroups(gs []RuleGroup) []RuleGroup {
	out := make([]RuleGroup, len(gs))
	for i, g := range gs {
		out[i] = RuleGroup{
			Version:   g.Version,
			Rule:      RuleSet{Breakers: slices.Clone(g.Rule.Breakers), Flows: slices.Clone(g.Rule.Flows)},
			Instances: slices.Clone(g.Instances),
			FirstSeen: g.FirstSeen,
		}
	}
	return out
}

// newest is the version first seen last among the groups with rules for the
// resource (the one the push was meant to spread; an empty rule set is an
// instance that has not loaded its rules, or lost them), the larger group
// on a tie.
func newest(groups []RuleGroup) string {
	best := -1
	for i, g := range groups {
		if len(g.Rule.Breakers)+len(g.Rule.Flows) > 0 && (best < 0 || g.FirstSeen > groups[best].FirstSeen) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return groups[best].Version
}

// RuleGroup is the instances that report one rule version, and that
// version's rules for the finding's resource.
type RuleGroup struct {
	Version   string   `json:"version"`
	Rule      RuleSet  `json:"rule"`
	Instances []string `json:"instances"`
	// FirstSeen is when the earliest of the instances first sent the
	// version, Unix ms.
	FirstSeen int64 `json:"firstSeen"`
}

// MarshalJSON writes an empty list of instances as [], never null.
func (g RuleGroup) MarshalJSON() ([]byte, error) {
	type plain RuleGroup
	p := plain(g)
	if p.Instances == nil {
		p.Instances = []string{}
	}
	return json.Marshal(p)
}

// RuleDriftFacts: instances of one app with different rules.
type RuleDriftFacts struct {
	// Groups are the instances by rule version, largest first.
	Groups []RuleGroup `json:"groups"`
	// Newest is the version first seen last among the groups with rules
	// for the resource: the one the push was meant to spread.
	Newest string `json:"newest"`
}

// Kind is KindRuleDrift.
func (*RuleDriftFacts) Kind() Kind { return KindRuleDrift }

// Evidence lists the newest version, and every group with when it was
// first seen and its rules.
func (f *RuleDriftFacts) Evidence() []Fact {
	out := make([]Fact, 0, len(f.Groups)+1)
	if f.Newest != "" {
		out = append(out, Fact{Label: "Newest", Parts: []Part{{Text: "version "}, {Input: []string{f.Newest}}}})
	}
	for i, g := range f.Groups {
		n := int64(len(g.Instances))
		out = append(out, Fact{Label: "Group " + itoa(int64(i+1)), Rules: &f.Groups[i].Rule, Parts: []Part{
			{Text: "version "}, {Input: []string{g.Version}},
			{Text: ", first seen " + fmtTime(g.FirstSeen) + ", " + itoa(n) + " " + plural(n, "instance", "instances") + ": "}, {Input: g.Instances}}})
	}
	return out
}
