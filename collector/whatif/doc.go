// Package whatif replays an input's own traffic through core's circuit
// breakers, with the rule an instance ran and with a rule proposed for it,
// and says what each would have done: trips, trips resting on fewer than
// SoundCalls calls, outages caught and how long after they began, probes
// sent, calls passed to a failing downstream and healthy calls blocked
// (findings-v1 revision 3, "Rule plans").
//
// # What the replay knows and what it estimates
//
// An input holds each instance's traffic bucket by bucket: passes, blocks,
// completions, errors, slow completions (against the smallest
// maxAllowedRtMs of the resource's slow-ratio breakers) and, from Go
// sources, a response-time histogram. A Trace is those buckets, with the
// spells during which the instance's real breakers were not CLOSED.
//
// Each bucket becomes calls spread evenly over it. Its completions are the
// calls whose outcome is known: errors spread evenly among them, response
// times dealt from the histogram in a fixed, well-mixed order (each slot
// keeps its count exactly), and a call is slow against the bucket's own
// bound exactly as the bucket says. Its blocks are calls the real breaker
// refused when the bucket overlaps a spell (their outcome is not known);
// otherwise a flow rule refused them, in either world, and they never
// reach a breaker. A call passed at its arrival completes its response
// time later: a probe holds HALF_OPEN that long.
//
// What the input cannot tell is replayed twice, once on each side; every
// count is the total of the side worse for the rule judged (over every
// instance), the calls passed and blocked a range over both:
//
//   - a response time known only between two histogram edges is its
//     highest value on the sensitive side (the breaker counts it slow
//     sooner) and its lowest on the other;
//   - the outcome of a call the real breaker refused is estimated from the
//     known calls around it: the nearest known call before it and those
//     within one statIntervalMs of that one (at most SoundCalls) are one
//     sample, the same after it another (the probes among them); the
//     sensitive side deals refused calls the outcomes of the worse sample,
//     the lenient side those of the better.
//
// Result.Estimated says whether either happened.
//
// # Outage episodes
//
// An outage is defined by the data, for the rule in force: a bucket fails
// when its known calls are bad (slow against the current rule's bound, or
// failed, as its strategy counts) at least at the rule's ratio threshold
// (for an error count, at least half of them), or when it has only refused
// calls and they are that bad on the lenient side of the estimate. An episode
// is a run of failing buckets with nothing but empty buckets between them,
// from the first one's start to the last one's end. It is sound when
// SoundCalls or more of its calls were bad (known, or refused in buckets
// failing on the lenient reading), at the threshold over the whole
// episode: a few slow calls in a quiet second are not an outage, nor is a
// trip on a handful of calls whose next probe, seconds later, failed too
// (in a recording, a short outage and a jitter that the probe met again
// look alike); a minute of refused calls between failed probes is.
// An episode is caught by a replay that trips inside it (or within its
// first bucket before it), and detectMs is from its start to that trip.
// A current rule that counts the downstream's healthy calls bad would
// make healthy traffic an outage by its own criterion: Case.Criterion
// then names the rule whose criterion defines them (the proposal drawn
// from the healthy latency).
//
// # The gate
//
// Compare gates a proposed rule against the current one on the same
// traces (Result.Safe): every sound episode the current rule caught on both
// sides must be caught by the proposal on both sides, no more than one
// statIntervalMs later (the longer of the two rules': a longer window may
// take its length to fill); and a sound episode the traces end in, which the
// current rule has not caught yet, makes no change safe until it is over
// (live, the minutes of a degradation before the breaker trips are no
// ground for advice). A rule that passes adds no loss of a caught
// outage; Gate also reports whether it adds trips resting on fewer than
// SoundCalls calls.
package whatif
