package collector

import (
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/promtext"
)

// promFamily is one metric family: what its text exposition says of it,
// and its description for a prometheus.Registry.
type promFamily struct {
	*promtext.Family
	desc *prometheus.Desc
}

func counterFamily(name, help string, labels ...string) *promFamily {
	return &promFamily{promtext.NewCounter(name, help, labels...), prometheus.NewDesc(name, help, labels, nil)}
}

func gaugeFamily(name, help string, labels ...string) *promFamily {
	return &promFamily{promtext.NewGauge(name, help, labels...), prometheus.NewDesc(name, help, labels, nil)}
}

// Prometheus metric descriptions. Every name starts with sentinel_top_.
var (
	promPass = counterFamily("sentinel_top_resource_pass_total",
		"Entries admitted, per app and resource, summed over instances.", "app", "resource")
	promBlock = counterFamily("sentinel_top_resource_block_total",
		"Entries blocked by flow control or an open breaker.", "app", "resource")
	promComplete = counterFamily("sentinel_top_resource_complete_total",
		"Admitted entries that finished.", "app", "resource")
	promError = counterFamily("sentinel_top_resource_error_total",
		"Finished entries that ended in a business error.", "app", "resource")
	promSlow = counterFamily("sentinel_top_resource_slow_total",
		"Finished entries slower than the slow-ratio breaker's maxAllowedRtMs.", "app", "resource")
	promSlowRatio = gaugeFamily("sentinel_top_resource_slow_ratio",
		"Slow share of completions over the rate window.", "app", "resource")
	promErrorRatio = gaugeFamily("sentinel_top_resource_error_ratio",
		"Error share of completions over the rate window.", "app", "resource")
	promP99 = gaugeFamily("sentinel_top_resource_rt_p99_seconds",
		"p99 response time over the rate window, from the agents' histograms.", "app", "resource")
	promState = gaugeFamily("sentinel_top_breaker_state",
		"1 for the breaker state an instance is in (worst of its breakers for the resource), 0 for the others; provenance is exact or inferred (from Java Sentinel's counts). Instances whose states are unknown have none.",
		"app", "resource", "instance", "state", "provenance")
	promBreakers = gaugeFamily("sentinel_top_breakers",
		"Breakers of live instances (instance x resource), by where their state comes from: exact, inferred, or unknown (the source cannot tell it, or a silence may have hidden a trip; these have no sentinel_top_breaker_state).",
		"provenance")
	promTransitions = counterFamily("sentinel_top_breaker_transitions_total",
		"Breaker state transitions, per app and resource.", "app", "resource", "from", "to")
	promFindings = gaugeFamily("sentinel_top_findings",
		"Active triage findings, by kind and severity.", "kind", "severity")
	promTargets = gaugeFamily("sentinel_top_targets",
		"Dialed targets by connection state.", "state")
	promInstances = gaugeFamily("sentinel_top_instances",
		"Live instances: not gone, not silent for longer than the stale period.")
	promMessages = counterFamily("sentinel_top_messages_total",
		"Messages accepted.")
	promRejected = counterFamily("sentinel_top_messages_rejected_total",
		"Messages rejected, by reason (a stable token such as malformed, too_large).", "reason")
	promDropped = counterFamily("sentinel_top_messages_dropped_total",
		"Messages agents dropped for this collector (they report it).")
	promUnreceived = counterFamily("sentinel_top_data_unreceived_seconds_total",
		"Sender time whose buckets never reached the collector: instances out of reach for longer than a reconnect brings back.")
	promMemory = gaugeFamily("sentinel_top_memory_bytes",
		"The memory budget: what peers made the collector keep (an estimate; of it, the names their frames carried and the traffic kept to replay plans), what the sources hold while they read, and the most the process may take.", "of")
	promTargetMemory = gaugeFamily("sentinel_top_target_memory_bytes",
		"What each dialed target made the collector keep, of the memory budget (an estimate), and its share: the most it may.", "target", "of")
	promTargetRefused = counterFamily("sentinel_top_target_memory_refused_total",
		"Instances, series, rules' resources, breaker tracks and hot values refused each dialed target because its share of the memory budget, or the budget, was full.", "target")
	promOverflow = counterFamily("sentinel_top_limit_overflow_total",
		"Messages or items turned away by the collector's limits, by limit (max_instances, max_resources, max_rate, dedupe_span, max_memory, restream_backlog, reader_queue, ...).", "limit")
)

// promFamilies are every family, in the order they are written.
var promFamilies = []*promFamily{promPass, promBlock, promComplete, promError, promSlow, promTransitions,
	promSlowRatio, promErrorRatio, promP99, promState, promBreakers, promFindings, promTargets, promInstances, promMemory,
	promTargetMemory, promTargetRefused, promMessages, promRejected, promDropped, promUnreceived, promOverflow}

// PrometheusCollector exposes the collector's state as Prometheus metrics:
// register it with a prometheus.Registry and serve promhttp.HandlerFor.
// WriteMetrics writes the same metrics without gathering them first.
func (c *Collector) PrometheusCollector() prometheus.Collector { return promCollector{c} }

type promCollector struct{ c *Collector }

func (p promCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range promFamilies {
		ch <- f.desc
	}
}

// Collect reads the latest published snapshot: a scrape never publishes,
// and sees exactly what the dashboard and /report see.
func (p promCollector) Collect(ch chan<- prometheus.Metric) {
	emitMetrics(p.c.Snapshot(), promChannel(ch))
}

// promChannel hands samples to a registry's Collect.
type promChannel chan<- prometheus.Metric

