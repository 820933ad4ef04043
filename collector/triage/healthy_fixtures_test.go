package triage_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/fixtures/fixturetest"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// healthySeries is one instance's resource as a fixture records it, for an
// account of its healthy traffic written here from findings-v1's words
// rather than read from the engine: every bucket and every excluded span
// (from statIntervalMs before a CLOSED -> OPEN to the moment every breaker
// of the resource is CLOSED again) are collected first, and a bucket is
// healthy when it overlaps none.
type healthySeries struct {
	app     string
	rule    core.BreakerRule // its slow-ratio rule, if any
	buckets []wire.BucketItem
	ends    []int64
	spans   [][2]int64
	open    map[string]bool // breakers not CLOSED, by rule id
	from    int64           // start of the current span
}

// healthyP99 is the p99 of the healthy buckets, as the upper bound of its
// histogram slot; ok is false under 200 completions.
func (h *healthySeries) healthyP99() (p99 int64, ok bool) {
	var sum [core.HistogramSlots]int64
	var n, rtMax int64
	for i, b := range h.buckets {
		healthy := b.HasHist
		for _, sp := range h.spans {
			if h.ends[i] > sp[0] && b.Start < sp[1] {
				healthy = false
			}
		}
		if !healthy {
			continue
		}
		for k, c := range b.Hist {
			sum[k] += c
			n += c
		}
		rtMax = max(rtMax, b.RtMax)
	}
	if n < 200 {
		return 0, false
	}
	if p99 = core.HistogramQuantile(&sum, 0.99, 0); p99 == 0 {
		p99 = rtMax
	}
	return p99, true
}

// readFixture calls f with every message of a fixture but its meta line,
// app giving each instance's app as its hello said; restart(instance, at)
// comes first for a hello that says the instance restarted.
func readFixture(t *testing.T, name string, restart func(inst string, at int64), f func(m wire.Message, app map[string]string)) {
	t.Helper()
	rc, err := fixtures.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	app := map[string]string{}
	started := map[string]int64{}
	for m, err := range wire.NewReader(rc, name).All() {
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := m.(*wire.Hello); ok {
			app[h.Instance] = h.App
			if started[h.Instance] != 0 && h.StartedAt > started[h.Instance] {
				restart(h.Instance, h.StartedAt)
			}
			started[h.Instance] = max(started[h.Instance], h.StartedAt)
		}
		if m.Kind() != wire.KindMeta {
			f(m, app)
		}
	}
}

// fixtureHealthy reads a fixture into its series, by instance and resource.
func fixtureHealthy(t *testing.T, name string) map[[2]string]*healthySeries {
	t.Helper()
	intervals := map[[2]string]map[string]int64{} // statIntervalMs by rule id
	out := map[[2]string]*healthySeries{}
	var app map[string]string
	get := func(inst, res string) *healthySeries {
		k := [2]string{inst, res}
		if out[k] == nil {
			out[k] = &healthySeries{app: app[inst], open: map[string]bool{}}
		}
		return out[k]
	}
	restart := func(inst string, at int64) {
		for k, h := range out {
			if k[0] == inst && len(h.open) > 0 {
				h.spans = append(h.spans, [2]int64{h.from, at})
				clear(h.open)
			}
		}
	}
	readFixture(t, name, restart, func(m wire.Message, apps map[string]string) {
		app = apps
		switch m := m.(type) {
		case *wire.Rules:
			for _, b := range m.Breakers {
				k := [2]string{m.Instance, b.Resource}
				if intervals[k] == nil {
					intervals[k] = map[string]int64{}
				}
				intervals[k][b.ID] = int64(b.StatIntervalMs)
				if b.Strategy == core.SlowRequestRatio {
					get(m.Instance, b.Resource).rule = b
				}
			}
		case *wire.Buckets:
			for _, it := range m.Items {
				h := get(m.Instance, it.Resource)
				h.buckets = append(h.buckets, it)
				h.ends = append(h.ends, it.Start+m.BucketMs)
			}
		case *wire.State:
			h := get(m.Instance, m.Resource)
			from := m.Ts
			if m.From == core.Closed && m.To == core.Open {
				from -= intervals[[2]string{m.Instance, m.Resource}][m.RuleID]
			}
			switch {
			case m.To != core.Closed && len(h.open) == 0:
				h.from = from
			case m.To != core.Closed:
				h.from = min(h.from, from)
			}
			if m.To == core.Closed {
				delete(h.open, m.RuleID)
				if len(h.open) == 0 {
					h.spans = append(h.spans, [2]int64{h.from, m.Ts})
				}
			} else {
				h.open[m.RuleID] = true
			}
		}
	})
	for _, h := range out {
		if len(h.open) > 0 {
			h.spans = append(h.spans, [2]int64{h.from, math.MaxInt64})
		}
	}
	return out
}

