package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/core"
)

// Decoder decodes and validates wire messages. It keeps buffers between
// calls so that decoding buckets, the bulk of all traffic, does not
// allocate: the *Buckets a Decode returns, its Items and their Hot slices
// are reused by the next Decode on the same Decoder (strings are not: they
// may be kept; hot values are interned apart from names). Clone a message to keep it longer. Messages of
// the other kinds are freshly allocated each time.
//
// The zero Decoder uses the default limits. A Decoder is not safe for
// concurrent use; give each connection its own. Decoders read by one
// goroutine may share the buffers buckets are decoded into (ShareScratch).
type Decoder struct {
	lim   Limits
	ready bool

	sc       *Scratch // &own, or the one shared
	own      Scratch
	names    interned // resource and instance names
	values   interned // hot values
	instance string   // the latest frame's instance, if plain (see samePlain)
	deferred *DecodeError
	st       stateFrame // the state message being read

	key, kindBuf, scratch []byte
	stack                 []byte

	// general reads every bucket item with the general loop, never
	// readPlainItem, the instance without comparing it with the latest,
	// and state messages with encoding/json: the tests hold the two ways
	// to the same results.
	general bool
}

// Scratch is what a Decoder decodes buckets messages into, and reuses: the
// message, its items and their hot items. Decoders that share one
// (ShareScratch) must be used by one goroutine, and each message one of
// them returns used before the next Decode of any of them: a goroutine
// reading thousands of connections then writes their items into memory
// that stays in the processor's caches, rather than into each
// connection's own, cold again by its next message.
type Scratch struct {
	b    Buckets
	hots []HotItem // the hot items of b's items
}

// ShareScratch makes the Decoder decode into s (nil: its own again), from
// its next Decode on.
func (d *Decoder) ShareScratch(s *Scratch) { d.sc = s }

// NewDecoder returns a Decoder with the given limits; zero fields of lim
// take their defaults.
func NewDecoder(lim Limits) *Decoder {
	return &Decoder{lim: lim}
}

// Limits returns the limits in force, defaults filled in.
func (d *Decoder) Limits() Limits { return d.lim.withDefaults() }

// Decode decodes one message (a websocket frame, or a fixture line without
// its newline) and checks it against every rule of wire v1. On error it
// returns a *DecodeError wrapping ErrMalformed, ErrVersion, ErrUnknownKind,
// ErrTooLarge or ErrInvalid. It never panics, whatever the input.
func (d *Decoder) Decode(frame []byte) (Message, error) {
	if !d.ready {
		d.lim = d.lim.withDefaults()
		d.ready = true
	}
	if len(frame) > d.lim.MaxFrameBytes {
		return nil, errorf(ErrTooLarge, "", "", fmt.Sprintf("message of %d bytes exceeds the limit of %d", len(frame), d.lim.MaxFrameBytes))
	}
	m, fallback, err := d.decodeFast(frame, false)
	if err != nil {
		return nil, err
	}
	if !fallback {
		return m, nil
	}
	m, derr := decodeStd(frame, d.lim)
	if derr != nil {
		return nil, derr
	}
	return m, nil
}

// Decode decodes one message with the default limits, as a fresh Decoder
// would: the result is the caller's to keep.
func Decode(frame []byte) (Message, error) {
	var d Decoder
	return d.Decode(frame)
}

// The encoding/json path. Every kind can be read this way; Decoder uses it
// for all kinds but buckets, and the tests hold the fast path to it.

// stdHead is the common part of every kind.
type stdHead struct {
	V        json.RawMessage `json:"v"`
	Kind     json.RawMessage `json:"kind"`
	Ts       *int64          `json:"ts"`
	Instance *string         `json:"instance"`
}

type stdMeta struct {
	stdHead
	Title       string `json:"title"`
	Description string `json:"description"`
	RecordedBy  string `json:"recordedBy"`
}

type stdHello struct {
	stdHead
	App       string `json:"app"`
	Host      string `json:"host"`
	Pid       int64  `json:"pid"`
	StartedAt int64  `json:"startedAt"`
	SDK       string `json:"sdk"`
	BucketMs  int64  `json:"bucketMs"`
}

type stdRules struct {
	stdHead
	Version  string              `json:"version"`
	Breakers []core.BreakerRule  `json:"breakers"`
	Flows    []core.FlowRule     `json:"flows"`
	Params   []core.HotParamRule `json:"params"`
}

