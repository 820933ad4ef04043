package source

import (
	"context"
	"crypto/sha256"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/rulefile"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Java Sentinel's rules, as /getRules answers them: degrade (1.8 and
// before), flow, regex rules expanded over the resources they match.

// pollRules fetches both rule types and sends a rules message when they
// changed. A target that does not answer them (an old version, a proxy)
// stays up without rules; a rule that does not map is rejected once.
func (p *javaPoller) pollRules(ctx context.Context) {
	degrade, err := p.get(ctx, "/getRules?type=degrade")
	var flow []byte
	if err == nil {
		flow, err = p.get(ctx, "/getRules?type=flow")
	}
	note := feed.TargetRemark{StatesInferred: true}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		note.RulesError = err.Error()
	}
	if note != p.rulesErr {
		p.rulesErr = note
		p.st.Update(func(s *feed.TargetStatus) { s.Note = note })
	}
	if err != nil {
		return
	}
	// The answers, and the rules they map to, are charged to the budget
	// while they are parsed.
	held := int64(len(degrade)+len(flow)) * javaRulesHoldFactor
	p.d.sink.Hold(held)
	defer p.d.sink.Hold(-held)
	memo := &p.st.javaRules
	degradeChanged, problems := memo.degrade.update(degrade, p.version, javaDegradeRules)
	flowChanged, flowProblems := memo.flow.update(flow, "", func(body []byte, _ string) ([]core.FlowRule, []error) {
		return javaFlowRules(body)
	})
	problems = append(problems, flowProblems...)
	paramsChanged := false
	if body, ok := p.getParamRules(ctx); ok {
		paramsHeld := int64(len(body)) * javaRulesHoldFactor
		p.d.sink.Hold(paramsHeld)
		defer p.d.sink.Hold(-paramsHeld)
		var paramProblems []error
		paramsChanged, paramProblems = memo.params.update(body, "", func(body []byte, _ string) ([]core.HotParamRule, []error) {
			return javaParamRules(body)
		})
		problems = append(problems, paramProblems...)
	}
	for _, err := range problems {
		p.sink.Reject(p.t.Name, err)
	}
	if degradeChanged || flowChanged || paramsChanged || p.rulesVersion == "" {
		p.breakers, p.flows, p.params = memo.degrade.rules, memo.flow.rules, memo.params.rules
		clear(p.patterns)
		for _, r := range p.breakers {
			p.compile(r.Pattern)
		}
		for _, r := range p.flows {
			p.compile(r.Pattern)
		}
		for _, r := range p.params {
			p.compile(r.Pattern)
		}
		p.sendRules(true)
	}
}

// javaRulesHoldFactor is what a rules answer being parsed holds, charged
// to the budget, per byte of it: the answer (read by doubling a buffer),
// its JSON decoded, and the rules mapped from it.
const javaRulesHoldFactor = 4

// javaRulesMemo is what a Java target's rule answers were last mapped to,
// per rule type. It outlives a connection (it is the target's), so that
// neither a poll nor a reconnect parses an unchanged answer again: a
// service with 30 MB of rules costs a read and a hash every JavaRulesEvery,
// not a parse; and a rule that does not map is rejected once.
type javaRulesMemo struct {
	degrade javaRuleAnswer[core.BreakerRule]
	flow    javaRuleAnswer[core.FlowRule]
	params  javaRuleAnswer[core.HotParamRule]
}

// javaRuleAnswer is one rule type's last answer, by length and SHA-256,
// and the rules it mapped to.
type javaRuleAnswer[R javaRule] struct {
	parsed  bool
	size    int
	sum     [sha256.Size]byte
	version string // the service's version it was mapped for
	rules   []R
}

// update maps body with parse unless it is the answer last mapped (same
// length, hash and service version); changed says it was mapped anew, with
// problems the rules that did not map.
func (a *javaRuleAnswer[R]) update(body []byte, version string, parse func([]byte, string) ([]R, []error)) (changed bool, problems []error) {
	sum := sha256.Sum256(body)
	if a.parsed && a.size == len(body) && a.sum == sum && a.version == version {
		return false, nil
	}
	rules, problems := parse(body, version)
	*a = javaRuleAnswer[R]{parsed: true, size: len(body), sum: sum, version: version, rules: rules}
	return true, problems
}

// compile keeps a regex rule's pattern, as Java matches it: the whole name.
// javaRules has checked that it compiles.
func (p *javaPoller) compile(pattern string) {
	if pattern != "" && p.patterns[pattern] == nil {
		p.patterns[pattern] = regexp.MustCompile(`^(?:` + pattern + `)$`)
	}
}

