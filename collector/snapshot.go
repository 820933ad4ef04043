package collector

import (
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// Mode says where a collector's data comes from.
type Mode uint8

// The modes.
const (
	ModeLive   Mode = iota // dialing targets
	ModeReplay             // replaying a recorded fixture
)

func (m Mode) String() string {
	if m == ModeReplay {
		return "REPLAY"
	}
	return "LIVE"
}

// Snapshot is the collector's state at one instant, for the UI. It is
// immutable once published: readers may keep it and share it freely. Strings
// in it come from remote peers and are NOT sanitized: renderers must.
type Snapshot struct {
	// At is the collector's clock when the snapshot was taken, Unix ms (the
	// replay position in replay mode).
	At int64
	// Seq increases by one with every snapshot published.
	Seq uint64
	// Mode, Source (the targets or the fixture), and the replay controls.
	Mode   Mode
	Source string
	Replay ReplayStatus
	// Targets is the status of every dialed target (live mode), in the order
	// they were given. A target's status that did not change is the same
	// value as in the snapshot before (feed.TargetRecord.Published): like
	// the rest of a snapshot, never written once published.
	Targets []*TargetStatus
	// Counts.
	Apps, Instances, Resources int
	// Seen counts the apps, instances and resources the input named since
	// the collector started (unlike the counts above, those gone too),
	// with the time range of the data: what a report of the input saw.
	Seen triage.Counts
	// Messages counts accepted messages; Rejected those refused, by reason.
	Messages int64
	Rejected int64
	Rejects  []RejectCount
	// Dropped counts messages the agents dropped for this collector (they
	// report it), and Overflow what the collector's own limits turned away.
	Dropped  int64
	Overflow []RejectCount
	// Unreceived is the data known never to have arrived: time instances
	// the collector had data from were out of reach for longer than a
	// reconnect's backlog brings back (wire.BacklogMs), by instance, the
	// largest first, at most 64; UnreceivedMs is all of it, and
	// UnreceivedOthers counts the instances not listed. A gap is unknown,
	// not idle; its warning is in Warnings.
	Unreceived       []DataGap
	UnreceivedMs     int64
	UnreceivedOthers int
	// Warnings are typed facts to warn of, in the order to show them:
	// clock skew (the collector's, then each instance's), the targets'
	// notes (sorted), the data never received, the notices about the
	// input (sorted by instance, resource and kind), then the trips not
	// judged (by app and resource). WarningText words each.
	Warnings []Warning
	// Recording is set while everything accepted is being recorded
	// (Options.Record); RecordError says when that stopped.
	Recording bool
	// RecordError is why the recording stopped ("" while it works or when
	// there is none): nothing has been written since.
	RecordError string
	// MemoryUsed is what the memory budget has charged (an estimate, in
	// bytes) of MemoryBudget (Options.MaxMemory).
	MemoryUsed, MemoryBudget int64
	// MemoryNames is the part of MemoryUsed the names the connections
	// decoded take (the shared pool's and the decoders' own, each bounded).
	MemoryNames int64
	// MemoryTraffic is the part of MemoryUsed the traffic kept for
	// replaying plans holds, of its bound MemoryTrafficBound
	// (Options.Triage.TraceBytes; 0 when none is kept): it grows with the
	// input until it reaches the bound, and turns over from then on, the
	// oldest first.
	MemoryTraffic, MemoryTrafficBound int64
	// MemoryHeld is what the sources hold while they read (frames being
	// decoded, rules answers being parsed), beside MemoryUsed.
	MemoryHeld int64
	// MemoryShares is what each owner (dialed target; "" for sources
	// without one) holds of the budget and what was refused it, by target.
	MemoryShares []MemoryShare
	// Rows is one row per app x resource, sorted by app then resource.
	Rows []ResourceRow
	// Findings are the triage findings, most severe first.
	Findings []triage.Finding
	// Plans are the findings' proposals, one per rule, each replayed on
	// the input's traffic and gated (findings-v1 revision 3); the
	// findings' suggest and advice agree with them.
	Plans []triage.Plan
	// Breakers is the current state of every live instance's breakers, one
	// per instance x resource with a breaker rule (the worst of its
	// breakers), grouped by instance in name order (not sorted further:
	// at 200,000 series the sort cost a fifth of a snapshot).
	Breakers []BreakerState
	// Totals are the exact counters of every app x resource since the
	// collector started (instances gone included), sorted.
	Totals []ResourceTotals
}

// BreakerState is one live instance's breaker state for a resource.
type BreakerState struct {
	App, Resource, Instance string
	// State is meaningless when Provenance is ProvenanceUnknown.
	State      core.State
	Provenance Provenance
}

// ResourceTotals are exact sums over everything accepted for an app x
// resource, and its breaker transitions by (from, to).
type ResourceTotals struct {
	App, Resource                      string
	Pass, Block, Complete, Error, Slow int64
	Transitions                        []TransitionCount
	// States is where its breaker states came from: unknown when any
	// instance reporting it could not tell them, else inferred when any
	// had them inferred, else exact.
	States Provenance
}

// TransitionCount counts the transitions from one state to another.
type TransitionCount struct {
	From, To core.State
	Count    int64
}

// ReplayStatus describes a replay in progress, as the replay tells it
// (feed.ReplaySink).
type ReplayStatus = feed.ReplayStatus

// TargetState is a dialed target's connection state.
type TargetState = feed.TargetState

// The target states.
const (
	TargetConnecting = feed.TargetConnecting
	TargetUp         = feed.TargetUp
	TargetDown       = feed.TargetDown
)

// TargetStatus is one dialed target as the UI shows it, as its connection
// tells it (feed.TargetRecord).
type TargetStatus = feed.TargetStatus

// MaxTargetInstances bounds the distinct instances a target's status
// counts (feed.MaxTargetInstances).
const MaxTargetInstances = feed.MaxTargetInstances

// TargetRemark is what a target cannot tell, standing while it is
// polled (feed.TargetRemark); RemarkText words it.
type TargetRemark = feed.TargetRemark

// RejectCount is a reason and how many messages it turned away.
type RejectCount struct {
	// Reason is a stable token (ReasonMalformed, ReasonMaxRate, ...).
	Reason string
	Count  int64
	// Last is the last such rejection, with its place (file:line or target).
	Last string
}

// StateCounts counts instances by breaker state. An instance with several
// breakers for a resource counts once, in its worst state. Unknown counts
// the instances whose source cannot tell breaker states (Java Sentinel's
// transport and metric logs, until states are inferred): never CLOSED.
type StateCounts struct {
	Closed, HalfOpen, Open int
	Unknown                int
}

// Provenance says where a breaker state comes from.
type Provenance uint8

// The provenances.
const (
	// ProvenanceExact: the source reports every transition.
	ProvenanceExact Provenance = iota
	// ProvenanceInferred: derived from per-second counts (wire v1
	// "inferred"), accurate to the second.
	ProvenanceInferred
	// ProvenanceUnknown: the source cannot tell breaker states.
	ProvenanceUnknown
)

// String is "exact", "inferred" or "unknown".
func (p Provenance) String() string {
	switch p {
	case ProvenanceInferred:
		return "inferred"
	case ProvenanceUnknown:
		return "unknown"
	}
	return "exact"
}

// Total is the number of instances counted.
func (c StateCounts) Total() int { return c.Closed + c.HalfOpen + c.Open + c.Unknown }

// ResourceRow is one app x resource in the main table. Rates and ratios are
// over the last RateWindowMs of each instance's data.
type ResourceRow struct {
	App, Resource string
	// Instances counts the live instances reporting the resource (those
	// the header counts: see Options.StaleAfter).
	Instances int
	PassQPS   float64
	BlockQPS  float64
	// Completed counts the completions over the rate window: with none,
	// the ratios and latencies below mean nothing (show "–", never 0).
	Completed int64
	// SlowRatio and ErrorRatio are of completions; AvgRtMs their mean.
	SlowRatio, ErrorRatio float64
	AvgRtMs               float64
	P50Ms, P99Ms          int64
	// HasP99 is set when P50Ms and P99Ms come from an RT histogram: Java
	// Sentinel and metric logs report averages only (then P99 is unknown).
	HasP99 bool
	// SlowUnknown is set when an instance counted in the row cannot tell
	// slow calls (Java Sentinel's counts and metric logs have none): its
	// SlowRatio is then no measurement (show "–").
	SlowUnknown bool
	// RTUnknown is set when an instance counted in the row reads no
	// response times (the Prometheus source): AvgRtMs and the quantiles
	// are then no measurement (show "–", never 0 ms).
	RTUnknown bool
	// Breakers counts the live instances by state; HasBreaker is false
	// when no instance listed (live, or gone within the stale period) has a
	// breaker rule for the resource.
	Breakers   StateCounts
	HasBreaker bool
	// HasFlow and HasParam are set when a listed instance has flow rules,
	// hot-parameter rules for the resource: what guards it when no breaker
	// does. RulesUnknown is set when a listed instance's rules were never
	// read (a metric log carries none; a Java Sentinel target whose
	// /getRules failed): "no rule" cannot then be said of the resource.
	HasFlow, HasParam bool
	RulesUnknown      bool
	// LastTransition is the time of the latest breaker transition, Unix ms.
	LastTransition int64
	// Worst is the most severe finding naming this resource, and
	// HasFinding whether there is any.
	Worst      triage.Severity
	HasFinding bool
}

// Detail is one app x resource over a time range, for the detail screen.
type Detail struct {
	App, Resource string
	// From and To bound the range, Unix ms; StepMs is the resolution of the
	// series below (1 s for recent ranges, coarser for older ones).
	From, To, StepMs int64
	// Per-step series, oldest first, all of the same length. A step with no
	// data is NaN in the ratio and latency series and 0 in the rates.
	PassQPS, BlockQPS     []float64
	SlowRatio, ErrorRatio []float64
	P99Ms                 []float64
	// Threshold, Strategy and MaxAllowedRtMs are those of the breaker most
	// live instances have for the resource (HasBreaker false when none has
	// one); with none live, most of the departed instances, by their last
	// known rules (RulesOfGone set): what guarded them still says what the
	// timeline's trips were.
	HasBreaker     bool
	RulesOfGone    bool
	Strategy       core.Strategy
	Threshold      float64
	MaxAllowedRtMs uint64
	// Instances, sorted by name.
	Instances []InstanceDetail
	// Findings naming this resource.
	Findings []triage.Finding
	// HotRules are the resource's hot-parameter rules, those most live
	// instances have. Hot are its hottest parameter values over the rate
	// window, summed over the live instances: at most wire.MaxHotValues,
	// by entries, then one wire.HotOther. HotUnknown, when set, names a
	// source among the instances that cannot report hot values (Java
	// Sentinel, metric logs): their entries are missing from Hot, which
	// must not be read as none.
	HotRules   []core.HotParamRule
	Hot        []HotValue
	HotUnknown string
}

// InstanceDetail is one instance's view of a resource.
type InstanceDetail struct {
	Instance string
	// State is its current breaker state (worst of its breakers), and
	// StateSince when it entered it.
	State      core.State
	StateSince int64
	HasBreaker bool
	// Start is the state at Detail.From; Transitions those within the
	// range (KnownFrom says from when any of it is known).
	Start       core.State
	Transitions []Transition
	// Rules are the instance's rules for the resource; RulesVersion the
	// version of its whole rule set; Drift is set when they differ from the
	// rules most instances of the app have.
	Breakers     []core.BreakerRule
	Flows        []core.FlowRule
	Params       []core.HotParamRule
	RulesVersion string
	Drift        bool
	// RulesUnknown is set when no rules of the instance were ever read (a
	// metric log carries none; a Java Sentinel target whose /getRules
	// failed): its rules above are then not known to be none.
	RulesUnknown bool
	// Rates over the last RateWindowMs.
	PassQPS, BlockQPS     float64
	SlowRatio, ErrorRatio float64
	// ClockOffsetMs is the estimated offset of the instance's clock (arrival
	// minus ts); Gone is set after bye or when it went silent.
	ClockOffsetMs int64
	Gone          bool
	// Provenance says whether State and Transitions are exact, inferred
	// from counts, or unknown (then State means nothing).
	Provenance Provenance
	// Unreceived are the spans within the range whose data is known never
	// to have arrived (Snapshot.Unreceived): what the breaker did there is
	// unknown but for the transitions listed. Absent are those in which no
	// process ran under the name (between a process's last data and its
	// restart). KnownFrom is when its breaker state is first known (its
	// first data, or its first transition when that leaves another state
	// than Start), and KnownTo when it stops being known (its last message,
	// once it is gone; 0 while it is there): Timeline draws from them.
	// Silent are the spans in which an inferred CLOSED is not known: no
	// call for at least the breaker's timeWindow, over which it may have
	// tripped and closed again unseen (collector/silence.go).
	Unreceived, Absent, Silent []Span
	KnownFrom, KnownTo         int64
}

// Timeline is the instance's breaker history over [from, to] as every
// view draws it (triage.Timeline.Cells): the same account the findings'
// timelines in a report are (Collector.Timelines).
func (in *InstanceDetail) Timeline() triage.Timeline {
	tl := triage.Timeline{Instance: in.Instance, Start: in.Start, KnownFrom: in.KnownFrom, KnownTo: in.KnownTo,
		Steps: make([]triage.Step, len(in.Transitions))}
	for i, t := range in.Transitions {
		tl.Steps[i] = triage.Step{AtMs: t.AtMs, To: t.To}
	}
	tl.Unknown = append(append(append(tl.Unknown, in.Absent...), in.Unreceived...), in.Silent...)
	return tl
}

// Transition is one breaker state change as the fleet model keeps it.
type Transition = fleet.Transition
