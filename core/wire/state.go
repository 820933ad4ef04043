package wire

import (
	"fmt"
	"strconv"

	"github.com/sentinel-top/sentinel-top/core"
)

// This file is the scanner's reading of state messages, the second most
// frequent kind (a fleet whose breakers flap sends thousands a second).
// decodeFast reads a frame's top level once it knows the kind is state
// (from the kind onwards, or from the start again when other fields came
// first) with the fields below; everything the scanner does not need to
// decide itself is handed to encoding/json whole: a value of the wrong JSON
// type, a field given twice, a name over the limit, a number encoding/json
// would not read into its field. Such a frame is rejected there, with its
// error as decodeStd words it; every other frame gets, from the scanner,
// the very values and errors decodeStd would give
// (TestStateAgreesWithGeneral, FuzzDecode).

// The fields of a state message besides v, kind, ts and instance,
// numbered after the buckets fields so that one set of seen bits holds
// them all.
const (
	sResource = nTop + iota
	sStrategy
	sFrom
	sTo
	sRuleID
	sSnapshot
	sProbe
	sThreshold
	sRetryTimeoutMs
	sInferred
	nTopState
)

var stateNames = [nTopState - nTop][]byte{[]byte("resource"), []byte("strategy"), []byte("from"), []byte("to"),
	[]byte("ruleId"), []byte("snapshot"), []byte("probe"), []byte("threshold"), []byte("retryTimeoutMs"), []byte("inferred")}

// matchState matches a top-level key of a state message: a common field
// (fV to fInstance), a state field, or -1. No key matches both a common
// field and a state or buckets field, exactly or not.
func matchState(key []byte) int {
	for f, name := range stateNames {
		if string(key) == string(name) {
			return sResource + f
		}
	}
	if f := matchTop(key); f >= 0 {
		if f <= fInstance {
			return f
		}
		return -1
	}
	if f := foldMatch(key, stateNames[:]); f >= 0 {
		return sResource + f
	}
	return -1
}

// stateFrame is what the scanner read of a state message's own fields.
type stateFrame struct {
	m                 State // all but the header, Snapshot and Probe
	snap              Snapshot
	probe             Probe
	hasSnap, hasProbe bool
	strategy          int64
	// from and to: set (a string, not null) and a breaker state; a string
	// that is none is kept for the error.
	fromSet, toSet   bool
	fromBad, toBad   bool
	fromText, toText string
	// odd: the frame holds something left to encoding/json.
	odd bool
}

// stateBlock is a decoded State with the snapshot and probe it may point
// to, so that a message is one allocation.
type stateBlock struct {
	m     State
	snap  Snapshot
	probe Probe
}

// stateValue reads the value of state field fld (-1: unknown) at data[i]
// into s.
func (d *Decoder) stateValue(data []byte, i, fld int, s *stateFrame) (int, *DecodeError) {
	const depth = 1
	c := peek(data, i)
	if c == 'n' && fld >= 0 {
		// null leaves a field at its zero value, and from and to absent.
		switch fld {
		case sFrom:
			s.fromSet = false
		case sTo:
			s.toSet = false
		case sSnapshot:
			s.hasSnap = false
		case sProbe:
			s.hasProbe = false
		}
		return scanLiteral(data, i, "null")
	}
	switch fld {
	case sResource, sRuleID:
		if c != '"' {
			break
		}
		// A name over the limit is not kept: readName defers its error,
		// and the frame goes to encoding/json.
		field := "resource"
		if fld == sRuleID {
			field = "ruleId"
		}
		name, next, err := d.readName(data, i, field, -1)
		if err != nil {
			return 0, err
		}
		if fld == sResource {
			s.m.Resource = name
		} else {
			s.m.RuleID = name
		}
		return next, nil
	case sFrom, sTo:
		if c != '"' {
			break
		}
		st, text, bad, next, err := d.readBreakerState(data, i)
		if err != nil {
			return 0, err
		}
		if fld == sFrom {
			s.m.From, s.fromText, s.fromBad, s.fromSet = st, text, bad, true
		} else {
			s.m.To, s.toText, s.toBad, s.toSet = st, text, bad, true
		}
		return next, nil
	case sStrategy:
		return d.readStateInt(data, i, depth, &s.strategy, s)
	case sRetryTimeoutMs:
		return d.readStateInt(data, i, depth, &s.m.RetryTimeoutMs, s)
	case sThreshold:
		return d.readStateFloat(data, i, depth, &s.m.Threshold, s)
	case sInferred:
		if c == 't' || c == 'f' {
			return readBool(data, i, &s.m.Inferred)
		}
	case sSnapshot:
		if c == '{' {
			s.hasSnap = true
			return d.readStateObject(data, i, snapshotNames[:], s, func(f int, i int) (int, *DecodeError) {
				switch f {
				case 0:
					return d.readStateInt(data, i, depth+1, &s.snap.Total, s)
				case 1:
					return d.readStateInt(data, i, depth+1, &s.snap.Slow, s)
				case 2:
					return d.readStateInt(data, i, depth+1, &s.snap.Error, s)
				}
				return d.readStateFloat(data, i, depth+1, &s.snap.Value, s)
			})
		}
	case sProbe:
		if c == '{' {
			s.hasProbe = true
			return d.readStateObject(data, i, probeNames[:], s, func(f int, i int) (int, *DecodeError) {
				if f == 0 {
					return d.readStateInt(data, i, depth+1, &s.probe.RtMs, s)
				}
				if c := peek(data, i); c == 't' || c == 'f' {
					return readBool(data, i, &s.probe.Error)
				}
				s.odd = true
				return d.skipValue(data, i, depth+1)
			})
		}
	case -1:
		return d.skipValue(data, i, depth)
	}
	// A value of another JSON type.
	s.odd = true
	return d.skipValue(data, i, depth)
}

