package hotvalues

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Bounds of the hot values a Tracker counts.
const (
	// TrackedValues bounds the distinct values one resource counts in
	// one bucket; entries of further values are summed in (other).
	TrackedValues = 1024
	// ClosedBuckets is how many closed buckets' hot values a resource
	// keeps for the shipper (it ships each bucket right after it closes).
	ClosedBuckets = 8
)

// hotKey identifies a parameter value without copying it: a string, an
// integer, a float's bits or a bool, of one of the resource's parameters.
type hotKey struct {
	param int32 // index into Tracker.params
	kind  uint8
	s     string
	n     uint64
}

const (
	hotKeyString = iota + 1
	hotKeyInt
	hotKeyUint
	hotKeyFloat
	hotKeyBool
)

// hotKeyOf returns the key of value v of parameter param, or false for a
// value no rule tracks (nil, NaN).
func hotKeyOf(param int32, v any) (hotKey, bool) {
	k := hotKey{param: param}
	switch v := v.(type) {
	case nil:
		return k, false
	case string:
		k.kind, k.s = hotKeyString, v
	case int:
		k.kind, k.n = hotKeyInt, uint64(v)
	case int64:
		k.kind, k.n = hotKeyInt, uint64(v)
	case int32:
		k.kind, k.n = hotKeyInt, uint64(v)
	case uint64:
		k.kind, k.n = hotKeyUint, v
	case uint32:
		k.kind, k.n = hotKeyUint, uint64(v)
	case bool:
		k.kind = hotKeyBool
		if v {
			k.n = 1
		}
	case float64:
		if math.IsNaN(v) {
			return k, false
		}
		k.kind, k.n = hotKeyFloat, math.Float64bits(v)
	default:
		return hotKeyReflect(k, v)
	}
	return k, true
}

// hotKeyReflect keys the rarer kinds and named types of strings, integers,
// floats and bools, as core tracks them; other values are not tracked.
func hotKeyReflect(k hotKey, v any) (hotKey, bool) {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.String:
		k.kind, k.s = hotKeyString, r.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		k.kind, k.n = hotKeyInt, uint64(r.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		k.kind, k.n = hotKeyUint, r.Uint()
	case reflect.Float32, reflect.Float64:
		f := r.Float()
		if math.IsNaN(f) {
			return k, false
		}
		k.kind, k.n = hotKeyFloat, math.Float64bits(f)
	case reflect.Bool:
		k.kind = hotKeyBool
		if r.Bool() {
			k.n = 1
		}
	default:
		return k, false
	}
	return k, true
}

// text is the value as the wire carries it, cut to wire.MaxHotValueBytes.
func (k hotKey) text() string {
	var s string
	switch k.kind {
	case hotKeyInt:
		s = strconv.FormatInt(int64(k.n), 10)
	case hotKeyUint:
		s = strconv.FormatUint(k.n, 10)
	case hotKeyFloat:
		s = strconv.FormatFloat(math.Float64frombits(k.n), 'g', -1, 64)
	case hotKeyBool:
		s = strconv.FormatBool(k.n == 1)
	default:
		s = k.s
	}
	return wire.CutHotValue(s)
}

type hotCount struct{ pass, block int64 }

func (c *hotCount) add(passed bool, n int64) {
	if passed {
		c.pass += n
	} else {
		c.block += n
	}
}

// Tracker counts one resource's entries by parameter value, bucket by
// bucket: the parameters are those its hot-parameter rules read. It is
// safe for concurrent use.
type Tracker struct {
	bucketMs int64
	params   []core.HotParamRule // one rule per distinct parameter read

	mu     sync.Mutex
	start  int64 // the bucket counted, -1 for none
	counts map[hotKey]hotCount
	other  hotCount // entries of values past TrackedValues
	closed [ClosedBuckets]hotClosed
	next   int // the ring slot closed next
}

// hotClosed is a closed bucket's hot values, as shipped.
type hotClosed struct {
	start int64
	items []wire.HotItem
}

