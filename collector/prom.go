package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// Prometheus metric descriptions. Every name starts with sentinel_top_.
var (
	promPass = prometheus.NewDesc("sentinel_top_resource_pass_total",
		"Entries admitted, per app and resource, summed over instances.", []string{"app", "resource"}, nil)
	promBlock = prometheus.NewDesc("sentinel_top_resource_block_total",
		"Entries blocked by flow control or an open breaker.", []string{"app", "resource"}, nil)
	promComplete = prometheus.NewDesc("sentinel_top_resource_complete_total",
		"Admitted entries that finished.", []string{"app", "resource"}, nil)
	promError = prometheus.NewDesc("sentinel_top_resource_error_total",
		"Finished entries that ended in a business error.", []string{"app", "resource"}, nil)
	promSlow = prometheus.NewDesc("sentinel_top_resource_slow_total",
		"Finished entries slower than the slow-ratio breaker's maxAllowedRtMs.", []string{"app", "resource"}, nil)
	promSlowRatio = prometheus.NewDesc("sentinel_top_resource_slow_ratio",
		"Slow share of completions over the rate window.", []string{"app", "resource"}, nil)
	promErrorRatio = prometheus.NewDesc("sentinel_top_resource_error_ratio",
		"Error share of completions over the rate window.", []string{"app", "resource"}, nil)
	promP99 = prometheus.NewDesc("sentinel_top_resource_rt_p99_seconds",
		"p99 response time over the rate window, from the agents' histograms.", []string{"app", "resource"}, nil)
	promState = prometheus.NewDesc("sentinel_top_breaker_state",
		"1 for the breaker state an instance is in (worst of its breakers for the resource), 0 for the others; provenance is exact or inferred (from Java Sentinel's counts). Instances whose states are unknown have none.",
		[]string{"app", "resource", "instance", "state", "provenance"}, nil)
	promTransitions = prometheus.NewDesc("sentinel_top_breaker_transitions_total",
		"Breaker state transitions, per app and resource.", []string{"app", "resource", "from", "to"}, nil)
	promFindings = prometheus.NewDesc("sentinel_top_findings",
		"Active triage findings, by kind and severity.", []string{"kind", "severity"}, nil)
	promTargets = prometheus.NewDesc("sentinel_top_targets",
		"Dialed targets by connection state.", []string{"state"}, nil)
	promInstances = prometheus.NewDesc("sentinel_top_instances",
		"Live instances: not gone, not silent for longer than the stale period.", nil, nil)
	promMessages = prometheus.NewDesc("sentinel_top_messages_total",
		"Messages accepted.", nil, nil)
	promRejected = prometheus.NewDesc("sentinel_top_messages_rejected_total",
		"Messages rejected, by reason (a stable token such as malformed, too_large).", []string{"reason"}, nil)
	promDropped = prometheus.NewDesc("sentinel_top_messages_dropped_total",
		"Messages agents dropped for this collector (they report it).", nil, nil)
	promUnreceived = prometheus.NewDesc("sentinel_top_data_unreceived_seconds_total",
		"Sender time whose buckets never reached the collector: instances out of reach for longer than a reconnect brings back.", nil, nil)
	promMemory = prometheus.NewDesc("sentinel_top_memory_bytes",
		"The memory budget: what peers made the collector keep (an estimate; of it, the names their frames carried), what the sources hold while they read, and the most the process may take.", []string{"of"}, nil)
	promTargetMemory = prometheus.NewDesc("sentinel_top_target_memory_bytes",
		"What each dialed target made the collector keep, of the memory budget (an estimate), and its share: the most it may.", []string{"target", "of"}, nil)
	promTargetRefused = prometheus.NewDesc("sentinel_top_target_memory_refused_total",
		"Instances, series, rules' resources, breaker tracks and hot values refused each dialed target because its share of the memory budget, or the budget, was full.", []string{"target"}, nil)
	promOverflow = prometheus.NewDesc("sentinel_top_limit_overflow_total",
		"Messages or items turned away by the collector's limits, by limit (max_instances, max_resources, max_rate, dedupe_span, max_memory, restream_backlog, reader_queue, ...).", []string{"limit"}, nil)
)

