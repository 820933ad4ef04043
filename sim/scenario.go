package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures/expect"
)

// DefaultStart is where a recording's virtual clock starts when its
// Scenario gives no Start: 2025-11-30T00:00:00Z.
var DefaultStart = time.UnixMilli(1764460800000).UTC()

// RecordedBy is the meta line's recordedBy of every recording.
const RecordedBy = "sentinel-top sim"

// Scenario is a fleet and what happens to it: instances of apps calling
// downstreams through guarded resources, traffic, faults and rule changes.
// Run, Record and StartDemo play it; none of them modifies it.
//
// Times inside a scenario (Instance.Start, Fault.From, RuleChange.At, ...)
// are offsets from its start. With Loop set, traffic, faults, jitter windows
// and rule changes repeat every Loop; instance starts and stops do not.
type Scenario struct {
	// Name identifies the scenario and names its fixture file.
	Name string
	// Title and Description go to the recording's meta line; Description
	// says what happens.
	Title       string
	Description string
	// Start is the virtual time a recording starts at. Default: DefaultStart.
	// The demo always starts at the wall clock's now.
	Start time.Time
	// Duration is the length of a recording (required by Run and Record;
	// the demo runs until closed).
	Duration time.Duration
	// Loop, when positive, makes everything scheduled repeat every Loop.
	Loop time.Duration
	// Seed selects the random streams: same seed, same bytes.
	Seed uint64
	// Downstreams are the services the instances call, by name.
	Downstreams []*Downstream
	// Instances are the processes of the fleet, each with its own agent.
	Instances []*Instance
	// Expect lists the findings a recording must produce (written to the
	// meta line as "expect").
	Expect []Expect
	// ExpectPlans lists the rule plans a recording must produce, exactly
	// (written to the meta line as "expectPlans" when there are any).
	ExpectPlans []expect.Plan
	// Script, when set, writes the recording instead of agents, for a
	// source no agent can be: a Java Sentinel service as the collector's
	// Java poller re-serves it (JavaService). It emits the messages from
	// start over the scenario's Duration, in time order; Downstreams and
	// Instances are then unused, and the scenario cannot be played live.
	Script func(start time.Time, s *Scenario, emit func(wire.Message) error) error
}

// Instance is one process: an agent with its own guard, rules and stream.
type Instance struct {
	// App groups instances of one service; Name is unique in the scenario.
	App  string
	Name string
	// Host is reported in hello. Default: 10.0.A.N from the instance's
	// position.
	Host string
	// Pid is reported in a recording's hello (a simulated fleet shares one
	// real process). Default: derived from the instance's position.
	Pid int64
	// Start is when the process starts; Stop, when positive, when it shuts
	// down (sending bye).
	//
	// A later Instance of the same App may take the Name again once this
	// one has stopped (its Start after this one's Stop): the service
	// restarted, a new process under the name, with a later startedAt.
	Start, Stop time.Duration
	// Restarts are when the process restarts, in time order, each after
	// Start and before Stop: it shuts down (sending bye; what it had not
	// shipped is lost) and a new process of the same name starts at the
	// same instant, with a later startedAt and a pid of its own. The new
	// process loads the last of Rules at or before the restart, as a
	// process loads its rules at start: a RuleChange at the restart's time
	// is what it loaded then (a local snapshot, say). Recordings only: the
	// demo refuses them.
	Restarts []time.Duration
	// Calls are the guarded calls it makes.
	Calls []Call
	// Rules are the rule sets it loads, in time order. The last one at or
	// before Start is loaded before its stream opens; with none, the stream
	// opens with an empty rule set, as an agent's does before its rules
	// arrive.
	Rules []RuleChange
}

// Call is a stream of guarded calls from an instance to a downstream.
type Call struct {
	// Resource is the guarded resource's name.
	Resource string
	// Downstream names the Downstream answering the calls.
	Downstream string
	// Traffic is the arrival rate, in calls per second (Poisson arrivals).
	Traffic Traffic
	// Timeout, when positive, is the caller's timeout: a call the
	// downstream would answer later ends at Timeout with an error.
	Timeout time.Duration
	// Params, when set, are the values of the call's one parameter (a
	// customer id, say), which hot-parameter rules limit: each call passes
	// one of them, picked at random with equal chances.
	Params []string
}

// RuleChange is a complete rule set loaded at a time, replacing the
// previous one as Sentinel's loadRules does.
type RuleChange struct {
	At       time.Duration
	Breakers []core.BreakerRule
	Flows    []core.FlowRule
	// Params are the hot-parameter rules.
	Params []core.HotParamRule
}

