package wire

import (
	"encoding/json"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/core"
)

// Version is the wire format version this package speaks; every message
// carries it as "v".
const Version = 1

// Kind names a message type (the "kind" field).
type Kind string

// The message kinds of wire v1.
const (
	KindMeta    Kind = "meta"    // first line of a fixture file
	KindHello   Kind = "hello"   // first message of every stream connection
	KindRules   Kind = "rules"   // the full active rule set
	KindBuckets Kind = "buckets" // closed window buckets, batched
	KindState   Kind = "state"   // one circuit-breaker transition
	KindBye     Kind = "bye"     // graceful end of a stream
)

// BacklogMs is how far back the buckets a new stream connection receives
// reach: after hello and rules, the sender sends the buckets of the last
// 60 s it still holds, so that a reader reconnecting within a minute fills
// its gap. A reader away for longer knows that what is older than that
// never reached it.
const BacklogMs = 60_000

// StreamPath is where an instrumented service serves its stream
// (ws://HOST:PORT/sentinel/stream).
const StreamPath = "/sentinel/stream"

// Known reports whether k is one of the kinds of wire v1.
func (k Kind) Known() bool {
	switch k {
	case KindMeta, KindHello, KindRules, KindBuckets, KindState, KindBye:
		return true
	}
	return false
}

// Message is one wire message: *Meta, *Hello, *Rules, *Buckets, *State or
// *Bye. The "v" and "kind" fields are implied by the Go type: the encoder
// writes them and the decoder checks them.
type Message interface {
	// Kind is the message's "kind".
	Kind() Kind
	// Head returns the fields every message carries.
	Head() *Header
	isMessage()
}

// Header holds the fields every message carries besides "v" and "kind".
type Header struct {
	// Ts is the sender's wall clock in Unix milliseconds ("ts", required).
	Ts int64 `json:"ts"`
	// Instance is the unique id of the emitting process ("instance"),
	// required and non-empty in every kind but Meta.
	Instance string `json:"instance,omitempty"`
}

// Head returns h itself, so every message type has it through embedding.
func (h *Header) Head() *Header { return h }

// Meta describes a fixture file; it is valid only as the file's first line.
type Meta struct {
	Header
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	RecordedBy  string `json:"recordedBy,omitempty"`
	// Extra keeps every other field of the line, compacted, so fixture
	// tooling can carry its own annotations (such as the findings a
	// scenario must produce) through this package. Keys that match a known
	// field case-insensitively are not extra.
	Extra map[string]json.RawMessage `json:"-"`
}

// Hello opens every stream connection.
type Hello struct {
	Header
	// App groups instances of one service (optional).
	App string `json:"app"`
	// Host is the instance's address as it sees it (optional).
	Host string `json:"host"`
	// Pid is the process id (optional, >= 0).
	Pid int64 `json:"pid"`
	// StartedAt is when the process started, Unix ms (optional, >= 0). A
	// later StartedAt for a known instance means it restarted.
	StartedAt int64 `json:"startedAt"`
	// SDK names the agent and its version (optional).
	SDK string `json:"sdk"`
	// BucketMs is the length of the buckets this instance sends (required).
	BucketMs int64 `json:"bucketMs"`
}

// Rules is the complete active rule set of an instance, never a delta.
type Rules struct {
	Header
	// Version identifies the rule set; RulesVersion computes it (required).
	Version  string             `json:"version"`
	Breakers []core.BreakerRule `json:"breakers"`
	Flows    []core.FlowRule    `json:"flows"`
	// Params are the hot-parameter rules ("params", optional: omitted
	// when there are none).
	Params []core.HotParamRule `json:"params,omitempty"`
}

// Buckets carries closed window buckets; an empty Items is a heartbeat.
//
// A *Buckets returned by Decoder.Decode, its Items and their Hot slices
// belong to the Decoder and are overwritten by its next Decode; strings are
// never overwritten. Use Clone to keep one.
type Buckets struct {
	Header
	// BucketMs is the length of every bucket in Items (required, > 0).
	BucketMs int64        `json:"bucketMs"`
	Items    []BucketItem `json:"items"`
	// Dropped counts messages the sender dropped for a slow reader since
	// its previous Buckets (omitted when 0).
	Dropped int64 `json:"dropped,omitempty"`
}

