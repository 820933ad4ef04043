package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrEncode is wrapped by every encoding error: a value JSON cannot carry
// (NaN, ±Inf), a breaker state with no wire name, or a Meta.Extra entry that
// is not a JSON value or collides with a field.
var ErrEncode = errors.New("wire: cannot encode")

// Marshal returns m encoded as one line of JSON, without a newline.
func Marshal(m Message) ([]byte, error) {
	return Append(nil, m)
}

// Append appends m, encoded as one line of JSON without a newline, to dst.
// Fields come in the spec's order, "v" and "kind" first. Strings are escaped
// so the line is valid JSON with no raw control characters; invalid UTF-8
// becomes U+FFFD. Append does not validate values (see Validate); on error
// it returns dst unchanged.
func Append(dst []byte, m Message) ([]byte, error) {
	n := len(dst)
	var err error
	if isNilMessage(m) {
		return dst, fmt.Errorf("%w: nil message", ErrEncode)
	}
	switch m := m.(type) {
	case *Buckets:
		return AppendBuckets(dst, m), nil
	case *Meta:
		dst, err = appendMeta(dst, m)
	case *Hello:
		dst = appendHello(dst, m)
	case *Rules:
		dst, err = appendRules(dst, m)
	case *State:
		dst, err = appendState(dst, m)
	case *Bye:
		dst = appendBye(dst, m)
	default:
		err = fmt.Errorf("%w: unknown message type %T", ErrEncode, m)
	}
	if err != nil {
		return dst[:n], err
	}
	return dst, nil
}

func isNilMessage(m Message) bool {
	switch m := m.(type) {
	case nil:
		return true
	case *Meta:
		return m == nil
	case *Hello:
		return m == nil
	case *Rules:
		return m == nil
	case *Buckets:
		return m == nil
	case *State:
		return m == nil
	case *Bye:
		return m == nil
	}
	return false
}

// AppendBuckets appends b, encoded, to dst. It cannot fail and does not
// allocate beyond growing dst.
func AppendBuckets(dst []byte, b *Buckets) []byte {
	dst = appendHeader(dst, KindBuckets, &b.Header, true)
	dst = append(dst, `,"bucketMs":`...)
	dst = strconv.AppendInt(dst, b.BucketMs, 10)
	dst = append(dst, `,"items":[`...)
	for i := range b.Items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendItem(dst, &b.Items[i])
	}
	dst = append(dst, ']')
	if b.Dropped != 0 {
		dst = append(dst, `,"dropped":`...)
		dst = strconv.AppendInt(dst, b.Dropped, 10)
	}
	return append(dst, '}')
}