type stdBuckets struct {
	stdHead
	BucketMs int64     `json:"bucketMs"`
	Items    []stdItem `json:"items"`
	Dropped  int64     `json:"dropped"`
}

type stdItem struct {
	Resource    string   `json:"resource"`
	Start       int64    `json:"start"`
	Pass        int64    `json:"pass"`
	Block       int64    `json:"block"`
	Complete    int64    `json:"complete"`
	Error       int64    `json:"error"`
	Slow        int64    `json:"slow"`
	RtSum       int64    `json:"rtSum"`
	RtMin       int64    `json:"rtMin"`
	RtMax       int64    `json:"rtMax"`
	Concurrency int64    `json:"concurrency"`
	RtHist      []int64  `json:"rtHist"`
	Hot         []stdHot `json:"hot"`
}

type stdHot struct {
	Param int64  `json:"param"`
	Value string `json:"value"`
	Pass  int64  `json:"pass"`
	Block int64  `json:"block"`
}

type stdState struct {
	stdHead
	Resource       string       `json:"resource"`
	Strategy       int64        `json:"strategy"`
	From           *string      `json:"from"`
	To             *string      `json:"to"`
	RuleID         string       `json:"ruleId"`
	Snapshot       *stdSnapshot `json:"snapshot"`
	Probe          *stdProbe    `json:"probe"`
	Threshold      float64      `json:"threshold"`
	RetryTimeoutMs int64        `json:"retryTimeoutMs"`
	Inferred       bool         `json:"inferred"`
}

type stdSnapshot struct {
	Total int64   `json:"total"`
	Slow  int64   `json:"slow"`
	Error int64   `json:"error"`
	Value float64 `json:"value"`
}

type stdProbe struct {
	RtMs  int64 `json:"rtMs"`
	Error bool  `json:"error"`
}

type stdBye struct {
	stdHead
	Reason string `json:"reason"`
}