// PrometheusCollector exposes the collector's state as Prometheus metrics:
// register it with a prometheus.Registry and serve promhttp.HandlerFor.
func (c *Collector) PrometheusCollector() prometheus.Collector { return promCollector{c} }

type promCollector struct{ c *Collector }

func (p promCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{promPass, promBlock, promComplete, promError, promSlow, promSlowRatio,
		promErrorRatio, promP99, promState, promTransitions, promFindings, promTargets, promInstances, promMessages,
		promRejected, promDropped, promUnreceived, promOverflow, promMemory, promTargetMemory, promTargetRefused} {
		ch <- d
	}
}

// Collect reads the latest published snapshot: a scrape never publishes,
// and sees exactly what the dashboard and /report see.
func (p promCollector) Collect(ch chan<- prometheus.Metric) {
	snap := p.c.Snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, r := range snap.Rows {
		gauge(promSlowRatio, r.SlowRatio, r.App, r.Resource)
		gauge(promErrorRatio, r.ErrorRatio, r.App, r.Resource)
		gauge(promP99, float64(r.P99Ms)/1000, r.App, r.Resource)
	}
	bySev := map[[2]string]int{}
	for _, f := range snap.Findings {
		bySev[[2]string{string(f.Kind), f.Severity.String()}]++
	}
	for _, k := range triage.Kinds {
		for _, sev := range []triage.Severity{triage.Info, triage.Warning, triage.Critical} {
			gauge(promFindings, float64(bySev[[2]string{string(k), sev.String()}]), string(k), sev.String())
		}
	}
	targets := map[string]int{"connecting": 0, "up": 0, "down": 0}
	for _, t := range snap.Targets {
		targets[t.State.String()]++
	}
	for st, n := range targets {
		gauge(promTargets, float64(n), st)
	}
	gauge(promInstances, float64(snap.Instances))
	gauge(promMemory, float64(snap.MemoryUsed), "used")
	gauge(promMemory, float64(snap.MemoryBudget), "budget")
	gauge(promMemory, float64(snap.MemoryNames), "names")
	gauge(promMemory, float64(snap.MemoryHeld), "held")
	for _, sh := range snap.MemoryShares {
		gauge(promTargetMemory, float64(sh.Used), sh.Target, "used")
		gauge(promTargetMemory, float64(sh.Limit), sh.Target, "share")
		counter(promTargetRefused, float64(sh.Refused), sh.Target)
	}
	counter(promMessages, float64(snap.Messages))
	counter(promDropped, float64(snap.Dropped))
	counter(promUnreceived, float64(snap.UnreceivedMs)/1000)
	for _, r := range snap.Rejects {
		counter(promRejected, float64(r.Count), r.Reason)
	}
	for _, r := range snap.Overflow {
		counter(promOverflow, float64(r.Count), r.Reason)
	}
	for _, t := range snap.Totals {
		counter(promPass, float64(t.Pass), t.App, t.Resource)
		counter(promBlock, float64(t.Block), t.App, t.Resource)
		counter(promComplete, float64(t.Complete), t.App, t.Resource)
		counter(promError, float64(t.Error), t.App, t.Resource)
		counter(promSlow, float64(t.Slow), t.App, t.Resource)
		for _, tc := range t.Transitions {
			counter(promTransitions, float64(tc.Count), t.App, t.Resource, tc.From.String(), tc.To.String())
		}
	}
	for _, b := range snap.Breakers {
		if b.Provenance == ProvenanceUnknown {
			continue // never a CLOSED the source did not say
		}
		for _, s := range []core.State{core.Closed, core.HalfOpen, core.Open} {
			v := 0.0
			if s == b.State {
				v = 1
			}
			gauge(promState, v, b.App, b.Resource, b.Instance, s.String(), b.Provenance.String())
		}
	}
}