func appendItem(dst []byte, it *BucketItem) []byte {
	dst = append(dst, `{"resource":`...)
	dst = appendString(dst, it.Resource)
	dst = appendIntField(dst, `,"start":`, it.Start)
	dst = appendIntField(dst, `,"pass":`, it.Pass)
	dst = appendIntField(dst, `,"block":`, it.Block)
	dst = appendIntField(dst, `,"complete":`, it.Complete)
	dst = appendIntField(dst, `,"error":`, it.Error)
	dst = appendIntField(dst, `,"slow":`, it.Slow)
	dst = appendIntField(dst, `,"rtSum":`, it.RtSum)
	dst = appendIntField(dst, `,"rtMin":`, it.RtMin)
	dst = appendIntField(dst, `,"rtMax":`, it.RtMax)
	dst = appendIntField(dst, `,"concurrency":`, it.Concurrency)
	if it.HasHist {
		dst = append(dst, `,"rtHist":[`...)
		for i, c := range it.Hist {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, c, 10)
		}
		dst = append(dst, ']')
	}
	if len(it.Hot) > 0 {
		dst = append(dst, `,"hot":[`...)
		for i := range it.Hot {
			h := &it.Hot[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendIntField(dst, `{"param":`, h.Param)
			dst = appendStringField(dst, `,"value":`, h.Value)
			dst = appendIntField(dst, `,"pass":`, h.Pass)
			dst = appendIntField(dst, `,"block":`, h.Block)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func appendIntField(dst []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(dst, name...), v, 10)
}

func appendStringField(dst []byte, name, v string) []byte {
	return appendString(append(dst, name...), v)
}

func appendHeader(dst []byte, kind Kind, h *Header, withInstance bool) []byte {
	dst = append(dst, `{"v":1,"kind":"`...)
	dst = append(dst, kind...)
	dst = append(dst, '"')
	dst = appendIntField(dst, `,"ts":`, h.Ts)
	if withInstance {
		dst = appendStringField(dst, `,"instance":`, h.Instance)
	}
	return dst
}

// metaFields are the names Meta.Extra may not use, in any letter case:
// encoding/json matches field names case-insensitively, and so does the
// fast decoder.
var metaFields = []string{"v", "kind", "ts", "instance", "title", "description", "recordedBy"}

func isMetaField(k string) bool {
	for _, f := range metaFields {
		if strings.EqualFold(k, f) {
			return true
		}
	}
	return false
}

func appendMeta(dst []byte, m *Meta) ([]byte, error) {
	dst = appendHeader(dst, KindMeta, &m.Header, m.Instance != "")
	if m.Title != "" {
		dst = appendStringField(dst, `,"title":`, m.Title)
	}
	if m.Description != "" {
		dst = appendStringField(dst, `,"description":`, m.Description)
	}
	if m.RecordedBy != "" {
		dst = appendStringField(dst, `,"recordedBy":`, m.RecordedBy)
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if isMetaField(k) {
			return dst, fmt.Errorf("%w: meta extra field %q collides with a meta field", ErrEncode, k)
		}
		v := m.Extra[k]
		if !json.Valid(v) {
			return dst, fmt.Errorf("%w: meta extra field %q is not a JSON value", ErrEncode, k)
		}
		dst = append(appendString(append(dst, ','), k), ':')
		buf := bytes.NewBuffer(dst)
		if err := json.Compact(buf, v); err != nil {
			return dst, fmt.Errorf("%w: meta extra field %q: %v", ErrEncode, k, err)
		}
		dst = buf.Bytes()
	}
	return append(dst, '}'), nil
}

func appendHello(dst []byte, m *Hello) []byte {
	dst = appendHeader(dst, KindHello, &m.Header, true)
	dst = appendStringField(dst, `,"app":`, m.App)
	dst = appendStringField(dst, `,"host":`, m.Host)
	dst = appendIntField(dst, `,"pid":`, m.Pid)
	dst = appendIntField(dst, `,"startedAt":`, m.StartedAt)
	dst = appendStringField(dst, `,"sdk":`, m.SDK)
	dst = appendIntField(dst, `,"bucketMs":`, m.BucketMs)
	return append(dst, '}')
}

func appendRules(dst []byte, m *Rules) ([]byte, error) {
	dst = appendHeader(dst, KindRules, &m.Header, true)
	dst = appendStringField(dst, `,"version":`, m.Version)
	var err error
	if dst, err = appendRuleList(dst, "breakers", m.Breakers); err != nil {
		return dst, err
	}
	if dst, err = appendRuleList(dst, "flows", m.Flows); err != nil {
		return dst, err
	}
	if len(m.Params) > 0 {
		if dst, err = appendRuleList(dst, "params", m.Params); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendRuleList appends `,"name":[...]` with each rule encoded by appendJSON.
func appendRuleList[R any](dst []byte, name string, rules []R) ([]byte, error) {
	dst = append(append(append(dst, `,"`...), name...), `":[`...)
	var err error
	for i := range rules {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendJSON(dst, &rules[i]); err != nil {
			return dst, fmt.Errorf("%w: %s[%d]: %v", ErrEncode, name, i, err)
		}
	}
	return append(dst, ']'), nil
}

// appendJSON encodes a rule with encoding/json, so fields core adds to its
// rule types travel without a change here.
func appendJSON(dst []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	out := buf.Bytes()
	return out[:len(out)-1], nil // Encode adds a newline
}

func appendState(dst []byte, m *State) ([]byte, error) {
	if !validState(m.From) {
		return dst, fmt.Errorf("%w: state from %d has no wire name", ErrEncode, m.From)
	}
	if !validState(m.To) {
		return dst, fmt.Errorf("%w: state to %d has no wire name", ErrEncode, m.To)
	}
	dst = appendHeader(dst, KindState, &m.Header, true)
	dst = appendStringField(dst, `,"resource":`, m.Resource)
	dst = appendIntField(dst, `,"strategy":`, int64(m.Strategy))
	dst = append(dst, `,"from":"`...)
	dst = append(dst, m.From.String()...)
	dst = append(dst, `","to":"`...)
	dst = append(dst, m.To.String()...)
	dst = append(dst, '"')
	if m.RuleID != "" {
		dst = appendStringField(dst, `,"ruleId":`, m.RuleID)
	}
	var err error
	if s := m.Snapshot; s != nil {
		dst = appendIntField(dst, `,"snapshot":{"total":`, s.Total)
		dst = appendIntField(dst, `,"slow":`, s.Slow)
		dst = appendIntField(dst, `,"error":`, s.Error)
		if dst, err = appendFloat(append(dst, `,"value":`...), s.Value, "snapshot.value"); err != nil {
			return dst, err
		}
		dst = append(dst, '}')
	}
	if p := m.Probe; p != nil {
		dst = appendIntField(dst, `,"probe":{"rtMs":`, p.RtMs)
		dst = strconv.AppendBool(append(dst, `,"error":`...), p.Error)
		dst = append(dst, '}')
	}
	if dst, err = appendFloat(append(dst, `,"threshold":`...), m.Threshold, "threshold"); err != nil {
		return dst, err
	}
	dst = appendIntField(dst, `,"retryTimeoutMs":`, m.RetryTimeoutMs)
	if m.Inferred {
		dst = append(dst, `,"inferred":true`...)
	}
	return append(dst, '}'), nil
}

func appendBye(dst []byte, m *Bye) []byte {
	dst = appendHeader(dst, KindBye, &m.Header, true)
	if m.Reason != "" {
		dst = appendStringField(dst, `,"reason":`, m.Reason)
	}
	return append(dst, '}')
}

// appendFloat formats f as encoding/json does, so both read it back to the
// same float64.
func appendFloat(dst []byte, f float64, field string) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("%w: %s is %v", ErrEncode, field, f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json writes it
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// plain marks the ASCII bytes a JSON string carries as they are.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string. Control characters, DEL and
// U+2028/U+2029 are escaped (the line stays one line everywhere, and is
// safe to paste into JavaScript); invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// MarshalJSON encodes the message as Append does, so encoding/json writes
// wire messages correctly too.
func (m Meta) MarshalJSON() ([]byte, error) { return Marshal(&m) }

// MarshalJSON encodes the message as Append does.
func (m Hello) MarshalJSON() ([]byte, error) { return Marshal(&m) }

// MarshalJSON encodes the message as Append does.
func (m Rules) MarshalJSON() ([]byte, error) { return Marshal(&m) }

// MarshalJSON encodes the message as Append does.
func (m Buckets) MarshalJSON() ([]byte, error) { return Marshal(&m) }

// MarshalJSON encodes the message as Append does.
func (m State) MarshalJSON() ([]byte, error) { return Marshal(&m) }

// MarshalJSON encodes the message as Append does.
func (m Bye) MarshalJSON() ([]byte, error) { return Marshal(&m) }
