// Package rulefile reads a rule set someone proposes, from a JSON file:
// circuit-breaker and flow rules, in sentinel-golang's format or Java
// Sentinel's, as core's rules.
//
// # Formats
//
// A rule file is one JSON array of rules of one kind, as the runtime's
// file datasource reads it:
//
//   - go-breaker (FormatGoBreaker): sentinel-golang v1.0.4's
//     circuitbreaker.Rule: id, resource, strategy (0 slow ratio, 1 error
//     ratio, 2 error count), retryTimeoutMs, minRequestAmount,
//     statIntervalMs, statSlidingWindowBucketCount, maxAllowedRtMs,
//     threshold, probeNum. core.BreakerRule has the same JSON, so a rule
//     decodes into it as sentinel-golang decodes it, core's own fields
//     (semantics, pattern, limitApp) included: a rule set core wrote
//     reads back. A window of more than 65536 buckets is refused:
//     sentinel-golang, like core, makes them all at once.
//   - go-flow (FormatGoFlow): sentinel-golang v1.0.4's flow.Rule (id,
//     resource, tokenCalculateStrategy, controlBehavior, threshold,
//     relationStrategy, refResource, maxQueueingTimeMs, warmUpPeriodSec,
//     warmUpColdFactor, statIntervalInMs), decoded into core.FlowRule. A
//     rule core does not implement is refused, not read as another: an
//     associated resource (relationStrategy 1), a memory-adaptive one
//     (tokenCalculateStrategy 2). What sentinel-golang ignores is
//     dropped: a refResource without relationStrategy 1, the
//     memory-adaptive fields of another strategy.
//   - java-degrade (FormatJavaDegrade): Java Sentinel's DegradeRule
//     (resource, grade, count, timeWindow, minRequestAmount,
//     slowRatioThreshold, statIntervalMs, limitApp, regex), mapped by
//     JavaDegradeRules: Java's semantics (core.SemanticsJava), Java's
//     defaults for fields left out (slowRatioThreshold 1,
//     minRequestAmount 5, statIntervalMs 1000), a slow-ratio count
//     rounded as Java rounds it (0.5 is a 1 ms bound), timeWindow in
//     seconds. A file says no Sentinel version: a rule is one of 1.6 or
//     1.7 (core.SemanticsJava16) when it has their fields (passCount,
//     rtSlowRequestAmount) and not 1.8's slowRatioThreshold.
//   - java-flow (FormatJavaFlow): Java Sentinel's FlowRule (resource,
//     grade, count, strategy, refResource, controlBehavior,
//     warmUpPeriodSec, maxQueueingTimeMs, clusterMode, limitApp, regex),
//     mapped by JavaFlowRules. What core has no field for (grade 0,
//     threads; strategy 1 or 2, relate or chain; cluster mode) is kept in
//     the rule's ID, "java:" and a list ("java:threads,relate=db"): core
//     limits the rule's own resource by QPS whatever the ID says, so a
//     caller that enforces rules should look at such IDs.
//
// Java rules name resources as Java's metric logs write them ("|" is
// "_"), so that rules meet the statistics of a replay. collector/source
// maps the rules a Java service answers with the same two functions.
//
// Fields a format does not know are ignored: real files carry more (the
// dashboard's id, app, ip, port, gmtCreate). Everything else that does
// not read is an error naming the rule's index (from 0) and the field: a
// rule that is not an object, a value of the wrong JSON type or out of
// its type's range (ErrType), a rule core's Validate, Java's rule
// managers or sentinel-golang's would refuse (core.ErrInvalidRule).
//
// # Telling the format
//
// FormatAuto tells the format from the rules' keys, in any case (as
// encoding/json, and so sentinel-golang, match them):
//
//  1. The family. Keys only sentinel-golang's rules have: threshold,
//     retryTimeoutMs, maxAllowedRtMs, statSlidingWindowBucketCount,
//     probeNum, tokenCalculateStrategy, relationStrategy,
//     warmUpColdFactor, statIntervalInMs, the memory-adaptive fields,
//     semantics. Keys only Java's have: count, grade, timeWindow,
//     slowRatioThreshold, rtSlowRequestAmount, passCount, regex,
//     clusterMode, clusterConfig. (resource, id, limitApp, strategy,
//     minRequestAmount, statIntervalMs, controlBehavior, refResource,
//     maxQueueingTimeMs and warmUpPeriodSec are both families'.)
//  2. The kind, within the family. sentinel-golang breaker keys:
//     strategy, retryTimeoutMs, minRequestAmount, statIntervalMs,
//     statSlidingWindowBucketCount, maxAllowedRtMs, probeNum, semantics;
//     its flow keys: tokenCalculateStrategy, controlBehavior,
//     relationStrategy, refResource, maxQueueingTimeMs, warmUpPeriodSec,
//     warmUpColdFactor, statIntervalInMs, the memory-adaptive fields.
//     Java degrade keys: timeWindow, slowRatioThreshold,
//     minRequestAmount, statIntervalMs, rtSlowRequestAmount, passCount,
//     and grade 2 (error count: a flow rule's grade is 0 or 1); its flow
//     keys: strategy, controlBehavior, refResource, warmUpPeriodSec,
//     maxQueueingTimeMs, clusterMode, clusterConfig. (strategy is a
//     breaker's in sentinel-golang and a flow rule's in Java.)
//  3. A rule with keys of both families, or of both kinds, is ambiguous;
//     an array whose rules have different families' or kinds' keys is
//     mixed: both are errors (ErrFormat) naming the rule's index and the
//     keys. A rule with no telling key takes its array's format.
//  4. An array none of whose rules has a breaker's key is flow rules: a
//     breaker rule cannot be valid without its retry timeout
//     (retryTimeoutMs, timeWindow), while a flow rule can be as short as
//     {"resource": "a", "threshold": 10} or {"resource": "a", "count": 10}.
//  5. An empty array (or empty data, or null), or one where no rule has
//     a key of either family, cannot be told: name its format. A named
//     format reads an empty array as no rules of that kind, and still
//     refuses a rule with another format's keys (which would otherwise
//     read as a rule of zero thresholds).
//
// # Files
//
// ReadFile reads a file of at most DefaultMaxBytes (or the bound given),
// a regular file only: a directory, a named pipe or a device is refused,
// and opening one never blocks. Merge puts the rule sets of several files
// (a degrade file's and a flow file's) together. ParseFormat, and Format
// as a flag.Value, read a format's name for a --rules-format flag.
package rulefile