// Expect is a finding a recording must produce. Severity is "critical",
// "warning" or "info".
type Expect struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	App      string `json:"app"`
	Resource string `json:"resource"`
	// Instances, when set, are the finding's instances exactly.
	Instances []string `json:"instances,omitempty"`
	// Facts, when set, are values the finding's own fields must have, by
	// their JSON names in findings-v1 ("count", "suggest", ...); a value
	// that is an object is compared key by key.
	Facts map[string]any `json:"facts,omitempty"`
}

// ErrScenario is wrapped by every error about an unusable scenario.
var ErrScenario = errors.New("sim: invalid scenario")

func scenarioErr(s *Scenario, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", ErrScenario, s.Name, fmt.Sprintf(format, args...))
}

// Validate reports the first problem that makes the scenario unplayable.
// Run and StartDemo call it.
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return scenarioErr(s, "no name")
	}
	if s.Duration < 0 || s.Loop < 0 {
		return scenarioErr(s, "negative duration or loop")
	}
	if s.Script != nil {
		return nil
	}
	downs := map[string]bool{}
	for _, d := range s.Downstreams {
		if d == nil || d.Name == "" {
			return scenarioErr(s, "a downstream has no name")
		}
		if downs[d.Name] {
			return scenarioErr(s, "downstream %q twice", d.Name)
		}
		downs[d.Name] = true
		if err := d.validate(); err != nil {
			return scenarioErr(s, "downstream %q: %v", d.Name, err)
		}
	}
	if len(s.Instances) == 0 {
		return scenarioErr(s, "no instances")
	}
	names := map[string]*Instance{} // the latest process of each name
	for _, in := range s.Instances {
		if in == nil || in.Name == "" {
			return scenarioErr(s, "an instance has no name")
		}
		if in.Start < 0 || (in.Stop > 0 && in.Stop <= in.Start) {
			return scenarioErr(s, "instance %q: stops before it starts", in.Name)
		}
		for i, r := range in.Restarts {
			if r <= in.Start || (in.Stop > 0 && r >= in.Stop) || (i > 0 && r <= in.Restarts[i-1]) {
				return scenarioErr(s, "instance %q: a restart out of order, or outside its run", in.Name)
			}
		}
		if prev := names[in.Name]; prev != nil && (prev.App != in.App || prev.Stop <= 0 || prev.Stop >= in.Start) {
			return scenarioErr(s, "instance %q twice, not a restart (the same app, starting after the earlier one stops)", in.Name)
		}
		names[in.Name] = in
		for _, c := range in.Calls {
			if c.Resource == "" {
				return scenarioErr(s, "instance %q: a call has no resource", in.Name)
			}
			if !downs[c.Downstream] {
				return scenarioErr(s, "instance %q: unknown downstream %q", in.Name, c.Downstream)
			}
			if c.Traffic == nil {
				return scenarioErr(s, "instance %q: call of %q has no traffic", in.Name, c.Resource)
			}
		}
		var last time.Duration
		for i, rc := range in.Rules {
			if i > 0 && rc.At < last {
				return scenarioErr(s, "instance %q: rule changes out of order", in.Name)
			}
			last = rc.At
			for j := range rc.Breakers {
				if err := rc.Breakers[j].Validate(); err != nil {
					return scenarioErr(s, "instance %q: %v", in.Name, err)
				}
			}
			for j := range rc.Flows {
				if err := rc.Flows[j].Validate(); err != nil {
					return scenarioErr(s, "instance %q: %v", in.Name, err)
				}
				// A throttling rule makes Entry sleep on the virtual clock,
				// which only the sleeping goroutine could advance.
				if rc.Flows[j].ControlBehavior == core.Throttling {
					return scenarioErr(s, "instance %q: throttling flow rules cannot run on the simulation's clock", in.Name)
				}
			}
			for j := range rc.Params {
				if err := rc.Params[j].Validate(); err != nil {
					return scenarioErr(s, "instance %q: %v", in.Name, err)
				}
				if rc.Params[j].ControlBehavior == core.Throttling {
					return scenarioErr(s, "instance %q: throttling hot-parameter rules cannot run on the simulation's clock", in.Name)
				}
			}
		}
	}
	return nil
}

func (s *Scenario) start() time.Time {
	if s.Start.IsZero() {
		return DefaultStart
	}
	return s.Start
}
