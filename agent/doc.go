// Package agent is the SDK a Go service embeds to be watched by sentinel-top.
//
// An Agent wraps a core.Guard: the service calls Entry/Exit around each
// protected call, exactly as with core, and loads its breaker and flow rules
// with LoadRules. The agent then serves its statistics at
// /sentinel/stream as a wire v1 websocket stream: hello, the active rules,
// the last 60 s of closed 500 ms buckets, then live buckets every bucket
// period and every breaker transition as it happens, and bye on Close.
// With Options.ServeMetrics it also serves Prometheus metrics at
// MetricsPath (the collector's sentinel_top_* names for this instance: the
// counts shipped, breaker states and transitions), under the same token
// and origin policy.
//
// The service is never slowed by its readers: Entry and Exit touch only
// core's lock-free windows, and each reader has a bounded queue; a reader
// that cannot keep up loses messages, which are counted and reported to it
// as "dropped" in its next buckets message. A reader that sends data or
// floods pings is disconnected, one that does not read gives its slot up to
// one that does, and a web page (another origin, or a name rebound to the
// agent's address) is refused: see docs/SECURITY.md.
package agent