var (
	snapshotNames = [...][]byte{[]byte("total"), []byte("slow"), []byte("error"), []byte("value")}
	probeNames    = [...][]byte{[]byte("rtMs"), []byte("error")}
)

// readStateObject reads the snapshot or probe object at data[i] == '{',
// whose fields are names (matched exactly, else case-insensitively), each
// value but null read by field; an unknown field is skipped, a repeated
// one left to encoding/json.
func (d *Decoder) readStateObject(data []byte, i int, names [][]byte, s *stateFrame,
	field func(f, i int) (int, *DecodeError)) (int, *DecodeError) {
	const depth = 2 // the top-level object and this one
	obj := members{i: i}
	for {
		f, repeated, ok, err := d.member(data, &obj, names)
		if !ok {
			return obj.i, err
		}
		if repeated {
			s.odd = true
			f = -1
		}
		switch {
		case f < 0:
			obj.i, err = d.skipValue(data, obj.i, depth)
		case peek(data, obj.i) == 'n':
			obj.i, err = scanLiteral(data, obj.i, "null")
		default:
			obj.i, err = field(f, obj.i)
		}
		if err != nil {
			return 0, err
		}
	}
}

// readStateInt reads an integer field's value at data[i] (not null) into
// dst; any other number or type is left to encoding/json.
func (d *Decoder) readStateInt(data []byte, i, depth int, dst *int64, s *stateFrame) (int, *DecodeError) {
	next, v, outcome, err := d.readInt(data, i, depth)
	if outcome == valInt {
		*dst = v
	} else {
		s.odd = true
	}
	return next, err
}

// readStateFloat reads a float field's value at data[i] (not null) into
// dst, as encoding/json does: strconv.ParseFloat of the literal, out of
// range an error (left to encoding/json, as is any other type).
func (d *Decoder) readStateFloat(data []byte, i, depth int, dst *float64, s *stateFrame) (int, *DecodeError) {
	if c := peek(data, i); c != '-' && !isDigit(c) {
		s.odd = true
		return d.skipValue(data, i, depth)
	}
	next, _, _, err := scanNumber(data, i)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseFloat(string(data[i:next]), 64)
	if perr != nil {
		s.odd = true
	}
	*dst = v
	return next, nil
}

// readBool reads the literal true or false at data[i].
func readBool(data []byte, i int, dst *bool) (int, *DecodeError) {
	if data[i] == 't' {
		*dst = true
		return scanLiteral(data, i, "true")
	}
	*dst = false
	return scanLiteral(data, i, "false")
}

// readBreakerState reads the string at data[i] naming a breaker state. A
// string that names none is returned as text, for the error.
func (d *Decoder) readBreakerState(data []byte, i int) (st core.State, text string, bad bool, next int, err *DecodeError) {
	s, e, esc, next, err := scanString(data, i)
	if err != nil {
		return 0, "", false, 0, err
	}
	raw := data[s:e]
	if esc {
		d.scratch = unescape(d.scratch[:0], raw)
		raw = d.scratch
	}
	switch string(raw) {
	case "CLOSED":
		return core.Closed, "", false, next, nil
	case "OPEN":
		return core.Open, "", false, next, nil
	case "HALF_OPEN":
		return core.HalfOpen, "", false, next, nil
	}
	return 0, string(raw), true, next, nil
}

// finishState checks a state message the scanner read, in decodeStd's
// order after encoding/json's own errors (which a frame with anything odd
// is handed to it for), and returns it in a fresh allocation: a *State is
// the caller's to keep.
func (d *Decoder) finishState(f *frame, s *stateFrame) (Message, bool, *DecodeError) {
	if d.deferred != nil || s.odd {
		return nil, true, nil
	}
	const k = KindState
	switch {
	case !f.tsSet:
		return nil, false, errorf(ErrMalformed, k, "ts", "missing")
	case !f.instSet:
		return nil, false, errorf(ErrMalformed, k, "instance", "missing")
	case !s.fromSet:
		return nil, false, errorf(ErrMalformed, k, "from", "missing")
	case !s.toSet:
		return nil, false, errorf(ErrMalformed, k, "to", "missing")
	case s.fromBad:
		return nil, false, badBreakerState("from", s.fromText)
	case s.toBad:
		return nil, false, badBreakerState("to", s.toText)
	case s.strategy < 0 || s.strategy > int64(core.ErrorCount):
		return nil, false, badStrategy(s.strategy)
	}
	m := &s.m
	m.Header = d.sc.b.Header
	m.Strategy = core.Strategy(s.strategy)
	m.Snapshot, m.Probe = nil, nil
	if s.hasSnap {
		m.Snapshot = &s.snap
	}
	if s.hasProbe {
		m.Probe = &s.probe
	}
	if err := validateState(m, d.lim); err != nil {
		return nil, false, err
	}
	b := &stateBlock{m: *m, snap: s.snap, probe: s.probe}
	if s.hasSnap {
		b.m.Snapshot = &b.snap
	}
	if s.hasProbe {
		b.m.Probe = &b.probe
	}
	return &b.m, false, nil
}

func badBreakerState(field, s string) *DecodeError {
	return errorf(ErrInvalid, KindState, field, quoteClip(s)+" is not CLOSED, OPEN or HALF_OPEN")
}

func badStrategy(v int64) *DecodeError {
	return errorf(ErrInvalid, KindState, "strategy", fmt.Sprintf("%d is not 0, 1 or 2", v))
}
