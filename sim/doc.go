// Package sim is a deterministic fleet: instances of apps calling
// downstreams through guarded resources, on one core.VirtualClock. It feeds
// sentinel-top's --demo and records the fixtures (package fixtures).
//
// Every instance runs the real agent (agent.New) with its own guard, so the
// breakers, windows, flow rules and messages are exactly those of an
// instrumented service: nothing in the stream is synthesized. A Scenario
// says what happens:
//
//   - traffic per call: Constant, Diurnal, Bursts, Steps, or their Sum, as
//     Poisson arrivals;
//   - downstreams: a healthy latency distribution (LogNormal by median and
//     p99, Uniform, Fixed) and error rate; Faults (slow and error windows
//     with an onset and a linear recovery curve, for all callers or some);
//     Jitter (random short episodes of network trouble, independent per
//     caller); a connection Pool whose cold connections pay a handshake;
//     Overload (a capacity in calls per second across the fleet); and the
//     caller's Timeout;
//   - per-instance rule sets loaded at chosen times, so that a push can miss
//     some instances, rules can arrive late, and retry timeouts can be
//     jittered by instance or not; instances can start late and stop;
//   - hot-parameter rules, and calls passing a parameter value (one of a
//     list, at random), so that one customer id can be throttled among
//     many.
//
// One kind of source is not an agent: a Java Sentinel service, whose rules
// apply only to the origin their limitApp names while an agent's apply to
// every caller. A scenario with a Script (JavaService.Script) writes what
// the collector's Java poller gives for such a fleet — hello, rules, a
// bucket a second made from a /metric line, and no transitions but those
// the poller infers when the calls are played through Java's breakers
// (JavaCalls) — from the same seed; it records like the others and cannot
// be played live.
//
// Calls are concurrent: a call starts (Entry), the clock moves, and it ends
// (Exit) when the downstream answers, so a 300 ms call is in flight for 300
// ms and counts in the buckets' concurrency. Events are played in time
// order; at the same instant, starts, rule loads, bucket boundaries, exits,
// arrivals and stops run in that order, and events of one kind in the order
// they were scheduled. Random numbers come from streams derived from the
// seed and the names of what draws them, so the same scenario gives the
// same bytes on every run, and adding an instance does not change the
// others.
//
// Two ways to play a scenario:
//
//   - Run, Record, Fixture and WriteFixture play it as fast as possible.
//     The agents ship manually (agent.Options.ManualShip); the simulation
//     calls Ship at every bucket boundary, reads every agent through an
//     in-process subscription (agent.Subscribe) and merges the streams in
//     time order. A simulated fleet shares one process, so each recorded
//     hello carries a simulated pid. Ten minutes of eight instances at a
//     hundred calls per second take about a second.
//   - StartDemo plays it in real time (or faster): every agent serves its
//     stream on its own 127.0.0.1 port and ships by itself, while the
//     virtual clock follows the wall clock; collectors dial Demo.Targets.
//     DemoScenario loops every two minutes through several incidents.
//
// Throttling flow and hot-parameter rules are refused: they make Entry sleep on the virtual
// clock, which only the simulation's own goroutine moves.
//
// Catalog holds the recorded incidents; each scenario's Expect lists the
// findings its recording must produce and its ExpectPlans the rule plans,
// and the fixtures tests hold them to it.
package sim
