// Package collector turns wire v1 streams into a diagnosis: it is the
// store that keeps one model of the fleet that every view reads. What
// feeds it (dialed services, Java Sentinel polled, recordings and metric
// logs replayed on a virtual clock) is in collector/source, which writes
// to it as a sink (collector/feed) and reads nothing of it.
//
// The flow, as docs/ARCHITECTURE.md draws it:
//
//   - Sources (collector/source: Dial, the Java poller, Replay; metric
//     logs, the demo) decode and validate what arrives and hand it to the
//     store through a sink: Ingest (Hello for a hello, with what the
//     source states of its sender, feed.Origin) and Reject. The store
//     knows no source and calls none: what it shows of one arrives as
//     values through the sink (a dialed target's status record, read at
//     publish; a replay's status, stamped with a generation). The
//     dashboard takes a replay's controls directly.
//   - The fleet model (fleet.go, ingest.go) owns instance identity and
//     restarts (each hello judged once, by triage.JudgeHello), the one
//     liveness rule (a bye, or silent past Options.StaleAfter: swept at
//     every publish), dedupe by (instance, resource, start), and breaker
//     tracks. Aggregation rings and the triage engine are told of each
//     accepted fact once. The engine decides no identity: each instance
//     and series of the store holds the engine's handle of it, through
//     which the store tells it what it decided (a new instance, its first
//     hello, a restart, another process under the name, a departure, a
//     return) and feeds it facts without looking up a name (a buckets
//     message's items under one lock). The engine holds each instance's
//     rules, the one copy that rule drift and the detail both read.
//   - What the store accepted goes on through tees outside its lock: the
//     recording and the re-served stream get each bucket item once.
//   - Publish (4 a second in Run) applies the liveness rule, computes the
//     findings once, and makes an immutable Snapshot: the table, the report,
//     /report and Prometheus read it; Detail reads the model for one
//     resource with the published findings, so the views never disagree.
package collector