// BucketItem is one resource's counts for one bucket. Its counts are a
// core.Metrics, the one counts type from the agent's window to the
// collector's aggregation and triage. On the wire, each field of Metrics is
// one field of the item: pass (entries admitted), block (entries rejected),
// complete (admitted entries that finished), error (completed entries that
// failed), slow (completed entries over the slow-ratio breaker's
// maxAllowedRtMs), rtSum (their response time, ms), rtMin and rtMax (0 when
// complete is 0), concurrency (in-flight entries when the bucket closed),
// and rtHist (Hist, sent only when HasHist is set).
type BucketItem struct {
	Resource string
	// Start is the bucket start, Unix ms, a multiple of the frame's BucketMs.
	Start int64
	core.Metrics
	// HasHist says that Hist counts completed entries by response time over
	// core.HistogramBounds (the item had an rtHist); without it Hist is all
	// zero and means nothing.
	HasHist bool
	// Hot lists, for a resource with hot-parameter rules, the parameter
	// values with the most entries in the bucket ("hot", optional): at most
	// MaxHotValues of them and one HotOther item summing the rest. Nil when
	// the sender sends none.
	Hot []HotItem
}

// The bounds of an item's hot values.
const (
	// MaxHotValues is how many parameter values one bucket item lists.
	MaxHotValues = 8
	// MaxHotValueBytes bounds a value's text; senders cut longer values
	// (CutHotValue).
	MaxHotValueBytes = 128
	// HotOther is the value of the item that sums the values not listed.
	HotOther = "(other)"
)

// HotItem is one parameter value's entries in one bucket.
type HotItem struct {
	// Param is the rule's paramIndex: which argument the value is.
	Param int64
	// Value is the parameter value as text, at most MaxHotValueBytes, or
	// HotOther.
	Value string
	// Pass and Block count the value's entries admitted and rejected (by
	// any rule, not only hot-parameter ones).
	Pass, Block int64
}