// decodeStd decodes a frame with encoding/json, applying the same rules
// in the same order as the fast path: size, syntax, repeated common
// fields, version, kind, types and repeated fields, presence, values.
func decodeStd(data []byte, lim Limits) (Message, *DecodeError) {
	if len(data) > lim.MaxFrameBytes {
		return nil, errorf(ErrTooLarge, "", "", fmt.Sprintf("message of %d bytes exceeds the limit of %d", len(data), lim.MaxFrameBytes))
	}
	if !utf8.Valid(data) {
		return nil, errorf(ErrMalformed, "", "", "invalid UTF-8")
	}
	if !json.Valid(data) {
		var raw json.RawMessage
		err := json.Unmarshal(data, &raw)
		reason := "invalid JSON"
		if err != nil {
			reason = strings.TrimPrefix(err.Error(), "json: ")
		}
		return nil, errorf(ErrMalformed, "", "", reason)
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, errorf(ErrMalformed, "", "", "not a JSON object")
	}
	if err := checkRepeats(data, reflect.TypeFor[stdHead](), ""); err != nil {
		return nil, err
	}
	var vk struct {
		V    json.RawMessage `json:"v"`
		Kind json.RawMessage `json:"kind"`
	}
	if err := json.Unmarshal(data, &vk); err != nil {
		return nil, errorf(ErrMalformed, "", "", err.Error())
	}
	if len(vk.V) == 0 || string(vk.V) == "null" {
		return nil, errorf(ErrMalformed, "", "v", "missing")
	}
	if string(vk.V) != "1" {
		return nil, errorf(ErrVersion, "", "v", fmt.Sprintf("is %s, want %d", clipRaw(vk.V), Version))
	}
	if len(vk.Kind) == 0 || string(vk.Kind) == "null" {
		return nil, errorf(ErrMalformed, "", "kind", "missing")
	}
	var ks string
	if vk.Kind[0] != '"' || json.Unmarshal(vk.Kind, &ks) != nil {
		return nil, errorf(ErrMalformed, "", "kind", "must be a string")
	}
	kind := Kind(ks)
	switch kind {
	case KindMeta:
		var s stdMeta
		if err := unmarshalStd(data, &s, kind); err != nil {
			return nil, err
		}
		m := &Meta{Title: s.Title, Description: s.Description, RecordedBy: s.RecordedBy}
		if err := s.header(&m.Header, kind); err != nil {
			return nil, err
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(data, &all); err != nil {
			return nil, errorf(ErrMalformed, kind, "", err.Error())
		}
		for k, v := range all {
			if isMetaField(k) {
				continue
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, v); err != nil {
				return nil, errorf(ErrMalformed, kind, k, err.Error())
			}
			if m.Extra == nil {
				m.Extra = make(map[string]json.RawMessage)
			}
			m.Extra[k] = buf.Bytes()
		}
		if err := validateMeta(m, lim); err != nil {
			return nil, err
		}
		return m, nil
	case KindHello:
		var s stdHello
		if err := unmarshalStd(data, &s, kind); err != nil {
			return nil, err
		}
		m := &Hello{App: s.App, Host: s.Host, Pid: s.Pid, StartedAt: s.StartedAt, SDK: s.SDK, BucketMs: s.BucketMs}
		if err := s.header(&m.Header, kind); err != nil {
			return nil, err
		}
		if err := validateHello(m, lim); err != nil {
			return nil, err
		}
		return m, nil
	case KindRules:
		var s stdRules
		if err := unmarshalStd(data, &s, kind); err != nil {
			return nil, err
		}
		m := &Rules{Version: s.Version, Breakers: s.Breakers, Flows: s.Flows, Params: s.Params}
		if err := s.header(&m.Header, kind); err != nil {
			return nil, err
		}
		if err := validateRules(m, lim); err != nil {
			return nil, err
		}
		return m, nil
	case KindBuckets:
		var s stdBuckets
		if err := unmarshalStd(data, &s, kind); err != nil {
			return nil, err
		}
		m := &Buckets{BucketMs: s.BucketMs, Dropped: s.Dropped}
		if len(s.Items) > lim.MaxItems {
			return nil, errorf(ErrTooLarge, kind, "items", fmt.Sprintf("more than %d items", lim.MaxItems))
		}
		m.Items = make([]BucketItem, len(s.Items))
		for i, it := range s.Items {
			if len(it.Resource) > lim.MaxNameBytes {
				return nil, errorf(ErrNameTooLong, kind, fieldAt("items", i, "resource"),
					fmt.Sprintf("%d bytes exceeds the limit of %d", len(it.Resource), lim.MaxNameBytes))
			}
			m.Items[i] = BucketItem{Resource: it.Resource, Start: it.Start, Metrics: core.Metrics{
				Pass: it.Pass, Block: it.Block, Complete: it.Complete, Error: it.Error, Slow: it.Slow,
				RtSum: it.RtSum, RtMin: it.RtMin, RtMax: it.RtMax, Concurrency: it.Concurrency}}
			if it.RtHist != nil {
				if len(it.RtHist) != core.HistogramSlots {
					return nil, errorf(ErrInvalid, kind, fieldAt("items", i, "rtHist"),
						fmt.Sprintf("has %d counts, want %d", len(it.RtHist), core.HistogramSlots))
				}
				m.Items[i].Hist, m.Items[i].HasHist = [core.HistogramSlots]int64(it.RtHist), true
			}
			if len(it.Hot) > 0 {
				if err := stdHotItems(&m.Items[i], it.Hot, i); err != nil {
					return nil, err
				}
			}
		}
		if err := s.header(&m.Header, kind); err != nil {
			return nil, err
		}
		if err := validateBuckets(m, lim); err != nil {
			return nil, err
		}
		return m, nil
	case KindState:
		var s stdState
		if err := unmarshalStd(data, &s, kind); err != nil {
			return nil, err
		}
		m := &State{Resource: s.Resource, RuleID: s.RuleID, Threshold: s.Threshold, RetryTimeoutMs: s.RetryTimeoutMs, Inferred: s.Inferred}
		if err := s.header(&m.Header, kind); err != nil {
			return nil, err
		}
		if s.From == nil {
			return nil, errorf(ErrMalformed, kind, "from", "missing")
		}
		if s.To == nil {
			return nil, errorf(ErrMalformed, kind, "to", "missing")
		}
		var err error
		if m.From, err = core.ParseState(*s.From); err != nil {
			return nil, badBreakerState("from", *s.From)
		}
		if m.To, err = core.ParseState(*s.To); err != nil {
			return nil, badBreakerState("to", *s.To)
		}
		if s.Strategy < 0 || s.Strategy > int64(core.ErrorCount) {
			return nil, badStrategy(s.Strategy)
		}
		m.Strategy = core.Strategy(s.Strategy)
		if s.Snapshot != nil {
			m.Snapshot = &Snapshot{Total: s.Snapshot.Total, Slow: s.Snapshot.Slow, Error: s.Snapshot.Error, Value: s.Snapshot.Value}
		}
		if s.Probe != nil {
			m.Probe = &Probe{RtMs: s.Probe.RtMs, Error: s.Probe.Error}
		}
		if err := validateState(m, lim); err != nil {
			return nil, err
		}
		return m, nil
	case KindBye:
		var s stdBye
		if err := unmarshalStd(data, &s, kind); err != nil {
			return nil, err
		}
		m := &Bye{Reason: s.Reason}
		if err := s.header(&m.Header, kind); err != nil {
			return nil, err
		}
		if err := validateBye(m, lim); err != nil {
			return nil, err
		}
		return m, nil
	}
	return nil, errorf(ErrUnknownKind, "", "kind", quoteClip(ks))
}

// stdHotItems copies an item's hot values, with the bounds the fast path
// applies while it reads them.
func stdHotItems(it *BucketItem, hot []stdHot, i int) *DecodeError {
	if len(hot) > maxHotItems {
		return tooManyHot(i)
	}
	it.Hot = make([]HotItem, len(hot))
	for j, h := range hot {
		if len(h.Value) > MaxHotValueBytes {
			return hotValueTooLong(i, j, len(h.Value))
		}
		it.Hot[j] = HotItem(h)
	}
	return nil
}

// header copies the common fields, checking that they are present.
func (s *stdHead) header(h *Header, kind Kind) *DecodeError {
	if s.Ts == nil {
		return errorf(ErrMalformed, kind, "ts", "missing")
	}
	h.Ts = *s.Ts
	if s.Instance == nil {
		if kind != KindMeta {
			return errorf(ErrMalformed, kind, "instance", "missing")
		}
	} else {
		h.Instance = *s.Instance
	}
	return nil
}

// unmarshalStd decodes data into the kind's std struct v and rejects
// known fields given twice.
func unmarshalStd(data []byte, v any, kind Kind) *DecodeError {
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			want := te.Type.Kind().String()
			switch te.Type.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				want = "an integer of type " + te.Type.String()
			case reflect.Struct, reflect.Map:
				want = "an object"
			case reflect.Slice, reflect.Array:
				want = "an array"
			case reflect.String:
				want = "a string"
			case reflect.Float32, reflect.Float64:
				want = "a number"
			case reflect.Bool:
				want = "a boolean"
			}
			return errorf(ErrMalformed, kind, te.Field, "must be "+want+", not "+clipRaw([]byte(te.Value)))
		}
		return errorf(ErrMalformed, kind, "", strings.TrimPrefix(err.Error(), "json: "))
	}
	return checkRepeats(data, reflect.TypeOf(v).Elem(), kind)
}