func (ch promChannel) sample(f *promFamily, v float64, labels []string) {
	t := prometheus.GaugeValue
	if f.Counter {
		t = prometheus.CounterValue
	}
	if m, err := prometheus.NewConstMetric(f.desc, t, v, labels...); err == nil {
		ch <- m // wire v1 names are UTF-8: an error here is a bug, not a panic
	}
}

// WriteMetrics writes the collector's metrics, as PrometheusCollector
// gives them, from the latest published snapshot to w in the Prometheus
// text format (version 0.0.4), sample by sample: rendering holds a 32 KiB
// buffer whatever the number of series, where gathering first holds every
// sample's labels and values at once (30 MB for 10,000 series). It stops
// at the first write error (a client gone or too slow) and returns it.
func (c *Collector) WriteMetrics(w io.Writer) error {
	t := promText{promtext.NewWriter(w)}
	emitMetrics(c.Snapshot(), t)
	return t.w.Flush()
}

// promSink receives the samples of a snapshot, every sample of a family
// before the next family's.
type promSink interface {
	// sample must not keep labels: emitMetrics reuses it.
	sample(f *promFamily, v float64, labels []string)
}

// emitMetrics gives sink every sample of snap, family by family.
func emitMetrics(snap *Snapshot, sink promSink) {
	if snap == nil {
		return
	}
	// One label buffer for the whole walk, rather than one a sample.
	buf := make([]string, 5)
	l := func(vs ...string) []string { return buf[:copy(buf, vs)] }
	for _, f := range []struct {
		fam *promFamily
		v   func(*ResourceTotals) int64
	}{
		{promPass, func(t *ResourceTotals) int64 { return t.Pass }},
		{promBlock, func(t *ResourceTotals) int64 { return t.Block }},
		{promComplete, func(t *ResourceTotals) int64 { return t.Complete }},
		{promError, func(t *ResourceTotals) int64 { return t.Error }},
		{promSlow, func(t *ResourceTotals) int64 { return t.Slow }},
	} {
		for i := range snap.Totals {
			t := &snap.Totals[i]
			sink.sample(f.fam, float64(f.v(t)), l(t.App, t.Resource))
		}
	}
	for i := range snap.Totals {
		t := &snap.Totals[i]
		for _, tc := range t.Transitions {
			sink.sample(promTransitions, float64(tc.Count), l(t.App, t.Resource, tc.From.String(), tc.To.String()))
		}
	}
	for _, r := range snap.Rows {
		sink.sample(promSlowRatio, r.SlowRatio, l(r.App, r.Resource))
	}
	for _, r := range snap.Rows {
		sink.sample(promErrorRatio, r.ErrorRatio, l(r.App, r.Resource))
	}
	for _, r := range snap.Rows {
		sink.sample(promP99, float64(r.P99Ms)/1000, l(r.App, r.Resource))
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
			sink.sample(promState, v, l(b.App, b.Resource, b.Instance, s.String(), b.Provenance.String()))
		}
	}
	var byProv [3]int
	for _, b := range snap.Breakers {
		if int(b.Provenance) < len(byProv) {
			byProv[b.Provenance]++
		}
	}
	for _, p := range []Provenance{ProvenanceExact, ProvenanceInferred, ProvenanceUnknown} {
		sink.sample(promBreakers, float64(byProv[p]), l(p.String()))
	}
	bySev := map[[2]string]int{}
	for _, f := range snap.Findings {
		bySev[[2]string{string(f.Kind), f.Severity.String()}]++
	}
	for _, k := range triage.Kinds {
		for _, sev := range []triage.Severity{triage.Info, triage.Warning, triage.Critical} {
			sink.sample(promFindings, float64(bySev[[2]string{string(k), sev.String()}]), l(string(k), sev.String()))
		}
	}
	targets := [3]int{}
	for _, t := range snap.Targets {
		switch t.State.String() {
		case "connecting":
			targets[0]++
		case "up":
			targets[1]++
		case "down":
			targets[2]++
		}
	}
	for i, st := range []string{"connecting", "up", "down"} {
		sink.sample(promTargets, float64(targets[i]), l(st))
	}
	sink.sample(promInstances, float64(snap.Instances), l())
	sink.sample(promMemory, float64(snap.MemoryUsed), l("used"))
	sink.sample(promMemory, float64(snap.MemoryBudget), l("budget"))
	sink.sample(promMemory, float64(snap.MemoryNames), l("names"))
	sink.sample(promMemory, float64(snap.MemoryTraffic), l("traffic"))
	sink.sample(promMemory, float64(snap.MemoryHeld), l("held"))
	for _, sh := range snap.MemoryShares {
		sink.sample(promTargetMemory, float64(sh.Used), l(sh.Target, "used"))
		sink.sample(promTargetMemory, float64(sh.Limit), l(sh.Target, "share"))
	}
	for _, sh := range snap.MemoryShares {
		sink.sample(promTargetRefused, float64(sh.Refused), l(sh.Target))
	}
	sink.sample(promMessages, float64(snap.Messages), l())
	for _, r := range snap.Rejects {
		sink.sample(promRejected, float64(r.Count), l(r.Reason))
	}
	sink.sample(promDropped, float64(snap.Dropped), l())
	sink.sample(promUnreceived, float64(snap.UnreceivedMs)/1000, l())
	for _, r := range snap.Overflow {
		sink.sample(promOverflow, float64(r.Count), l(r.Reason))
	}
}

// promText writes samples in the Prometheus text format.
type promText struct{ w *promtext.Writer }

func (t promText) sample(f *promFamily, v float64, labels []string) {
	t.w.Sample(f.Family, v, labels...)
}
