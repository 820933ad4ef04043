package agent

import (
	"cmp"
	"io"
	"net/http"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/promtext"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// MetricsPath is where Serve serves the agent's Prometheus metrics, when
// Options.ServeMetrics is set.
const MetricsPath = "/metrics"

// maxMetricsRenders bounds the renders of the metrics page at once: each
// holds a copy of the resources' totals (56 bytes a resource) while it
// writes.
const maxMetricsRenders = 2

// The agent's metric families: the names and labels of the collector's
// (collector/prom.go), for one instance, so that the alert rules and the
// dashboard of deploy/ read a fleet Prometheus scrapes directly as they
// read collectors. The counts are what the agent shipped, bucket by
// bucket: what a collector reading its stream counts.
var (
	agentPass = promtext.NewCounter("sentinel_top_resource_pass_total",
		"Entries admitted, per app and resource, since the agent started.", "app", "resource")
	agentBlock = promtext.NewCounter("sentinel_top_resource_block_total",
		"Entries blocked by flow control or an open breaker.", "app", "resource")
	agentComplete = promtext.NewCounter("sentinel_top_resource_complete_total",
		"Admitted entries that finished.", "app", "resource")
	agentError = promtext.NewCounter("sentinel_top_resource_error_total",
		"Finished entries that ended in a business error.", "app", "resource")
	agentSlow = promtext.NewCounter("sentinel_top_resource_slow_total",
		"Finished entries slower than the slow-ratio breaker's maxAllowedRtMs.", "app", "resource")
	agentTransitions = promtext.NewCounter("sentinel_top_breaker_transitions_total",
		"Breaker state transitions, per app and resource.", "app", "resource", "from", "to")
	agentState = promtext.NewGauge("sentinel_top_breaker_state",
		"1 for the breaker state the instance is in (worst of its breakers for the resource), 0 for the others.",
		"app", "resource", "instance", "state", "provenance")
)

// transitionCounts counts a resource's breaker transitions by from and to.
type transitionCounts [3][3]int64

// countTransition counts t for the metrics page. The resources counted are
// those with breaker rules: bounded by the guard's resources.
func (a *Agent) countTransition(t core.Transition) {
	if t.From < 0 || t.From > core.Open || t.To < 0 || t.To > core.Open {
		return
	}
	a.transMu.Lock()
	defer a.transMu.Unlock()
	if a.trans == nil {
		a.trans = map[string]*transitionCounts{}
	}
	c := a.trans[t.Resource]
	if c == nil {
		c = &transitionCounts{}
		a.trans[t.Resource] = c
	}
	c[t.From][t.To]++
}

// WriteMetrics writes the agent's metrics to w in the Prometheus text
// format: per resource, the counts shipped so far, the worst state of its
// breakers and their transitions. It holds a copy of the resources' totals
// and a 32 KiB buffer, whatever the page's size, and stops at the first
// write error (a client gone or too slow), which it returns.
func (a *Agent) WriteMetrics(w io.Writer) error {
	totals := a.shipper.Totals(nil) // in name order
	type trans struct {
		resource string
		c        transitionCounts
	}
	a.transMu.Lock()
	ts := make([]trans, 0, len(a.trans))
	for r, c := range a.trans {
		ts = append(ts, trans{r, *c})
	}
	a.transMu.Unlock()
	slices.SortFunc(ts, func(x, y trans) int { return cmp.Compare(x.resource, y.resource) })
	type state struct {
		resource string
		s        core.State
	}
	var states []state
	for _, r := range a.guard.Resources() {
		bs := r.Breakers()
		if len(bs) == 0 {
			continue
		}
		worst := core.Closed
		for _, b := range bs {
			if s := b.State(); s == core.Open || s == core.HalfOpen && worst == core.Closed {
				worst = s
			}
		}
		states = append(states, state{r.Name(), worst})
	}
	slices.SortFunc(states, func(x, y state) int { return cmp.Compare(x.resource, y.resource) })

	out := promtext.NewWriter(w)
	app := a.opts.App
	for _, f := range []struct {
		fam *promtext.Family
		v   func(*wsstream.Totals) int64
	}{
		{agentPass, func(t *wsstream.Totals) int64 { return t.Pass }},
		{agentBlock, func(t *wsstream.Totals) int64 { return t.Block }},
		{agentComplete, func(t *wsstream.Totals) int64 { return t.Complete }},
		{agentError, func(t *wsstream.Totals) int64 { return t.Error }},
		{agentSlow, func(t *wsstream.Totals) int64 { return t.Slow }},
	} {
		for i := range totals {
			out.Sample(f.fam, float64(f.v(&totals[i].Totals)), app, totals[i].Name)
		}
	}
	for _, t := range ts {
		for from := core.Closed; from <= core.Open; from++ {
			for to := core.Closed; to <= core.Open; to++ {
				if n := t.c[from][to]; n > 0 {
					out.Sample(agentTransitions, float64(n), app, t.resource, from.String(), to.String())
				}
			}
		}
	}
	for _, st := range states {
		for _, s := range []core.State{core.Closed, core.HalfOpen, core.Open} {
			v := 0.0
			if s == st.s {
				v = 1
			}
			out.Sample(agentState, v, app, st.resource, a.opts.Instance, s.String(), "exact")
		}
	}
	return out.Flush()
}

// MetricsHandler returns the metrics endpoint (WriteMetrics) as an
// http.Handler, for services that mount it on their own server (at
// MetricsPath, by convention); Serve mounts it when Options.ServeMetrics
// is set. It keeps the stream's origin and host policy and its token
// (Handler), and renders at most 2 pages at once: more are answered 503
// at once and counted (Stats.MetricsRefused).
func (a *Agent) MetricsHandler() http.Handler {
	return a.stream.Guard(a.stream.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case a.renders <- struct{}{}:
			defer func() { <-a.renders }()
		default:
			a.metricsRefused.Add(1)
			http.Error(w, "503 busy: too many scrapes at once", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = a.WriteMetrics(w) // a client gone: nothing more to tell it
	})))
}
