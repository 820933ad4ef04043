package feed

import "github.com/sentinel-top/sentinel-top/core/wire"

// Sink is what every source writes to: decoded, valid messages, and what
// could not be used. A place is where a message came from: file:line, or
// a target's name.
type Sink interface {
	// Ingest takes one message from place; false when it was turned away
	// by a limit (and counted). The message is not kept: the source may
	// reuse it afterwards.
	Ingest(place string, m wire.Message) bool
	// Hello is Ingest for a hello, with what the source states of the
	// process that sent it beyond what the wire carries. Ingest of a hello
	// is Hello with the zero Origin.
	Hello(place string, h *wire.Hello, o Origin) bool
	// Reject counts a message that could not be used: err's class
	// (wire.ErrMalformed, ...) is the reason, place says where.
	Reject(place string, err error)
}

// Origin is what a source states of the process whose hello it writes:
// facts wire v1 does not carry (a hello's sdk names a library; it states
// no capability). The zero Origin is a process that reports its own
// breaker transitions and stamps its own messages: an agent.
type Origin struct {
	// Polled: the source polls the process (Java Sentinel's command API)
	// and stamps its messages' ts itself, so a ts tells how far the
	// process's data lags, not how far its clock is off.
	Polled bool
	// StatesUnknown: the source cannot report breaker transitions (Java
	// Sentinel, a metric log): a breaker's state is inferred from counts
	// or unknown, never CLOSED by default.
	StatesUnknown bool
	// SlowUnknown: the source does not count slow calls (Java Sentinel's
	// counts, a metric log, a Prometheus family without a slow counter):
	// its slow count is no measurement, never 0 % slow.
	SlowUnknown bool
	// RTUnknown: the source reads no response times (Prometheus): its
	// completions' response time is unknown, never 0 ms.
	RTUnknown bool
	// Relayed: the source reads the process through a server between
	// (Prometheus), the target its place names: while that target is
	// down the process is hidden, not gone, and its states unknown.
	Relayed bool
}

// DialSink is what a source dialing targets writes to: a Sink, a Sink
// bound to each connection, and the facts of its targets.
type DialSink interface {
	Sink
	// Bound returns a sink for one connection (owner names its target):
	// an instance is the target and the name together, so that a name
	// another connection announced too is another instance, never merged
	// with it nor refused.
	Bound(owner string) BoundSink
	// AddTargets hands the store the status records of dialed targets, to
	// be shown in the order given: the source updates them, the store
	// reads them at each snapshot.
	AddTargets(rs ...*TargetRecord)
	// Names is the name pool the source's decoders share
	// (wire.Decoder.ShareNames), the store's, charged to its memory
	// budget.
	Names() *wire.NamePool
	// HoldNames tells the store that the source's decoders hold n bytes
	// more of names of their own (n < 0: fewer), charged to its budget.
	HoldNames(n int64)
	// Hold tells the store that the source holds n bytes more (n < 0:
	// fewer) while it reads: a frame being decoded and its message
	// ingested, a rules answer being parsed. They are charged to its
	// budget while they live (what is new is turned away meanwhile).
	Hold(n int64)
	// OverRate counts n messages of place dropped unread over the
	// source's rate limit.
	OverRate(place string, n int64)
	// Unreceived counts instance's data of [from, to) (its clock, Unix
	// ms) as never received: a reconnect could not read it back.
	Unreceived(instance string, from, to int64)
	// NameCollision notes that lines of one second (at, Unix ms) of
	// instance were summed under one resource name: Java writes "|" as
	// "_", so two resources may share it.
	NameCollision(instance, resource string, at int64)
}

// BoundSink is the sink of one connection (DialSink.Bound): its facts
// about an instance are about the one its connection announced.
type BoundSink interface {
	Sink
	// Unreceived is DialSink.Unreceived for the connection's instance.
	Unreceived(instance string, from, to int64)
	// NameCollision is DialSink.NameCollision for the connection's
	// instance.
	NameCollision(instance, resource string, at int64)
}

// ReplaySink is what a replay writes to: a Sink that can start over, and
// the replay's status.
type ReplaySink interface {
	Sink
	// Reset forgets everything ingested: a replay seeking back starts
	// over from the beginning of its input.
	Reset()
	// SetReplay tells the replay's status, of generation gen: a status of
	// an older generation than the one held is ignored, so one told late
	// never replaces a newer one.
	SetReplay(st ReplayStatus, gen uint64)
	// ReplayOrdered tells what the replay could not feed in its place,
	// the totals so far (each larger than the last told): the store shows
	// them, and keeps them when it is Reset (they describe the input).
	ReplayOrdered(o ReplayOrder)
}
