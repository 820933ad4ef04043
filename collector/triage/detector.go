package triage

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// A detector finds one kind of pattern: a type of its own, in its own file
// (sawtooth.go, herd.go, ...), with the state it keeps: its own fields,
// and the part it keeps beside each series, breaker or app x resource for
// locality, in a type of its own there (sawtoothRun, herd, lowConf, ...).
// It is told the fleet model's events it judges by through the observer
// interfaces below that it implements, in the order the store applies
// them, and findings turns its state into findings judged at now,
// appending them to out. Adding a kind is a detector, its facts and their
// words (facts.go, text.go), and a line in newDetectors.
type detector interface {
	kind() Kind
	findings(now int64, out []Finding) []Finding
}

// The events of the fleet model a detector may judge by: a bucket taken
// on a series, a breaker's transition (told before its track takes it),
// an instance's new rules (replacing prev), and an instance joining or
// leaving its app's comparisons (membership: a first hello, a departure,
// a return).
type (
	bucketObserver interface {
		bucket(s *series, b *takenBucket)
	}
	transitionObserver interface {
		transition(b *breaker, t *core.Transition)
	}
	rulesObserver interface {
		rules(in *instState, ts int64, prev *fleet.Rules)
	}
	membershipObserver interface {
		joined(in *instState, ts int64, replaced *instState)
		left(in *instState, ts int64)
	}
)

// detectors are the engine's detectors, every kind's in the spec's order,
// and those that observe each event.
type detectors struct {
	all         []detector
	buckets     []bucketObserver
	transitions []transitionObserver
	rules       []rulesObserver
	members     []membershipObserver
}

// newDetectors makes e's detectors, one of each kind.
func newDetectors(e *Engine) detectors {
	var d detectors
	d.all = []detector{
		e.sawtooth.init(e), e.herd.init(e), e.low.init(e), e.drift.init(e), e.unprot.init(e), e.lost.init(e),
		e.inert.init(e), e.warm.init(e), e.self.init(e), e.hot.init(e), e.shared.init(e), e.misaligned.init(e), e.advice.init(e),
	}
	for _, x := range d.all {
		if o, ok := x.(bucketObserver); ok {
			d.buckets = append(d.buckets, o)
		}
		if o, ok := x.(transitionObserver); ok {
			d.transitions = append(d.transitions, o)
		}
		if o, ok := x.(rulesObserver); ok {
			d.rules = append(d.rules, o)
		}
		if o, ok := x.(membershipObserver); ok {
			d.members = append(d.members, o)
		}
	}
	return d
}

// Findings returns the findings of everything fed so far, judged at now (the
// end of the input for a report, the current time when live), in report
// order: severity, critical first, then From, then kind, app and resource.
// Its cost grows with the number of findings and with what changed since
// the last call, not with the history fed. The slice belongs to the
// caller; a finding's own slices and facts may be shared with the findings
// of later calls, so they are read, never modified.
func (e *Engine) Findings(now int64) []Finding {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Finding // nil with none, as before
	if e.lastFindings > 0 {
		out = make([]Finding, 0, e.lastFindings)
	}
	for _, d := range e.det.all {
		out = d.findings(now, out)
	}
	e.lastFindings = len(out)
	blameRule(out)
	agreeOnRetry(out)
	for i := range out {
		f := &out[i]
		f.PeakSeverity = f.Severity
		if f.Kind.criticalWhileItLasts() {
			f.PeakSeverity = Critical
		}
	}
	e.sortRefs = sortFindings(out, e.sortRefs)
	return out
}

// agreeOnRetry gives a recovery flood's retry timeouts the sawtooth's
// range where both are found on one app and resource, so that no two
// findings propose two values for one field: the sawtooth's longer retry
// timeout (the downstream needs longer to recover) comes first, and
// spreading it is the flood's fix too. The facts are copied, never
// changed: they may be shared with earlier findings.
func agreeOnRetry(out []Finding) {
	type key struct{ app, resource string }
	base := map[key]uint32{}
	for i := range out {
		if x, ok := out[i].Facts.(*SawtoothFacts); ok && x.Suggest.RetryTimeoutMs > 0 {
			base[key{out[i].App, out[i].Resource}] = x.Suggest.RetryTimeoutMs
		}
	}
	if len(base) == 0 {
		return
	}
	for i := range out {
		f := &out[i]
		x, ok := f.Facts.(*SyncHalfOpenFacts)
		b := base[key{f.App, f.Resource}]
		if !ok || b == 0 {
			continue
		}
		y := *x
		y.Suggest = &SyncHalfOpenSuggest{RetryTimeoutMs: RetryRange{Min: int64(b), Max: int64(retrySpreadTo(b))}}
		y.AfterSawtooth = true
		f.Facts = &y
		words(f)
	}
}

