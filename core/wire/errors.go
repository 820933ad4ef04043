package wire

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// The error classes of decoding. Every decode error is a *DecodeError that
// wraps exactly one of them, so callers can count by class with errors.Is.
// ErrNameTooLong is the narrower class of a name or a hot value over its
// limit: errors.Is matches it and ErrTooLarge.
var (
	// ErrMalformed: not a JSON object, bad syntax, invalid UTF-8, a field
	// of the wrong JSON type, a known field given twice, or a required
	// field (v, kind, ts, instance) missing.
	ErrMalformed = errors.New("malformed message")
	// ErrVersion: "v" is present but is not the integer 1.
	ErrVersion = errors.New("unsupported version")
	// ErrUnknownKind: a v1 message of a kind this package does not know.
	// The spec says to count and skip these, never to treat them as fatal.
	ErrUnknownKind = errors.New("unknown kind")
	// ErrTooLarge: the frame, an item list or a name exceeds Limits.
	ErrTooLarge = errors.New("too large")
	// ErrNameTooLong: a name exceeds Limits.MaxNameBytes, or a hot value
	// MaxHotValueBytes. It is also ErrTooLarge.
	ErrNameTooLong error = &subclass{"name too long", ErrTooLarge}
	// ErrInvalid: well-formed, but a value is out of range.
	ErrInvalid = errors.New("invalid value")
)

// DecodeError says what is wrong with a message and where.
type DecodeError struct {
	// Kind is the message kind, when it was known.
	Kind Kind
	// Field is the JSON path of the offending field, such as
	// "items[3].rtMin"; empty when the message as a whole is at fault.
	Field string
	// Reason says what is wrong, in words.
	Reason string
	// Err is the class: ErrMalformed, ErrVersion, ErrUnknownKind,
	// ErrTooLarge (ErrNameTooLong for a name or a hot value) or ErrInvalid.
	Err error
}

// Error returns "wire: KIND FIELD: REASON".
func (e *DecodeError) Error() string {
	s := "wire: "
	if e.Kind != "" {
		s += string(e.Kind) + " "
	}
	if e.Field != "" {
		s += e.Field + ": "
	} else if e.Kind != "" {
		s = s[:len(s)-1] + ": "
	}
	return s + e.Reason
}

// Unwrap returns the error class.
func (e *DecodeError) Unwrap() error { return e.Err }

// subclass is an error class narrower than another: errors.Is matches
// both.
type subclass struct {
	text string
	of   error
}

func (e *subclass) Error() string { return e.text }

// Unwrap returns the wider class.
func (e *subclass) Unwrap() error { return e.of }

func errorf(class error, kind Kind, field, reason string) *DecodeError {
	return &DecodeError{Kind: kind, Field: field, Reason: reason, Err: class}
}

// quoteClip quotes untrusted text for an error message, clipped so a huge
// or hostile value cannot flood a log or a terminal.
func quoteClip(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// Limits bounds what a Decoder accepts. A zero field takes its default.
type Limits struct {
	// MaxFrameBytes bounds one message (one websocket frame, one fixture
	// line). Default 1 MiB.
	MaxFrameBytes int
	// MaxItems bounds the items of one buckets message, each of the
	// breakers, flows and params lists of one rules message, and the
	// specificItems of each hot-parameter rule. Default 10,000.
	MaxItems int
	// MaxNameBytes bounds every identifying name: resource, instance, app,
	// host, sdk, ruleId, rule version, rule ids, limitApp, paramKey and
	// the values of specificItems. Default 1024.
	MaxNameBytes int
	// InternNames bounds how many distinct names a Decoder keeps interned,
	// so that names repeated across frames do not allocate; when full it
	// starts over. Not a validation limit. Default 4096.
	InternNames int
}

// The default limits.
const (
	DefaultMaxFrameBytes = 1 << 20
	DefaultMaxItems      = 10000
	DefaultMaxNameBytes  = 1024
	DefaultInternNames   = 4096
)

// withDefaults fills the zero (or negative) fields.
func (l Limits) withDefaults() Limits {
	if l.MaxFrameBytes <= 0 {
		l.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if l.MaxItems <= 0 {
		l.MaxItems = DefaultMaxItems
	}
	if l.MaxNameBytes <= 0 {
		l.MaxNameBytes = DefaultMaxNameBytes
	}
	if l.InternNames <= 0 {
		l.InternNames = DefaultInternNames
	}
	return l
}
