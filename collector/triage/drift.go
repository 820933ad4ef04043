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
	peakKeys  []groupKey
	reported  bool
	from, to  int64
	repGroups []RuleGroup
	repKeys   []groupKey
	// endKey is the content the instances agreed on when the latest
	// reported episode ended, and endN how many they were.
	endKey string
	endN   int
	// contents are when the app first ran each content of the resource's
	// rules, and reverts the instances that went back to older ones, the
	// latest maxReverts (history.go).
	contents          map[string]*contentSeen
	contentsForgotten int64
	reverts           []Revert
	revertsDropped    int64
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
				d.peak, d.peakKeys = groups, keys
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
				d.repGroups, d.repKeys = d.peak, d.peakKeys
				d.endKey, d.endN = "", groupedInstances(groups)
				if len(keys) > 0 {
					d.endKey = keys[0].content
				}
			}
			d.groups, d.keys, d.peak, d.peakKeys = nil, nil, nil, nil
		}
	}
}

// groupKey is what tells a group of groupRules apart besides its version.
type groupKey struct {
	content string // the rules' interned content (resRules.key), "" for none
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
	groups, keys := slices.Clone(d.groups), slices.Clone(d.keys)
	for i := range groups {
		j, ok := slices.BinarySearch(groups[i].Instances, x.id.Name)
		if !ok {
			continue
		}
		if keys[i].content == content && groups[i].Version == x.id.Rules.Version {
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
		g := &groups[i]
		g.Instances = slices.Delete(slices.Clone(g.Instances), j, j+1)
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
		groups = append(groups, RuleGroup{Version: x.id.Rules.Version, Rule: ruleSet(rr), Instances: []string{x.id.Name}})
		keys = append(keys, groupKey{content: content})
	} else {
		g := &groups[i]
		j, _ := slices.BinarySearch(g.Instances, x.id.Name)
		g.Instances = slices.Insert(slices.Clone(g.Instances), j, x.id.Name)
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
// contents are interned (shareRules), so equal ones compare at once. The
// groups' FirstSeen is left to findings, from the app's history.
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
			groups = append(groups, RuleGroup{Version: in.id.Rules.Version, Rule: ruleSet(rr)})
			keys = append(keys, groupKey{content: content})
			i = len(groups) - 1
		}
		groups[i].Instances = append(groups[i].Instances, in.id.Name)
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
// latest at its widest. A group's FirstSeen is when the app first ran its
// version; newest and reverted come from the app's rule history
// (history.go): reverted are the reverts of the finding's instances
// within [From, To].
func (d *driftDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	for _, ar := range e.drift.ars {
		d := &ar.drift
		f := Finding{Kind: KindRuleDrift, App: ar.app.name, Resource: ar.resource}
		var groups []RuleGroup
		var keys []groupKey
		switch {
		case d.active && now-d.since >= e.cfg.GraceMs:
			f.Severity, groups, keys = Critical, d.groups, d.keys
			f.From, f.To = d.since, max(now, d.since)
			if d.reported {
				f.From = min(d.from, d.since)
			}
		case d.reported:
			// Still critical when it ended at now: the instances left at
			// the very end of the input (a fleet stopped after the
			// recording), not because they came to agree.
			f.Severity, groups, keys = severity(d.to >= now), d.repGroups, d.repKeys
			f.From, f.To = d.from, d.to
		default:
			continue
		}
		a := ar.app
		groups = cloneGroups(groups)
		for i := range groups {
			groups[i].FirstSeen = a.firstSeen(groups[i].Version)
		}
		x := &RuleDriftFacts{Groups: groups}
		x.Newest, x.Unknown, x.LatestAt = newestOf(d, groups, keys, f.To)
		var all []string
		for _, g := range groups {
			all = append(all, g.Instances...)
		}
		slices.Sort(all)
		f.Instances = slices.Compact(all)
		for _, r := range d.reverts {
			if _, in := slices.BinarySearch(f.Instances, r.Instance); in && r.At >= f.From && r.At <= f.To {
				x.Reverted = append(x.Reverted, r)
			}
		}
		if x.Newest != "" {
			newest := keys[slices.IndexFunc(groups, func(g RuleGroup) bool { return g.Version == x.Newest })].content
			for i, g := range groups {
				if keys[i].content == newest {
					x.on += int64(len(g.Instances))
				} else {
					x.behind = append(x.behind, g.Instances...)
				}
			}
			slices.Sort(x.behind)
			x.endOn = d.endKey == newest
		}
		if x.ended = f.Severity != Critical; x.ended {
			x.endN = int64(d.endN)
		}
		f.Facts = x
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

// RuleGroup is the instances that report one rule version, and that
// version's rules for the finding's resource.
type RuleGroup struct {
	Version   string   `json:"version"`
	Rule      RuleSet  `json:"rule"`
	Instances []string `json:"instances"`
	// FirstSeen is when any instance of the app first sent the version,
	// Unix ms, over the whole input (not only the group's instances).
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
	// Newest is the version with rules for the resource that the app
	// first ran last, over the whole input: the one the push was meant to
	// spread, never a version the app ran before another. Empty when that
	// cannot be told (Unknown says why): no push is then advised.
	Newest string `json:"newest,omitempty"`
	// Reverted are the instances that went back to a version the app ran
	// before the one they left.
	Reverted []Revert `json:"reverted,omitempty"`
	// Unknown says why Newest is empty; LatestAt is when the versions
	// first seen last were (0: none).
	Unknown  NewestUnknown `json:"-"`
	LatestAt int64         `json:"-"`

	on     int64    // instances of the groups that run the newest's rules
	behind []string // those that do not, sorted
	ended  bool     // the episode ended before the input did
	endN   int64    // ended: the instances present when it ended
	endOn  bool     // who all ran the newest's rules then
}

// Kind is KindRuleDrift.
func (*RuleDriftFacts) Kind() Kind { return KindRuleDrift }

// Evidence lists the newest version, the instances to push it to, every
// revert, and every group with when it was first seen and its rules.
func (f *RuleDriftFacts) Evidence() []Fact {
	out := make([]Fact, 0, len(f.Groups)+len(f.Reverted)+2)
	switch {
	case f.Newest != "":
		out = append(out, Fact{Label: "Newest", Parts: []Part{{Text: "version "}, {Input: []string{f.Newest}}}})
	case f.Unknown != NewestTold:
		out = append(out, text("Newest", "cannot be told ("+newestUnknownWords(f.Unknown, f.LatestAt)+")"))
	}
	if f.Newest != "" && len(f.behind) > 0 && !f.ended {
		out = append(out, Fact{Label: "Push again", Parts: []Part{{Text: "version "}, {Input: []string{f.Newest}}, {Text: " to "}, {Input: f.behind}}})
	}
	for _, r := range f.Reverted {
		how := ", without a restart"
		if r.Restarted {
			how = ", after a restart"
		}
		out = append(out, Fact{Label: "Reverted", Parts: []Part{{Input: []string{r.Instance}}, {Text: " from version "}, {Input: []string{r.From}},
			{Text: " back to the older "}, {Input: []string{r.To}}, {Text: " at " + fmtTime(r.At) + how}}})
	}
	for i, g := range f.Groups {
		n := int64(len(g.Instances))
		out = append(out, Fact{Label: "Group " + itoa(int64(i+1)), Rules: &f.Groups[i].Rule, Parts: []Part{
			{Text: "version "}, {Input: []string{g.Version}},
			{Text: ", first seen " + fmtTime(g.FirstSeen) + ", " + itoa(n) + " " + plural(n, "instance", "instances") + ": "}, {Input: g.Instances}}})
	}
	return out
}