// blameRule names the self-inflicted finding of a breaker rule as the
// cause of a sawtooth of the same rule (findings-v1 revision 3): the
// rule, not the downstream, keeps it open, so the sawtooth proposes no
// retryTimeoutMs. A sawtooth that already blames the rule's bound (the
// probe criterion too strict: a maxAllowedRtMs) is left as it is. The
// facts are copied, never changed.
func blameRule(out []Finding) {
	type key struct{ app, resource, ruleID string }
	var self map[key]bool
	for i := range out {
		if x, ok := out[i].Facts.(*SelfInflictedFacts); ok {
			if self == nil {
				self = map[key]bool{}
			}
			self[key{out[i].App, out[i].Resource, x.Rule.ID}] = true
		}
	}
	if self == nil {
		return
	}
	for i := range out {
		f := &out[i]
		x, ok := f.Facts.(*SawtoothFacts)
		if !ok || x.Suggest.MaxAllowedRtMs > 0 || !self[key{f.App, f.Resource, x.RuleID}] {
			continue
		}
		y := *x
		y.Cause, y.Suggest = KindSelfInflicted, SawtoothSuggest{}
		f.Facts = &y
		words(f)
	}
}

func severity(ongoing bool) Severity {
	if ongoing {
		return Critical
	}
	return Warning
}

// held reports whether a condition that ended at endedAt (0: never) ended
// less than hold ago at now, so that its finding is still critical.
func held(endedAt, now, hold int64) bool {
	return endedAt > 0 && now-endedAt < hold
}

// groupBy groups xs by key, the keys in the order first seen.
func groupBy[T any, K comparable](xs []T, key func(T) K) ([]K, map[K][]T) {
	var order []K
	groups := map[K][]T{}
	for _, x := range xs {
		k := key(x)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], x)
	}
	return order, groups
}

// complete sets a finding's instances (sorted, distinct) and its words.
func (e *Engine) complete(f *Finding, insts []*instState) {
	insts = sortInsts(insts)
	f.Instances = names(insts)
	words(f)
}

// sortInsts sorts instances by name (then age) without duplicates.
func sortInsts(insts []*instState) []*instState {
	slices.SortFunc(insts, compareInsts)
	return slices.Compact(insts)
}

func compareInsts(a, b *instState) int {
	return cmp.Or(strings.Compare(a.id.Name, b.id.Name), cmp.Compare(a.seq, b.seq))
}

// mergeInsts merges two lists sorted by sortInsts into a new one, as
// sortInsts would have sorted them together. b is the short one (the
// instances that arrived since a was made): each of its members is placed
// by a binary search in what is left of a, and a's runs between them are
// copied whole, so merging a few into many compares O(len(b) log len(a))
// instances, not every one of a.
func mergeInsts(a, b []*instState) []*instState {
	return mergeSorted(a, b, compareInsts)
}

// mergeNames is mergeInsts for names(a) and names(b): a name in both is
// kept once.
func mergeNames(a, b []string) []string {
	return mergeSorted(a, b, strings.Compare)
}

// mergeSorted merges b into a (both sorted by cmp, without duplicates)
// into a new slice, keeping one of two equal elements.
func mergeSorted[T any](a, b []T, cmp func(x, y T) int) []T {
	out := make([]T, 0, len(a)+len(b))
	for _, x := range b {
		i, found := slices.BinarySearchFunc(a, x, cmp)
		out, a = append(out, a[:i]...), a[i:]
		if !found {
			out = append(out, x)
		}
	}
	return append(out, a...)
}

func setInsts(set map[*instState]struct{}) []*instState {
	insts := make([]*instState, 0, len(set))
	for in := range set {
		insts = append(insts, in)
	}
	return sortInsts(insts)
}

// names returns the sorted, distinct names of sorted instances.
func names(insts []*instState) []string {
	out := make([]string, 0, len(insts))
	for _, in := range insts {
		if len(out) == 0 || out[len(out)-1] != in.id.Name {
			out = append(out, in.id.Name)
		}
	}
	return out
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func fmtFloat(x float64, decimals int) string { return strconv.FormatFloat(x, 'f', decimals, 64) }

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// breakerRule is the instance's breaker rule for a resource and rule id
// (its first one when the id is empty); ok is false if it has none.
func breakerRule(in *instState, resource, ruleID string) (r core.BreakerRule, ok bool) {
	if rr := in.rulesOf(resource); rr != nil {
		for _, b := range rr.Breakers {
			if b.ID == ruleID || ruleID == "" {
				return b, true
			}
		}
	}
	return r, false
}