// sendRules sends the rules read, regex rules listed per resource they
// govern, when that rule set changed: when the rules read did (changed),
// or the app's resources did (those every Java target of the app
// reported); the inference takes it too.
func (p *javaPoller) sendRules(changed bool) {
	breakers, flows, params := p.breakers, p.flows, p.params
	if len(p.patterns) > 0 {
		names := p.d.apps.resources(p.jt.app)
		if !changed && slices.Equal(names, p.governable) {
			return
		}
		p.governable = names
		breakers = javaExpand(breakers, names, p.matches)
		flows = javaExpand(flows, names, p.matches)
		params = javaExpand(params, names, p.matches)
	}
	version := wire.RulesVersion(breakers, flows, params...)
	if version == p.rulesVersion {
		return
	}
	p.rulesVersion = version
	now := p.d.clock.UnixMilli()
	p.ingest(&wire.Rules{Header: wire.Header{Ts: now, Instance: p.jt.instance},
		Version: version, Breakers: breakers, Flows: flows, Params: params})
	for _, m := range p.inf.SetRules(now, breakers, flows) {
		p.ingest(m)
	}
}

// matches reports whether a regex rule's pattern governs a resource, as
// Java's Pattern.matches does on the name the application gave. The name
// seen has every "|" written as "_", so a name with "_" is also tried
// with "|" there.
func (p *javaPoller) matches(pattern, name string) bool {
	re := p.patterns[pattern]
	if re == nil {
		return false
	}
	return re.MatchString(name) || strings.Contains(name, "_") && re.MatchString(strings.ReplaceAll(name, "_", "|"))
}

// javaRule is a core rule a Java rule maps to.
type javaRule interface {
	core.BreakerRule | core.FlowRule | core.HotParamRule
}

// javaExpand lists each regex rule of rules (Pattern set) once for every
// name it governs, naming it; other rules are kept as they are. Names are
// sorted, so the list is stable.
func javaExpand[R javaRule](rules []R, names []string, matches func(pattern, name string) bool) []R {
	var out []R
	for _, r := range rules {
		resource, pattern := ruleNames(&r)
		if *pattern == "" {
			out = append(out, r)
			continue
		}
		for _, name := range names {
			if matches(*pattern, name) {
				*resource = name
				out = append(out, r)
			}
		}
	}
	return out
}

// ruleNames points at a rule's resource and pattern.
func ruleNames[R javaRule](r *R) (resource, pattern *string) {
	switch x := any(r).(type) {
	case *core.BreakerRule:
		return &x.Resource, &x.Pattern
	case *core.FlowRule:
		return &x.Resource, &x.Pattern
	case *core.HotParamRule:
		return &x.Resource, &x.Pattern
	}
	panic("unreachable")
}

// javaRules maps the two /getRules answers of a service of Sentinel
// version (as /version says; "" unknown) to core rules, as
// rulefile.JavaDegradeRules and rulefile.JavaFlowRules map them: names as
// the metric lines write them, Java's semantics (or, before 1.8, the
// meaning its degrade rules had), limitApp kept, flow attributes core has
// no field for in the rule's id, a regex rule's pattern as Resource and
// Pattern, for javaExpand to list it per resource it governs. Rules that
// do not map are left out and reported as problems.
func javaRules(degrade, flow []byte, version string) (breakers []core.BreakerRule, flows []core.FlowRule, problems []error) {
	breakers, problems = javaDegradeRules(degrade, version)
	flows, flowProblems := javaFlowRules(flow)
	return breakers, flows, append(problems, flowProblems...)
}

// javaDegradeRules maps a /getRules?type=degrade answer (see javaRules).
func javaDegradeRules(degrade []byte, version string) ([]core.BreakerRule, []error) {
	breakers, problems, err := rulefile.JavaDegradeRules(degrade, version)
	return breakers, javaProblems("degrade", problems, err)
}

// javaFlowRules maps a /getRules?type=flow answer (see javaRules).
func javaFlowRules(flow []byte) ([]core.FlowRule, []error) {
	flows, problems, err := rulefile.JavaFlowRules(flow)
	return flows, javaProblems("flow", problems, err)
}

// javaProblems are a /getRules answer's problems as the sink rejects
// them: the answer's (wire.ErrMalformed), or its rules' (wire.ErrInvalid).
func javaProblems(kind string, problems []*rulefile.RuleError, err error) []error {
	if err != nil {
		return []error{fmt.Errorf("%w: /getRules?type=%s: %w", wire.ErrMalformed, kind, err)}
	}
	var out []error
	for _, p := range problems {
		out = append(out, fmt.Errorf("%w: /getRules?type=%s: rule %d: %w", wire.ErrInvalid, kind, p.Index, p.Err))
	}
	return out
}
