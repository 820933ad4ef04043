// Package metriclog reads Sentinel's per-second metric format, the one
// format shared by three places sentinel-top can watch without touching the
// watched service:
//
//   - metric log files, written by Java Sentinel and sentinel-golang alike
//     as APP-metrics.log[.pidPID].yyyy-MM-dd[.N], one "fat" line per
//     resource and second:
//     ts|yyyy-MM-dd HH:mm:ss|resource|passQps|blockQps|successQps|exceptionQps|rt|occupiedPassQps|concurrency|classification
//   - the answer of Java Sentinel's transport command API to
//     GET /metric?startTime=..&endTime=.., the same lines in their "thin"
//     form, without the date-time field;
//
// ParseFat and ParseThin read one line each; Line.Item maps it to a wire v1
// bucket item of 1000 ms; Merge sums the items of one second that share a
// name; Convert turns a whole metric log into wire messages (a hello, then
// one buckets message per second, with the breaker transitions Inference
// derives from the counts) that a replay can feed to a collector; Group
// sorts files into the processes that wrote them, one instance each, for
// ConvertSources; Detect tells a metric log from an NDJSON recording, and
// IndexOf Java's binary index from a log.
//
// Inference is shared with the collector's Java poller, which knows the
// rules: see its documentation and docs/JAVA.md for the rule and how it
// was measured against Java Sentinel's own transitions.
//
// # Mapping
//
// pass, block, complete (successQps) and error (exceptionQps, capped at
// complete) are copied; rt is the average response time of the second's
// completions, so rtSum is rt x complete and rtMin = rtMax = rt (the only
// per-second figure there is); slow is 0 because the format does not say
// which completions were slow; there is no histogram. occupiedPassQps and
// classification have no wire counterpart and are dropped.
//
// Both writers replace every "|" of a resource name with "_", so a line
// always has its fields in place; rule files still carry the original
// names, which LegalName maps the same way. Two resources whose names meet
// that way ("a|b", "a_b") write two lines of one second under one name:
// they are summed, as Sentinel's dashboard does, and reported as a
// Collision. Lines of the pseudo resources
// __total_inbound_traffic__, __cpu_usage__ and __system_load__ (the latter
// two carry the host's load x 10000 in passQps) are not resources: Internal
// reports them and Convert skips them. Missing trailing fields (older
// versions write 7 or 8 counts) read as 0; extra trailing fields are
// ignored, as Sentinel's own parsers do.
//
// A line that cannot be used is an error wrapping wire.ErrMalformed or
// wire.ErrTooLarge (wire.ErrNameTooLong for a resource name), so a
// collector counts it under the same reasons as a bad wire message;
// Convert reports it as a *wire.LineError with its file:line and goes on
// with the next line.
package metriclog
