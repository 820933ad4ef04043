// Package triage names failure patterns of circuit breakers: the findings
// of spec/findings-v1.md, for the TUI's alert panel (asked a few times a
// second while data flows in) and for the headless report (asked once at the
// end).
//
// An Engine is fed wire-level facts in time order — Rules, Bucket and
// Transition, one call per wire message or bucket item — through handles:
// an Instance per emitting process and a Series per resource of one. It
// decides no identity: its caller's fleet model judges each hello once
// (JudgeHello: a first hello, a restart, another process under the name)
// and tells the engine with Hello, and tells it when an instance left
// (Left) and came back (Returned); see identity.go. The collector feeds it
// so; Feeder does for callers that only have names (tests, examples). It
// keeps a bounded state per instance and resource: counters, the histogram
// of its healthy traffic and the buckets held back for it (see healthy.go),
// the current run of failed probes, the last 64 transitions and the last 32
// OPEN->OPEN spacings and failed probes' response times of each breaker.
// Findings(now) assembles the findings from that state; it never rescans
// history. Feeding a bucket or a transition looks nothing up by name and
// does not allocate.
// The engine keeps every instance and resource it is told about: bounding
// how many is the collector's job. A bucket that does not start after the
// previous one of its instance and resource is a duplicate and is ignored;
// a transition with an unknown state, or from a state to itself, too.
//
// # Decisions where the spec leaves room
//
// One finding per kind, app and resource. Instances with the pattern are
// merged; counts cover them all; Instances are sorted and distinct. Findings
// are ordered by severity (critical first), From, then kind in the spec's
// order, app and resource, so the same input always gives the same list.
// Summary and Advice carry numbers but never input strings (names,
// versions), which renderers print from the structured fields after
// sanitizing them.
//
// "Critical while the condition lasts to the end of the input" is judged at
// the now given to Findings (the last timestamp of the input for a report):
//
//   - sawtooth: a breaker of the resource is still in a run of 3 or more
//     failed probes (no transition to CLOSED since, no restart), or such a
//     run ended less than HoldMs (45 s) before now.
//   - sync-half-open: the latest occasion happened less than HoldMs or two
//     retry timeouts (whichever is longer) before now, and 3 or more of its
//     instances are still there: while the downstream is down they probe
//     together once per retry timeout.
//   - rule-drift: the instances still disagree at now, or the episode ended
//     at now because they left at the very end of the input.
//   - unprotected: the instance's latest bucket with traffic passed without
//     a rule, ended within StaleMs (default 10 s) of the instance's end, and
//     the instance still has no rule while others of the app do (or did
//     until they left at now).
//
// Whether an instance is present is not the engine's to decide: the
// collector's fleet model calls Left when an instance said bye or went silent
// past its stale period, and the instance leaves its app's comparisons
// (drift, unprotected, herd reporters) at that moment, the same moment it
// leaves the table and /metrics. Its next message brings it back (Returned).
//
// Rule drift and unprotected traffic must last GraceMs (default 5 s) before
// they are reported: a rule push reaches the instances a moment apart, and a
// healthy stream must give no warning. Rule drift compares, per resource,
// the breaker and flow rules of the app's instances that sent rules
// (order-insensitive) with retryTimeoutMs left out, because jittering it
// per instance is the remedy for synchronized half-open probes; an instance
// without a rule for the resource is a group of its own. Groups merge instances with the same version and rules
// for the resource, largest first, then by version.
//
// sawtooth: From is the trip that started the first run of 3 or more failed
// probes, To its latest failed probe; periodMs is the median of the
// OPEN->OPEN spacings (the trip to the first failed probe included) of the
// qualifying runs, probeRtMs the median response time of their failed
// probes; the outage in the advice is the longest such run, from its trip to
// its last failed probe, and the rule judged is that run's breaker's.
//
// sync-half-open: entries are clustered from the first one: an entry joins
// the current cluster if the cluster would still span 1000 ms or less; an
// instance counts once per cluster; a cluster is an occasion once it holds 3
// instances and at least half of the app's instances that report the
// resource (sent buckets or transitions for it). The advice's retry timeout
// is the last counted occasion's, or the rule's when transitions do not
// carry it; the range proposed starts there and spans 30 % more, rounded up
// to whole seconds for Java rules.
//
// low-confidence-trip: only CLOSED->OPEN of strategies 0 and 1 with a
// snapshot of 1 to 19 completions, or inferred (Java Sentinel) with the
// completions of its window's seconds under 20 (lowjava.go); a trip is
// held until the first probe after it (the first HALF_OPEN -> OPEN or ->
// CLOSED): a failed one drops it, a closing one counts it in
// closedAtFirstProbe unless the breaker trips again within the rule's
// statIntervalMs after that close (which drops it), and a trip with no
// probe yet (or none before the next trip or a restart) counts. worst is
// the trip whose lower bound is furthest under its threshold. A trip is a
// cold start when its instance's process (hello startedAt) started at most
// 60 s before it; without a start it is unknown (coldStart absent). Inferred
// trips whose window cannot be told are listed by Engine.Unjudged, never
// counted.
//
// inert-rule origin-mismatch: a flow rule with limitApp is a Java rule
// (only those carry it), and only flow rules are judged (Java never checks
// a degrade rule's limitApp); it is judged once the rule's resource had traffic
// reported for InertMinReportMs on the instance, against the instance's
// app as its latest hello names it; limitApp "default" and "other" are
// never an app's name.
//
// warm-up: a warm-up controller starts at its process's start (or when
// its rules came, if later) and again at a rules message that changed its
// rule (for a Java rule, one with limitApp: any flow rule); an unknown
// process start starts nothing. Each series with a WarmUp rule on the
// default one-second statistic replays the controller's token bucket from
// its passes, summed into whole seconds, until the tokens reach the
// warning line (the span's end). A half second's blocks are the warm-up's
// when the statistic its checks read held the limit's calls (less a slack
// of WarmUpSlackCalls or WarmUpSlackPercent), and no more of them than the
// resource's full flow limit would have admitted; a span that passed more
// than the limit admits is dropped. The finding merges the spans with
// warm-up blocks of its instances; startLimit is threshold /
// warmUpColdFactor of the earliest span's rule.
//
// inert-rule cannot-trip, a ratio threshold of 1.0: judged on tumbling
// windows of statIntervalMs aligned to the epoch (Java's; a sliding
// window sees these and more); a window shows the failure with 20
// completions or more, more than half of them bad but not all; badPassed
// sums the bad calls of such windows (of both cannot-trip reasons, a
// window reaching the rule's threshold), from means where a bucket has no
// histogram (inferred).
//
// self-inflicted: the healthy latency is every completion the series
// reported, whatever the breaker's state (when the rule keeps the breaker
// open, its CLOSED traffic is a window or two): the bound is judged
// against the least their median can be, an error count against their
// error rate over a window's calls at the observed QPS, 19 windows in 20;
// the rule judged is the one in force at the breaker's latest entry into
// OPEN, and 2 entries are needed. A sawtooth of the same rule that
// advises a retry timeout takes it as its cause and advises none.
//
// hot-value: a series follows one run at a time: the value (parameter and
// text, never wire.HotOther) that took at least half of a bucket's blocks,
// while every later bucket with blocks gives it half of them too and no
// more than HotGapMs pass between such buckets (a QPS limit blocks at the
// end of each of its periods, so buckets without blocks come between). A
// run lasts from its first such bucket's start to its last one's end; one
// of HotMinMs or more qualifies. A series keeps the current run and its
// qualifying runs of one value, merged (another value's run replaces them
// when it blocked more): bounded whatever the number of values. The
// finding's value is the one whose qualifying runs blocked most over the
// app's instances; its exception is its rate plus HotHeadroomPercent,
// rounded up to a multiple of 10, per the rule's durationInSec (per second
// when the rules are not known), at least the threshold plus 1.
//
// shared-resource: one finding per resource (not per app), whose app is the
// first of its apps by name; an app reports a resource when one of its
// instances sends buckets or transitions for it.
//
// rule-advice: each instance's ratio breakers of a resource are judged on
// that instance's traffic, the first in the rules' canonical order that
// does not fit counting; the instances where one does not fit are merged,
// with the rule of the first of them by name. qps is the median of their
// mean offered loads (series.qps), rounded to 0.1, and windowRequests,
// minRequestSeconds and the statIntervalMs suggested derive from that
// rounded value; p99Ms is the highest of their healthy p99s, so that the
// maxAllowedRtMs suggested fits every one. From and To bound the buckets
// with traffic.
package triage
