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
//
// A reader only reads. Its first ping goes out before anything else, and
// the pong proves it reads: until then (or while it is late answering), it
// gives its slot up to a newcomer when MaxReaders are connected, and it is
// dropped after PongTimeout. One that sends data, or more than a few pings
// or pongs a second, is cut off: a hostile peer cannot make the service
// spend a core answering it. Requests whose Origin or Host the options do
// not allow get HTTP 403 (DNS rebinding).
//
// Serve bounds every connection, stream or not: at most MaxConns are open
// (one more is closed as it is accepted, and counted), a request's headers
// and body must arrive within RequestTimeout, and a plain response must be
// written within ResponseTimeout. A stream, once upgraded, is under its own
// deadlines (pings and WriteTimeout), so these end with the upgrade.
package wsstream