// TestFixtureRuleAdviceHealthyP99 checks rule-advice's p99 against that
// account, on every fixture: a finding's p99Ms is the highest healthy p99
// of its instances (the upper bound of its histogram slot), and it
// suggests maxAllowedRtMs 2 x the least that p99 can be (the slot's lower
// bound) exactly when a slow-ratio rule of one of them is under 2 x the
// least its own can be; every instance whose slow-ratio rule allows less
// than that is in a finding. (brownout's rule, 300 ms against a p99 of at
// most 200, perhaps 101, is not.)
func TestFixtureRuleAdviceHealthyP99(t *testing.T) {
	for i, name := range fixtures.Names() {
		if !racetest.Played(i, 5) {
			continue // one goroutine's replays: every fifth fixture under -race, all in .ci/run's run without it
		}
		t.Run(name, func(t *testing.T) {
			series := fixtureHealthy(t, name)
			res, err := fixturetest.ReplayFixture(name)
			if err != nil {
				t.Fatal(err)
			}
			advised := map[[2]string]bool{}
			for _, f := range res.Findings {
				x, ok := f.Facts.(*triage.RuleAdviceFacts)
				if !ok {
					continue
				}
				var highest int64
				under := false
				for _, in := range f.Instances {
					h := series[[2]string{in, f.Resource}]
					if h == nil || h.rule.Strategy != core.SlowRequestRatio || h.rule.Resource == "" {
						continue
					}
					advised[[2]string{in, f.Resource}] = true
					if p99, ok := h.healthyP99(); ok {
						highest = max(highest, p99)
						under = under || h.rule.MaxAllowedRtMs < uint64(2*slotFloor(p99))
					}
				}
				if x.P99Ms != highest {
					t.Errorf("%s %q: p99Ms %d, healthy p99 %d", f.App, f.Resource, x.P99Ms, highest)
				}
				if want := uint64(2 * slotFloor(highest)); under != (x.Suggest.MaxAllowedRtMs == want && want > 0) {
					t.Errorf("%s %q: suggests maxAllowedRtMs %d, want %d", f.App, f.Resource, x.Suggest.MaxAllowedRtMs, want)
				}
			}
			for k, h := range series {
				p99, ok := h.healthyP99()
				if ok && h.rule.Resource != "" && h.rule.MaxAllowedRtMs < uint64(2*slotFloor(p99)) && !advised[k] {
					t.Errorf("%s %q: maxAllowedRtMs %d under 2 x the least a healthy p99 of at most %d can be, and no advice",
						k[0], k[1], h.rule.MaxAllowedRtMs, p99)
				}
			}
		})
	}
}

// slotFloor is the lower bound of the histogram slot whose upper bound is
// ms: the least a p99 reported as "at most ms" can be.
func slotFloor(ms int64) int64 {
	var floor int64
	for _, b := range core.HistogramBounds {
		if b < ms {
			floor = b
		}
	}
	return floor
}

// The advices drawn from incidents before healthy traffic existed are
// gone: each was 2 x a p99 over the whole input, the incident included.
//
//   - sawtooth-db-slow: the member service's 2-2.6 s outage made the p99
//     2597 ms: "raise maxAllowedRtMs to at least 5194 ms", a threshold that
//     would never see that outage. Healthy calls take at most 100 ms.
//   - recovery-herd: the gateways' 2 s client timeout during the outages
//     made it 2000 ms: "at least 4000 ms", above the timeout itself.
//     Healthy calls take at most 200 ms.
//   - gray-cold-start: the 1.0-1.5 s TLS handshakes made it 1506 ms: "at
//     least 3012 ms". Healthy calls take at most 200 ms, and the rule's
//     1000 ms is more than twice that: the advice left is minRequestAmount.
func TestFixtureAdviceFromIncidentsGone(t *testing.T) {
	cases := []struct {
		fixture, app, resource string
		gone                   string
		healthyP99             int64 // the highest among the instances
		advice                 bool  // a rule-advice finding remains (not on maxAllowedRtMs)
	}{
		{"sawtooth-db-slow", "order", "GET:http://member-service/api/user/info", "5194", 100, false},
		{"recovery-herd", "gateway", "GET:http://inventory-service/api/stock", "4000", 200, false},
		{"gray-cold-start", "order", "POST:http://risk-service/api/v2/check", "3012", 200, true},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			var highest int64
			for k, h := range fixtureHealthy(t, c.fixture) {
				if k[1] == c.resource && h.app == c.app {
					if p99, ok := h.healthyP99(); ok {
						highest = max(highest, p99)
					}
				}
			}
			if highest != c.healthyP99 {
				t.Errorf("healthy p99 %d, want %d", highest, c.healthyP99)
			}
			res, err := fixturetest.ReplayFixture(c.fixture)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range res.Findings {
				if strings.Contains(f.Summary+f.Advice, c.gone) {
					t.Errorf("%s still says %s: %s", f.Kind, c.gone, f.Advice)
				}
				x, ok := f.Facts.(*triage.RuleAdviceFacts)
				if !ok || f.App != c.app || f.Resource != c.resource {
					continue
				}
				found = true
				if x.P99Ms != c.healthyP99 || x.Suggest.MaxAllowedRtMs != 0 || strings.Contains(f.Advice, "maxAllowedRtMs") {
					t.Errorf("rule-advice %+v: %s", *x, f.Advice)
				}
			}
			if found != c.advice {
				t.Errorf("rule-advice found %v, want %v", found, c.advice)
			}
		})
	}
}
