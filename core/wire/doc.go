// Package wire owns sentinel-top's wire format, version 1
// (spec/wire-v1.md): the Go types of its six message kinds, their encoder,
// a validating decoder with a fast path for buckets, the content hash that
// versions rule sets, and the NDJSON fixture format that records streams.
//
// One format serves three places: the websocket stream an instrumented
// service serves (agent), the stream the collector re-serves, and recorded
// fixtures. This package knows nothing of websockets, terminals or files; it
// turns messages into bytes and untrusted bytes into checked messages.
//
// # Messages
//
// Message is implemented by *Meta, *Hello, *Rules, *Buckets, *State and
// *Bye; each embeds Header (ts, instance). "v" and "kind" are implied by
// the type. Rules carries core.BreakerRule, core.FlowRule and
// core.HotParamRule ("params"), whose JSON is sentinel-golang's (plus
// limitApp, the origin a Java rule applies to); State carries core.State, written CLOSED, OPEN or
// HALF_OPEN.
//
// # Encoding
//
// Append, AppendBuckets and Marshal write one line of JSON (no newline),
// fields in the spec's order. AppendBuckets does not allocate beyond
// growing its buffer. Strings are escaped so any UTF-8 name (quotes,
// backslashes, control characters, CJK) travels intact; invalid UTF-8
// becomes U+FFFD. The encoder does not validate: call Validate to check a
// message before sending it, and build items with NewBucketItem, which
// repairs what a racing writer can leave in a closed core bucket.
//
// # Decoding
//
// A Decoder checks every message against the rules below and returns a
// *DecodeError naming the field; errors.Is tells its class: ErrMalformed,
// ErrVersion, ErrUnknownKind (count it and skip it: a newer sender's kind),
// ErrTooLarge (ErrNameTooLong for a name or a hot value) or ErrInvalid.
// Decode never panics. Buckets go through a
// hand-written scanner that allocates nothing once a Decoder has seen the
// resource names (it interns a bounded number of them); the *Buckets it
// returns is reused by the next Decode, so Clone what you keep. Other
// kinds go through encoding/json with the same rules. Both paths accept
// exactly the same messages with the same values; FuzzDecode checks it.
// Inside the scanner, an item written exactly as AppendBuckets writes one
// is read in a single pass, and any other shape from its first odd field
// on by the general loop, with the same values and errors.
//
// JSON is read as encoding/json reads it into structs: unknown fields are
// ignored, field names match exactly or else case-insensitively, null
// leaves a field at its zero value (for v, kind, ts and instance: absent),
// integers must be integer literals within int64, nesting is limited to
// 10,000 levels. Stricter than encoding/json: the input must be valid
// UTF-8, and a known field given twice in one object is malformed
// (encoding/json would merge repeated arrays element by element).
//
// The rules, in the order they are checked:
//
//   - size: a frame is at most Limits.MaxFrameBytes (1 MiB) [ErrTooLarge];
//   - syntax: one JSON object, valid UTF-8 [ErrMalformed];
//   - v, kind, ts, instance given at most once [ErrMalformed];
//   - v present [ErrMalformed] and the integer 1 [ErrVersion];
//   - kind present, a string [ErrMalformed], one of the six [ErrUnknownKind];
//   - every known field of the right JSON type, given once [ErrMalformed];
//     at most Limits.MaxItems items (10,000) [ErrTooLarge]; names
//     (instance, resource, app, host, sdk, ruleId, rule ids, version,
//     limitApp, paramKey, specificItems values) at most
//     Limits.MaxNameBytes (1024) bytes [ErrNameTooLong, also ErrTooLarge];
//   - ts present; instance present except in meta [ErrMalformed];
//   - values [ErrInvalid]: times (ts, start, startedAt) within
//     [0, MaxTimeMs]; instance non-empty (meta: may be absent);
//   - hello: bucketMs in [1, MaxBucketMs] (one hour); pid >= 0;
//   - rules: version non-empty; at most MaxItems breakers, flows and
//     params, and specificItems per hot-parameter rule; every rule has a
//     resource and passes core's Validate; a specificItems value given
//     twice is malformed;
//   - buckets: bucketMs in [1, MaxBucketMs]; dropped >= 0; per item:
//     resource non-empty; start a multiple of bucketMs; pass, block,
//     complete, error, slow, rtSum, rtMin, rtMax, concurrency >= 0;
//     error <= complete; slow <= complete; when complete > 0,
//     rtMin <= rtMax <= rtSum, and when complete == 0, rtSum, rtMin and
//     rtMax are 0; rtHist, when present, exactly 14 counts, each >= 0
//     (their sum is not checked against complete: a straggling writer can
//     land in a closed bucket between the two reads); hot, when present, at
//     most MaxHotValues (8) values and one HotOther ("(other)") item
//     [ErrTooLarge, ErrInvalid for a second (other)], each value at most
//     MaxHotValueBytes (128) [ErrNameTooLong], pass and block >= 0 (their
//     sums are not checked against the item's: an entry without the
//     rule's parameter has no value);
//   - state: resource non-empty; strategy 0, 1 or 2; from and to present
//     [ErrMalformed], each CLOSED, OPEN or HALF_OPEN, and different;
//     snapshot counts >= 0 and value finite >= 0; probe rtMs >= 0;
//     threshold finite >= 0; retryTimeoutMs within uint32.
//
// # Rule versions
//
// RulesVersion hashes a rule set's canonical JSON: equal content, equal
// version, whatever the order of rules or of fields.
//
// # Fixtures
//
// NewWriter and NewGzipWriter write one message per line, plain or
// gzip-compressed; NewReader reads either back from any io.Reader (gzip
// recognised by its magic bytes, not by a name), giving each message's
// file:line. A bad line is a
// *LineError naming file:line and the reason, and reading goes on with the
// next line; a line over the frame limit is skipped without being held in
// memory; a truncated last line or gzip stream is reported after every
// line before it. A meta line is valid only as the first line.
//
// This package reads and writes streams only: opening, creating and
// closing fixture and recording files is collector/record's.
package wire