// checkRepeats rejects a known field given twice in one object, at any
// depth of the schema t. encoding/json would keep the last value of a
// number but merge repeated arrays and objects element by element: the
// only reading that cannot surprise one of two implementations is none.
func checkRepeats(data []byte, t reflect.Type, kind Kind) *DecodeError {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := repeatWalker{dec: dec}
	if err := w.walk(t); err != nil {
		err.Kind = kind
		return err
	}
	return nil
}

// repeatWalker walks a JSON value along a schema. Subtrees outside the
// schema are skipped whole, and the path is only spelled out for an error,
// so the walk stays linear however deep or wide the input.
type repeatWalker struct {
	dec  *json.Decoder
	path []string // ".name" and "[i]" segments
}

func (w *repeatWalker) fail(reason string) *DecodeError {
	return errorf(ErrMalformed, "", strings.TrimPrefix(strings.Join(w.path, ""), "."), reason)
}

func (w *repeatWalker) walk(t reflect.Type) *DecodeError {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t.Kind() == reflect.Map {
		return w.walkMap(t)
	}
	if t == nil || (t.Kind() != reflect.Struct && t.Kind() != reflect.Slice && t.Kind() != reflect.Array) {
		var skip json.RawMessage
		if err := w.dec.Decode(&skip); err != nil {
			return w.fail(err.Error())
		}
		return nil
	}
	tok, err := w.dec.Token()
	if err != nil {
		return w.fail(err.Error())
	}
	switch tok {
	case json.Delim('{'):
		var fields []schemaField
		if t.Kind() == reflect.Struct {
			fields = schemaOf(t)
		}
		var seen []bool
		if len(fields) > 0 {
			seen = make([]bool, len(fields))
		}
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return w.fail(err.Error())
			}
			key, _ := kt.(string)
			f := matchSchema(fields, key)
			if f < 0 {
				if err := w.walk(nil); err != nil {
					return err
				}
				continue
			}
			w.path = append(w.path, "."+fields[f].name)
			if seen[f] {
				return w.fail("given more than once")
			}
			seen[f] = true
			if err := w.walk(fields[f].typ); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
		_, _ = w.dec.Token()
	case json.Delim('['):
		var et reflect.Type
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			et = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			w.path = append(w.path, "["+strconv.Itoa(i)+"]")
			if err := w.walk(et); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
		_, _ = w.dec.Token()
	}
	return nil
}