// CutHotValue cuts s to at most MaxHotValueBytes without splitting a UTF-8
// sequence, and replaces invalid UTF-8 with U+FFFD first, so the result is
// a valid HotItem.Value.
func CutHotValue(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxHotValueBytes {
		return s
	}
	cut := MaxHotValueBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// State is one circuit-breaker transition.
type State struct {
	Header
	Resource string        `json:"resource"`
	Strategy core.Strategy `json:"strategy"`
	From     core.State    `json:"from"` // "CLOSED", "OPEN" or "HALF_OPEN" on the wire
	To       core.State    `json:"to"`
	// RuleID is the rule's id when the resource has several breakers.
	RuleID string `json:"ruleId,omitempty"`
	// Snapshot is set for CLOSED -> OPEN: the window that tripped it.
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	// Probe is set for HALF_OPEN -> OPEN|CLOSED: the probe that decided it.
	Probe          *Probe  `json:"probe,omitempty"`
	Threshold      float64 `json:"threshold"`
	RetryTimeoutMs int64   `json:"retryTimeoutMs"`
	// Inferred is set when the source cannot report transitions and this
	// one was derived from per-second counts (Java Sentinel): its time is
	// accurate to the second and it has no Snapshot.
	Inferred bool `json:"inferred,omitempty"`
}

// Snapshot is the window totals that tripped a breaker.
type Snapshot struct {
	Total int64 `json:"total"`
	Slow  int64 `json:"slow"`
	Error int64 `json:"error"`
	// Value is the ratio (strategies 0, 1) or the error count (strategy 2).
	Value float64 `json:"value"`
}

// Probe is the HALF_OPEN request whose completion decided a transition.
type Probe struct {
	RtMs  int64 `json:"rtMs"`
	Error bool  `json:"error"`
}

// Bye ends a stream gracefully.
type Bye struct {
	Header
	Reason string `json:"reason,omitempty"`
}

func (*Meta) Kind() Kind    { return KindMeta }
func (*Hello) Kind() Kind   { return KindHello }
func (*Rules) Kind() Kind   { return KindRules }
func (*Buckets) Kind() Kind { return KindBuckets }
func (*State) Kind() Kind   { return KindState }
func (*Bye) Kind() Kind     { return KindBye }

func (*Meta) isMessage()    {}
func (*Hello) isMessage()   {}
func (*Rules) isMessage()   {}
func (*Buckets) isMessage() {}
func (*State) isMessage()   {}
func (*Bye) isMessage()     {}

// NewBucketItem converts core metrics into a bucket item that passes
// validation: a bucket read while a straggling writer was still adding to
// it can show, for instance, one more error than completions, and the wire
// rules would reject the whole frame for it. Counts below zero become 0,
// Error and Slow are capped at Complete, RtMin/RtMax are ordered, and the
// response times are zeroed when Complete is 0. withHist sends m.Hist.
func NewBucketItem(resource string, start int64, m core.Metrics, withHist bool) BucketItem {
	it := BucketItem{Resource: resource, Start: start, HasHist: withHist}
	c := &it.Metrics
	c.Pass, c.Block, c.Complete, c.Concurrency = max(m.Pass, 0), max(m.Block, 0), max(m.Complete, 0), max(m.Concurrency, 0)
	c.Error = min(max(m.Error, 0), c.Complete)
	c.Slow = min(max(m.Slow, 0), c.Complete)
	if c.Complete > 0 {
		c.RtMin, c.RtMax = max(m.RtMin, 0), max(m.RtMax, 0)
		if c.RtMin > c.RtMax {
			c.RtMin, c.RtMax = c.RtMax, c.RtMin
		}
		c.RtSum = max(m.RtSum, c.RtMax)
	}
	if withHist {
		for i, v := range m.Hist {
			c.Hist[i] = max(v, 0)
		}
	}
	return it
}

// Clone returns a deep copy of m that no Decoder will overwrite.
func Clone(m Message) Message {
	if isNilMessage(m) {
		return m
	}
	switch m := m.(type) {
	case *Meta:
		c := *m
		if m.Extra != nil {
			c.Extra = make(map[string]json.RawMessage, len(m.Extra))
			for k, v := range m.Extra {
				c.Extra[k] = append(json.RawMessage(nil), v...)
			}
		}
		return &c
	case *Hello:
		c := *m
		return &c
	case *Rules:
		c := *m
		c.Breakers = append([]core.BreakerRule(nil), m.Breakers...)
		c.Flows = append([]core.FlowRule(nil), m.Flows...)
		c.Params = cloneParams(m.Params)
		return &c
	case *Buckets:
		return m.Clone()
	case *State:
		c := *m
		if m.Snapshot != nil {
			s := *m.Snapshot
			c.Snapshot = &s
		}
		if m.Probe != nil {
			p := *m.Probe
			c.Probe = &p
		}
		return &c
	case *Bye:
		c := *m
		return &c
	}
	return m
}

// Clone returns a deep copy of b, with its own items.
func (b *Buckets) Clone() *Buckets {
	c := *b
	if b.Items != nil {
		c.Items = make([]BucketItem, len(b.Items))
		copy(c.Items, b.Items)
		n := 0
		for i := range b.Items {
			n += len(b.Items[i].Hot)
		}
		if n > 0 {
			hot := make([]HotItem, 0, n)
			for i := range c.Items {
				if h := c.Items[i].Hot; h != nil {
					hot = append(hot, h...)
					c.Items[i].Hot = hot[len(hot)-len(h) : len(hot) : len(hot)]
				}
			}
		}
	}
	return &c
}

// cloneParams copies hot-parameter rules with their specific items.
func cloneParams(ps []core.HotParamRule) []core.HotParamRule {
	if ps == nil {
		return nil
	}
	c := append([]core.HotParamRule(nil), ps...)
	for i := range c {
		c[i].SpecificItems = maps.Clone(c[i].SpecificItems)
	}
	return c
}
