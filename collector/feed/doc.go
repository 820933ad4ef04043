// Package feed is what the collector's sources and its store share, and
// all that they share: the sinks a source writes to, and the facts it
// hands the store beside the wire messages (a dialed target's status
// record, a replay's status, what a hello's sender cannot tell).
//
// The store (package collector) implements the sinks and names no source;
// the sources (package collector/source) write to a sink and read nothing
// of the store. What the store shows of a source arrives as values through
// a sink: a status record the source updates and the store reads at each
// snapshot under the record's own lock, a replay's status stamped with a
// generation, an Origin stated with a hello. So neither waits on the
// other's lock, and cmd/sentinel-top wires one to the other.
package feed