// New returns a tracker for a resource's hot-parameter rules,
// or nil when they read no parameter.
func New(rules []core.HotParamRule, bucketMs int64) *Tracker {
	t := &Tracker{bucketMs: bucketMs, start: -1, counts: make(map[hotKey]hotCount)}
	for _, r := range rules {
		if !slices.ContainsFunc(t.params, func(p core.HotParamRule) bool {
			return p.ParamIndex == r.ParamIndex && p.ParamKey == r.ParamKey
		}) {
			t.params = append(t.params, core.HotParamRule{ParamIndex: r.ParamIndex, ParamKey: r.ParamKey})
		}
	}
	for i := range t.closed {
		t.closed[i].start = -1
	}
	return t
}

// Keys lists the attachment names the rules read (their ParamKey), for a
// caller that must build core.Params.Attachments for them.
func (t *Tracker) Keys() []string {
	var keys []string
	for _, r := range t.params {
		if r.ParamKey != "" {
			keys = append(keys, r.ParamKey)
		}
	}
	return keys
}

// Record counts n entries of the resource at now, admitted or not (n is
// a batch's count). Nothing of p is kept: for a value already counted it
// does not allocate.
func (t *Tracker) Record(now int64, p *core.Params, passed bool, n int64) {
	start := now - now%t.bucketMs
	t.mu.Lock()
	defer t.mu.Unlock()
	if start > t.start {
		t.closeLocked()
		t.start = start
	}
	for i := range t.params {
		k, ok := hotKeyOf(int32(i), t.params[i].Param(p))
		if !ok {
			continue
		}
		c, found := t.counts[k]
		if !found {
			if len(t.counts) >= TrackedValues {
				t.other.add(passed, n)
				continue
			}
			k.s = strings.Clone(k.s) // keep nothing of the caller's
		}
		c.add(passed, n)
		t.counts[k] = c
	}
}

// closeLocked moves the counted bucket's top values into the ring.
func (t *Tracker) closeLocked() {
	if t.start < 0 {
		return
	}
	if len(t.counts) > 0 || t.other != (hotCount{}) {
		t.closed[t.next] = hotClosed{start: t.start, items: t.topLocked()}
		t.next = (t.next + 1) % len(t.closed)
	}
	clear(t.counts)
	t.other = hotCount{}
	t.start = -1
}

// topLocked returns the counted bucket's values with the most entries
// (pass + block), at most wire.MaxHotValues, ties broken by parameter and
// value, and the rest summed in one wire.HotOther item. With rules on
// several parameters an entry counts once under each, and (other) carries
// the first rule's paramIndex.
func (t *Tracker) topLocked() []wire.HotItem {
	type entry struct {
		k hotKey
		c hotCount
	}
	all := make([]entry, 0, len(t.counts))
	for k, c := range t.counts {
		all = append(all, entry{k, c})
	}
	slices.SortFunc(all, func(x, y entry) int {
		if d := cmp.Compare(y.c.pass+y.c.block, x.c.pass+x.c.block); d != 0 {
			return d
		}
		if d := cmp.Compare(x.k.param, y.k.param); d != 0 {
			return d
		}
		return cmp.Compare(x.k.text(), y.k.text())
	})
	n := min(len(all), wire.MaxHotValues)
	items := make([]wire.HotItem, 0, n+1)
	for _, e := range all[:n] {
		items = append(items, wire.HotItem{Param: int64(t.params[e.k.param].ParamIndex), Value: e.k.text(), Pass: e.c.pass, Block: e.c.block})
	}
	other := t.other
	for _, e := range all[n:] {
		other.pass += e.c.pass
		other.block += e.c.block
	}
	if other != (hotCount{}) {
		items = append(items, wire.HotItem{Param: int64(t.params[0].ParamIndex), Value: wire.HotOther, Pass: other.pass, Block: other.block})
	}
	return items
}

// Hot returns the hot values of the closed bucket at start, nil when it
// had none. The bucket still counted is closed by it: an entry that reads
// the clock in a bucket and is counted after the bucket shipped is not
// listed.
func (t *Tracker) Hot(start int64) []wire.HotItem {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start >= 0 && t.start <= start {
		t.closeLocked()
	}
	for i := range t.closed {
		if t.closed[i].start == start {
			return t.closed[i].items
		}
	}
	return nil
}
