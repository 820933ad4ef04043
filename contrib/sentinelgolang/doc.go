// Package sentinelgolang lets a service protected by sentinel-golang
// (github.com/alibaba/sentinel-golang v1.0.4) be watched by sentinel-top
// without changing how it is protected: the service keeps calling
// sentinel's api.Entry and loading its rules with circuitbreaker.LoadRules
// and flow.LoadRules; the adapter only listens, and serves what it hears as
// a wire v1 stream at /sentinel/stream, the endpoint sentinel-top's
// --targets dials.
//
// It hooks two of sentinel-golang's extension points:
//
//   - a StatSlot in the global slot chain (Slot), ordered before the
//     circuit breakers' own stat slot, which counts every entry that passes
//     or is blocked and every completion with its response time and error,
//     into sentinel-top's 500 ms buckets (with the response-time histogram
//     and the slow count of the resource's slow-ratio breaker);
//   - a circuitbreaker.StateChangeListener (Listener), which turns every
//     breaker transition into a state message at once: CLOSED -> OPEN with
//     the window that tripped it, HALF_OPEN -> OPEN|CLOSED with the probe.
//
// The rule set (circuitbreaker.GetRules, flow.GetRules and
// hotspot.GetRules) is read at every bucket boundary and sent whenever it
// changes, so sentinel-top sees rule pushes, from a file, Nacos or any
// other data source, as they land. For a resource with hotspot rules, the
// slot also counts each entry under the parameter values the rules read
// (api.WithArgs, api.WithAttachments), and each bucket carries the values
// with the most entries ("hot" in wire v1: at most 8, the rest summed in
// "(other)"). A hotspot rule whose specific items are of a kind core cannot
// match (not a string, integer, float or bool) is left out and counted.
//
// # Where the adapter is exact, and where not
//
// Counts, response times and transitions are sentinel-golang's own events,
// not estimates. Two things sentinel-golang does not hand to a listener are
// reconstructed: the total and bad counts of a trip's window (a shadow
// window per breaker, fed by the same completions, bucketed on the same
// clock; its ratio can differ from the value sentinel-golang reports when
// a bucket boundary falls between the two reads, and the value sent is
// always sentinel-golang's), and a probe's response time and error (the
// resource's latest completion when its breaker leaves HALF_OPEN; with
// ProbeNum 0 that is the probe). Rules core cannot represent (memory
// adaptive flow, associated resources, strategies registered with
// SetCircuitBreakerGenerator) are left out of the rules message and
// counted in Stats.SkippedRules.
//
// # Installing
//
// New registers the slot and the listener in sentinel-golang's global
// state, which sentinel-golang does not guard: call it at start-up, before
// the first api.Entry, and only once per process. A service that builds its
// own slot chain sets Options.Manual and adds Slot and Listener itself.
// Close stops the stream; the slot and listener stay registered (there is
// no way to remove them) and do nothing from then on.
package sentinelgolang
