package triage

import (
	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// The window-misaligned detector: statistic windows Sentinel cannot split
// into the buckets asked for.

type misaligned struct {
	listed   bool
	rule     core.BreakerRule
	from, to int64
	ever     map[*instState]struct{}
	cur      map[*instState]struct{}
}

// rules judges the instance's new rules' windows.
func (d *misalignedDetector) rules(in *instState, ts int64, _ *fleet.Rules) {
	d.e.updateMisaligned(in, ts)
}

func (e *Engine) updateMisaligned(in *instState, ts int64) {
	a := in.app
	// Resources whose misaligned rule this instance dropped.
	for _, ar := range a.ars {
		m := &ar.mis
		if _, ok := m.cur[in]; !ok {
			continue
		}
		still := false
		if rr := in.rulesOf(ar.resource); rr != nil {
			for i := range rr.Breakers {
				still = still || rr.Breakers[i].WindowMisaligned()
			}
		}
		if !still {
			delete(m.cur, in)
			m.to = max(m.to, ts)
		}
	}
	for res, rr := range in.rules() {
		for i := range rr.Breakers {
			b := &rr.Breakers[i]
			if !b.WindowMisaligned() {
				continue
			}
			ar := e.appRes(a, res)
			m := &ar.mis
			if !m.listed {
				m.listed, m.rule, m.from = true, *b, ts
				m.ever, m.cur = map[*instState]struct{}{}, map[*instState]struct{}{}
				e.misaligned.ars = append(e.misaligned.ars, ar)
			}
			m.from = min(m.from, ts)
			m.to = max(m.to, ts)
			m.ever[in] = struct{}{}
			m.cur[in] = struct{}{}
			break
		}
	}
}

// misalignedDetector is the window-misaligned detector's own state: the
// engine it observes, and its ars: app x resource with a misaligned breaker
// window.
type misalignedDetector struct {
	e   *Engine
	ars []*appRes
}

func (d *misalignedDetector) init(e *Engine) detector { d.e = e; return d }
func (*misalignedDetector) kind() Kind                { return KindWindowMisaligned }

// window-misaligned: rule is the first misaligned rule seen for the app and
// resource; From is when it was first loaded, To now while an instance still
// has one, else when the last one was replaced. Always a warning.
func (d *misalignedDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	for _, ar := range e.misaligned.ars {
		m := &ar.mis
		insts := setInsts(m.ever)
		f := Finding{
			Kind: KindWindowMisaligned, Severity: Warning, App: ar.app.name, Resource: ar.resource,
			Instances: names(insts), From: m.from, To: m.to, Facts: &WindowMisalignedFacts{Rule: m.rule},
		}
		if len(m.cur) > 0 {
			f.To = max(now, m.to)
		}
		words(&f)
		out = append(out, f)
	}
	return out
}

// nearestDivisor is the divisor of iv closest to n (the smaller on a tie),
// other than 1 and iv itself; 0 when there is none near.
func nearestDivisor(iv, n uint32) uint32 {
	var best, bestDist uint32
	limit := min(uint64(iv)-1, 2*uint64(n)+16)
	for d := uint32(2); uint64(d) <= limit; d++ {
		if iv%d != 0 {
			continue
		}
		dist := max(d, n) - min(d, n)
		if best == 0 || dist < bestDist {
			best, bestDist = d, dist
		}
	}
	return best
}
