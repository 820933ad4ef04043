package core

import "fmt"

// hotHeld is a value a concurrency hot-parameter rule counts in flight for
// an entry, under the key the rule tracks it by.
type hotHeld struct {
	c   *HotParamController
	key any
}

// EntryWithParam is Entry for a call with one parameter, which
// hot-parameter rules see as argument 0 (sentinel-golang's
// api.Entry(resource, api.WithArgs(param))). An entry a hot-parameter rule
// blocks gets a *BlockError matching ErrHotParam, with the rule in HotParam.
//
// It does not allocate for a value the rules already track: nothing of param
// is kept (the rules keep a copy of each value they track), so the compiler
// boxes a string or an integer on the caller's stack. Strings, bools,
// integers, floats and named types of those kinds are tracked; a value of
// another kind, or NaN, is let through by every rule (docs/SEMANTICS.md).
func (g *Guard) EntryWithParam(resource string, param any) (*Entry, error) {
	args := [1]any{param}
	return g.entry(resource, &Params{Args: args[:]})
}

// EntryWithParams is Entry for a call with several parameters or
// attachments (sentinel-golang's api.WithArgs and api.WithAttachments).
// Like EntryWithParam it keeps nothing of p.
func (g *Guard) EntryWithParams(resource string, p Params) (*Entry, error) {
	return g.entry(resource, &p)
}

// checkHotParams checks the resource's hot-parameter rules in order, as
// sentinel-golang's hotspot slot does: a rule whose parameter the entry
// lacks is skipped, a throttling wait is slept before the next rule. It
// returns the time after any wait and, when a concurrency rule will count
// the entry in flight, the Entry (from the pool) that remembers the value.
// When a rule blocks, the block is recorded and nothing is returned but the
// error.
func (g *Guard) checkHotParams(r *Resource, hots []*HotParamController, p *Params, now int64) (*Entry, int64, error) {
	var e *Entry
	for _, hc := range hots {
		v := hc.Param(p)
		if v == nil {
			continue
		}
		pass, wait, key := hc.check(now, v, 1)
		if !pass {
			r.countBlock(g, now)
			g.release(e)
			return nil, now, hc.blocked
		}
		if key != nil && !hc.qps {
			if e == nil {
				e = g.pool.Get().(*Entry)
			}
			e.hot = append(e.hot, hotHeld{c: hc, key: key})
		}
		if wait > 0 {
			g.clock.Sleep(wait)
			now = g.clock.UnixMilli()
		}
	}
	return e, now, nil
}

// release returns an entry to the pool, keeping the room of its hot list.
func (g *Guard) release(e *Entry) {
	if e == nil {
		return
	}
	hot := e.hot
	clear(hot)
	*e = Entry{hot: hot[:0]}
	g.pool.Put(e)
}

// HotParams returns the resource's hot-parameter controllers, in rule order.
func (r *Resource) HotParams() []*HotParamController {
	p := r.hots.Load()
	if p == nil {
		return nil
	}
	return append([]*HotParamController(nil), *p...)
}

// LoadHotParamRules replaces every hot-parameter rule. A rule equal to a
// loaded one keeps its controller, and so the state of its values; any
// other starts afresh. Invalid rules are rejected as a whole (nothing
// changes) with an error naming the first bad rule.
func (g *Guard) LoadHotParamRules(rules []HotParamRule) error {
	byRes, err := byResource("hot-parameter", rules, (*HotParamRule).Validate, func(r *HotParamRule) string { return r.Resource })
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := trackLocked(g, "hot-parameter", byRes); err != nil {
		return err
	}
	for name, r := range *g.resources.Load() {
		old := r.HotParams()
		var next []*HotParamController
		for _, rule := range byRes[name] {
			var hc *HotParamController
			for i, o := range old {
				if o.rule.Equal(&rule) {
					hc = o
					old = append(old[:i], old[i+1:]...) // two equal rules get two controllers
					break
				}
			}
			if hc == nil {
				var err error
				if hc, err = NewHotParamController(rule); err != nil {
					return fmt.Errorf("hot-parameter rule for %q: %w", name, err) // validated above
				}
			}
			next = append(next, hc)
		}
		if len(next) == 0 {
			r.hots.Store(nil)
		} else {
			r.hots.Store(&next)
		}
	}
	return nil
}

// byResource validates rules and groups them by resource, refusing more
// than maxRulesPerResource for one resource; kind names them in errors.
func byResource[R any](kind string, rules []R, validate func(*R) error, resource func(*R) string) (map[string][]R, error) {
	byRes := map[string][]R{}
	for i := range rules {
		if err := validate(&rules[i]); err != nil {
			return nil, fmt.Errorf("%s rule %d: %w", kind, i, err)
		}
		name := resource(&rules[i])
		byRes[name] = append(byRes[name], rules[i])
		if len(byRes[name]) > maxRulesPerResource {
			return nil, fmt.Errorf("%s rule %d: %w: more than %d %s rules for %q", kind, i, ErrInvalidRule, maxRulesPerResource, kind, name)
		}
	}
	return byRes, nil
}

// trackLocked creates every resource byRes names; g.mu is held.
func trackLocked[R any](g *Guard, kind string, byRes map[string][]R) error {
	for name := range byRes {
		if g.resourceLocked(name) == nil {
			return fmt.Errorf("%s rules for %q: more than %d resources", kind, name, g.maxRes)
		}
	}
	return nil
}
