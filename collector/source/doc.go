// Package source holds the collector's sources: what reads wire v1
// messages, or makes them, and writes them to a sink (collector/feed).
// A source knows its sink and its own options; it reads nothing of the
// store it feeds, and the store (package collector) calls none of it.
// cmd/sentinel-top wires them: a source writes to a *collector.Collector.
//
//   - Dial (dial.go) connects to --targets and keeps each connected: a
//     goroutine per target for its connection's life (handshake, backoff,
//     reconnect). Past the handshake a plain ws:// connection is read by a
//     few pollers on Linux (poll_linux.go: one epoll set and goroutine per
//     processor, frames read by wsframe.go), a wss:// one (or any off
//     Linux) by its own goroutine; both hand each message to the same
//     stream. A target's status is a feed.TargetRecord the target's
//     goroutine updates and the store reads at each snapshot.
//   - sentinel:// targets are Java Sentinel's command API, polled
//     (javatransport.go, javarules.go, javaparams.go): metrics, rules and
//     hot-parameter rules turned into wire messages (degrade and flow
//     rules mapped by collector/rulefile), breaker states inferred from
//     the counts (collector/metriclog). A target's reconnect
//     goes on from what its own polls delivered (javaresume.go), and the
//     Java targets of one Dial share the resources of their apps, which
//     regex rules are listed over.
//   - Replay (replay.go, replaysource.go) feeds a recording, or messages
//     converted from metric logs, on a virtual clock, with pause, speed
//     and seek; it tells its sink its status. It feeds messages in the
//     order of their time and each after its instance's hello and rules
//     (replayorder.go): a recording holds each target's backfill after its
//     hello, older than it.
//
// What the wire does not carry travels beside a message through the sink:
// a hello's feed.Origin (a polled sender, one without breaker states),
// stated by the Java poller, and judged from a hello's sdk (OriginOf) by
// the sources that read hellos another wrote.
package source