// walkMap walks an object decoded into a map, whose keys encoding/json
// matches exactly: a key given twice would silently keep the last value.
func (w *repeatWalker) walkMap(t reflect.Type) *DecodeError {
	tok, err := w.dec.Token()
	if err != nil {
		return w.fail(err.Error())
	}
	if tok != json.Delim('{') {
		return nil // null, or a wrong type encoding/json has reported
	}
	seen := make(map[string]bool)
	for w.dec.More() {
		kt, err := w.dec.Token()
		if err != nil {
			return w.fail(err.Error())
		}
		key, _ := kt.(string)
		w.path = append(w.path, "["+strconv.Quote(key)+"]")
		if seen[key] {
			return w.fail("given more than once")
		}
		seen[key] = true
		if err := w.walk(t.Elem()); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
	_, _ = w.dec.Token()
	return nil
}

type schemaField struct {
	name string
	typ  reflect.Type
}

var schemas sync.Map // reflect.Type -> []schemaField

// schemaOf lists the JSON fields of struct t as encoding/json sees them,
// untagged embedded structs flattened.
func schemaOf(t reflect.Type) []schemaField {
	if s, ok := schemas.Load(t); ok {
		return s.([]schemaField)
	}
	var fields []schemaField
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			fields = append(fields, schemaOf(sf.Type)...)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fields = append(fields, schemaField{name, sf.Type})
	}
	schemas.Store(t, fields)
	return fields
}

// matchSchema finds key's field the way encoding/json does: exact name
// first, then equal under case folding.
func matchSchema(fields []schemaField, key string) int {
	for i, f := range fields {
		if f.name == key {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.name, key) {
			return i
		}
	}
	return -1
}

// UnmarshalJSON decodes a wire meta message into m, with every check of
// Decode.
func (m *Meta) UnmarshalJSON(b []byte) error { return unmarshalInto(b, m) }

// UnmarshalJSON decodes a wire hello message into m, with every check of Decode.
func (m *Hello) UnmarshalJSON(b []byte) error { return unmarshalInto(b, m) }

// UnmarshalJSON decodes a wire rules message into m, with every check of Decode.
func (m *Rules) UnmarshalJSON(b []byte) error { return unmarshalInto(b, m) }

// UnmarshalJSON decodes a wire buckets message into m, with every check of Decode.
func (m *Buckets) UnmarshalJSON(b []byte) error { return unmarshalInto(b, m) }

// UnmarshalJSON decodes a wire state message into m, with every check of Decode.
func (m *State) UnmarshalJSON(b []byte) error { return unmarshalInto(b, m) }

// UnmarshalJSON decodes a wire bye message into m, with every check of Decode.
func (m *Bye) UnmarshalJSON(b []byte) error { return unmarshalInto(b, m) }

func unmarshalInto(b []byte, dst Message) error {
	m, err := Decode(b)
	if err != nil {
		return err
	}
	if m.Kind() != dst.Kind() {
		return errorf(ErrMalformed, m.Kind(), "kind", fmt.Sprintf("is %s, want %s", m.Kind(), dst.Kind()))
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(m).Elem())
	return nil
}
