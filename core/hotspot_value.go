package core

import (
	"math"
	"reflect"
	"strconv"
	"strings"
)

// hotKind is how a parameter value is tracked: by its kind, which also
// says how it matches SpecificItems keys.
type hotKind uint8

const (
	hotUntracked hotKind = iota // nil, NaN, or a kind core does not track
	hotString
	hotInt
	hotUint
	hotFloat64
	hotFloat32
	hotBool
)

// hotScalar is a parameter value read without copying it anywhere: the
// caller's value must not escape, or every entry would allocate to box it.
type hotScalar struct {
	kind hotKind
	s    string
	i    int64   // hotInt
	u    uint64  // hotUint; hotBool: 0 or 1
	f    float64 // hotFloat64, hotFloat32
}

// hotScalarOf classifies p: strings, bools, integers and floats, and named
// types of those kinds, are tracked (NaN is not: it equals nothing).
func hotScalarOf(p any) hotScalar {
	switch v := p.(type) {
	case nil:
		return hotScalar{}
	case string:
		return hotScalar{kind: hotString, s: v}
	case int:
		return hotScalar{kind: hotInt, i: int64(v)}
	case int64:
		return hotScalar{kind: hotInt, i: v}
	case int32:
		return hotScalar{kind: hotInt, i: int64(v)}
	case uint64:
		return hotScalar{kind: hotUint, u: v}
	case uint32:
		return hotScalar{kind: hotUint, u: uint64(v)}
	case bool:
		return hotBoolScalar(v)
	case float64:
		return hotFloatScalar(hotFloat64, v)
	}
	return hotScalarReflect(p)
}

func hotBoolScalar(b bool) hotScalar {
	if b {
		return hotScalar{kind: hotBool, u: 1}
	}
	return hotScalar{kind: hotBool}
}

func hotFloatScalar(k hotKind, f float64) hotScalar {
	if math.IsNaN(f) {
		return hotScalar{}
	}
	return hotScalar{kind: k, f: f}
}

// hotScalarReflect handles the rarer kinds and named types by reflection,
// which lets p escape no more than the type switch does.
func hotScalarReflect(p any) hotScalar {
	v := reflect.ValueOf(p)
	switch v.Kind() {
	case reflect.String:
		return hotScalar{kind: hotString, s: v.String()}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return hotScalar{kind: hotInt, i: v.Int()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return hotScalar{kind: hotUint, u: v.Uint()}
	case reflect.Bool:
		return hotBoolScalar(v.Bool())
	case reflect.Float64:
		return hotFloatScalar(hotFloat64, v.Float())
	case reflect.Float32:
		return hotFloatScalar(hotFloat32, v.Float())
	}
	return hotScalar{}
}

// hotOwn returns a copy of the tracked value p (of scalar sc) that shares no
// memory with the caller's: the key a value cache keeps. It allocates.
func hotOwn(p any, sc *hotScalar) any {
	switch v := p.(type) {
	case string:
		return strings.Clone(v)
	case int:
		return v
	case int64:
		return v
	case int32:
		return v
	case uint64:
		return v
	case uint32:
		return v
	case bool:
		return v
	case float64:
		return v
	}
	nv := reflect.New(reflect.TypeOf(p)).Elem()
	switch sc.kind {
	case hotString:
		nv.SetString(strings.Clone(sc.s))
	case hotInt:
		nv.SetInt(sc.i)
	case hotUint:
		nv.SetUint(sc.u)
	case hotFloat64, hotFloat32:
		nv.SetFloat(sc.f)
	case hotBool:
		nv.SetBool(sc.u != 0)
	}
	return nv.Interface()
}

// hotSpecific is a rule's SpecificItems by the kinds of value they match.
// A key matches a value whose text is the key: strings as they are,
// integers in decimal (strconv.FormatInt/FormatUint), floats as
// strconv.FormatFloat(f, 'g', -1, bits) writes them (fmt's %v), bools as
// "true" and "false". Keys are read once, when the controller is built, so
// that a lookup formats nothing.
type hotSpecific struct {
	str   map[string]int64
	ints  map[int64]int64
	uints map[uint64]int64 // the keys above math.MaxInt64
	f64   map[float64]int64
	f32   map[float32]int64
	bools [2]int64
	isSet [2]bool
}

func newHotSpecific(items map[string]int64) *hotSpecific {
	if len(items) == 0 {
		return nil
	}
	h := &hotSpecific{str: items, ints: map[int64]int64{}, uints: map[uint64]int64{},
		f64: map[float64]int64{}, f32: map[float32]int64{}}
	for k, th := range items {
		if n, err := strconv.ParseInt(k, 10, 64); err == nil && strconv.FormatInt(n, 10) == k {
			h.ints[n] = th
		} else if u, err := strconv.ParseUint(k, 10, 64); err == nil && strconv.FormatUint(u, 10) == k {
			h.uints[u] = th
		}
		// "-0" would collide with "0": maps hold one zero.
		if f, err := strconv.ParseFloat(k, 64); err == nil && strconv.FormatFloat(f, 'g', -1, 64) == k && k != "-0" {
			h.f64[f] = th
		}
		if f, err := strconv.ParseFloat(k, 32); err == nil && strconv.FormatFloat(f, 'g', -1, 32) == k && k != "-0" {
			h.f32[float32(f)] = th
		}
		switch k {
		case "false":
			h.bools[0], h.isSet[0] = th, true
		case "true":
			h.bools[1], h.isSet[1] = th, true
		}
	}
	return h
}

// threshold returns the specific threshold of the value, if it has one.
func (h *hotSpecific) threshold(sc *hotScalar) (int64, bool) {
	if h == nil {
		return 0, false
	}
	var th int64
	var ok bool
	switch sc.kind {
	case hotString:
		th, ok = h.str[sc.s]
	case hotInt:
		th, ok = h.ints[sc.i]
	case hotUint:
		if sc.u <= math.MaxInt64 {
			th, ok = h.ints[int64(sc.u)]
		} else {
			th, ok = h.uints[sc.u]
		}
	case hotFloat64:
		th, ok = h.f64[sc.f]
	case hotFloat32:
		th, ok = h.f32[float32(sc.f)]
	case hotBool:
		th, ok = h.bools[sc.u], h.isSet[sc.u]
	}
	return th, ok
}
