// Package wsstream serves a wire v1 stream over websockets to any number of
// readers without ever letting one slow the sender: the agent serves an
// instrumented service's stream with it, and `sentinel-top serve` re-serves
// a collector's merged stream.
//
// Every reader has a bounded queue. Broadcast never waits: a reader whose
// queue is full loses the message, which is counted and reported to it as
// "dropped" in its next buckets message. A new reader first receives what
// the owner's Initial function returns (hello, rules, a backlog), registered
// under the same lock as broadcasts made through Locked, so that nothing is
// both in its initial frames and its queue, and nothing falls in between.
package wsstream
