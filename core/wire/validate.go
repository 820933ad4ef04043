package wire

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/core"
)

// Range bounds of wire v1 values.
const (
	// MaxBucketMs is the longest bucket a sender may declare (one hour).
	MaxBucketMs = 3_600_000
	// MaxTimeMs is the latest time a message may carry: the last
	// millisecond of year 9999, so every time formats as a calendar date.
	MaxTimeMs = 253402300799999
)

// Validate applies the decoder's value rules to a message built in memory,
// so a sender can check what it is about to send (the encoder itself does
// not validate). lim's zero fields take their defaults; the frame size
// limit does not apply here.
func Validate(m Message, lim Limits) error {
	lim = lim.withDefaults()
	if isNilMessage(m) {
		return errorf(ErrInvalid, "", "", "nil message")
	}
	var err *DecodeError
	switch m := m.(type) {
	case *Meta:
		err = validateMeta(m, lim)
	case *Hello:
		err = validateHello(m, lim)
	case *Rules:
		err = validateRules(m, lim)
	case *Buckets:
		if err = validateBuckets(m, lim); err == nil {
			for i := range m.Items {
				if err = checkName(KindBuckets, "items", i, "resource", m.Items[i].Resource, lim); err != nil {
					break
				}
			}
		}
	case *State:
		err = validateState(m, lim)
	case *Bye:
		err = validateBye(m, lim)
	default:
		return errorf(ErrUnknownKind, "", "kind", fmt.Sprintf("unknown message type %T", m))
	}
	if err != nil {
		return err
	}
	return nil
}

// fieldAt names field of the i-th element of list ("items[3].rtMin"); i < 0
// names a top-level field.
func fieldAt(list string, i int, field string) string {
	if i < 0 {
		return field
	}
	if field == "" {
		return list + "[" + strconv.Itoa(i) + "]"
	}
	return list + "[" + strconv.Itoa(i) + "]." + field
}

// checkName applies the rules of identifying names: non-empty, valid
// UTF-8, at most lim.MaxNameBytes.
func checkName(kind Kind, list string, i int, field, s string, lim Limits) *DecodeError {
	if s == "" {
		return errorf(ErrInvalid, kind, fieldAt(list, i, field), "must not be empty")
	}
	return checkOptName(kind, list, i, field, s, lim)
}

// checkOptName is checkName for names that may be empty.
func checkOptName(kind Kind, list string, i int, field, s string, lim Limits) *DecodeError {
	if len(s) > lim.MaxNameBytes {
		return errorf(ErrNameTooLong, kind, fieldAt(list, i, field),
			fmt.Sprintf("%d bytes exceeds the limit of %d", len(s), lim.MaxNameBytes))
	}
	if !utf8.ValidString(s) {
		return errorf(ErrMalformed, kind, fieldAt(list, i, field), "invalid UTF-8")
	}
	return nil
}

func checkText(kind Kind, field, s string) *DecodeError {
	if !utf8.ValidString(s) {
		return errorf(ErrMalformed, kind, field, "invalid UTF-8")
	}
	return nil
}

func checkTime(kind Kind, list string, i int, field string, v int64) *DecodeError {
	if v < 0 || v > MaxTimeMs {
		return errorf(ErrInvalid, kind, fieldAt(list, i, field),
			fmt.Sprintf("%d is not a Unix millisecond time in [0, %d]", v, int64(MaxTimeMs)))
	}
	return nil
}

func checkBucketMs(kind Kind, v int64) *DecodeError {
	if v <= 0 || v > MaxBucketMs {
		return errorf(ErrInvalid, kind, "bucketMs", fmt.Sprintf("%d is not in [1, %d]", v, MaxBucketMs))
	}
	return nil
}

func checkCount(kind Kind, list string, i int, field string, v int64) *DecodeError {
	if v < 0 {
		return errorf(ErrInvalid, kind, fieldAt(list, i, field), fmt.Sprintf("%d is negative", v))
	}
	return nil
}

func checkFloat(kind Kind, field string, v float64) *DecodeError {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return errorf(ErrInvalid, kind, field, fmt.Sprintf("%v is not a finite non-negative number", v))
	}
	return nil
}

// validateHeader checks ts and instance; whether ts was present at all is
// the parser's business.
func validateHeader(h *Header, kind Kind, lim Limits) *DecodeError {
	if err := checkTime(kind, "", -1, "ts", h.Ts); err != nil {
		return err
	}
	if kind == KindMeta {
		return checkOptName(kind, "", -1, "instance", h.Instance, lim)
	}
	return checkName(kind, "", -1, "instance", h.Instance, lim)
}

func validateMeta(m *Meta, lim Limits) *DecodeError {
	if err := validateHeader(&m.Header, KindMeta, lim); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, v string }{{"title", m.Title}, {"description", m.Description}, {"recordedBy", m.RecordedBy}} {
		if err := checkText(KindMeta, f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func validateHello(m *Hello, lim Limits) *DecodeError {
	if err := validateHeader(&m.Header, KindHello, lim); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, v string }{{"app", m.App}, {"host", m.Host}, {"sdk", m.SDK}} {
		if err := checkOptName(KindHello, "", -1, f.name, f.v, lim); err != nil {
			return err
		}
	}
	if err := checkCount(KindHello, "", -1, "pid", m.Pid); err != nil {
		return err
	}
	if err := checkTime(KindHello, "", -1, "startedAt", m.StartedAt); err != nil {
		return err
	}
	return checkBucketMs(KindHello, m.BucketMs)
}

func validateRules(m *Rules, lim Limits) *DecodeError {
	if err := validateHeader(&m.Header, KindRules, lim); err != nil {
		return err
	}
	if err := checkName(KindRules, "", -1, "version", m.Version, lim); err != nil {
		return err
	}
	if len(m.Breakers) > lim.MaxItems {
		return errorf(ErrTooLarge, KindRules, "breakers", fmt.Sprintf("%d rules exceed the limit of %d", len(m.Breakers), lim.MaxItems))
	}
	if len(m.Flows) > lim.MaxItems {
		return errorf(ErrTooLarge, KindRules, "flows", fmt.Sprintf("%d rules exceed the limit of %d", len(m.Flows), lim.MaxItems))
	}
	if len(m.Params) > lim.MaxItems {
		return errorf(ErrTooLarge, KindRules, "params", fmt.Sprintf("%d rules exceed the limit of %d", len(m.Params), lim.MaxItems))
	}
	for i := range m.Breakers {
		r := &m.Breakers[i]
		if err := checkRuleNames("breakers", i, r.Resource, r.ID, r.LimitApp, lim); err != nil {
			return err
		}
		if err := r.Validate(); err != nil {
			return errorf(ErrInvalid, KindRules, fieldAt("breakers", i, ""), err.Error())
		}
	}
	for i := range m.Flows {
		r := &m.Flows[i]
		if err := checkRuleNames("flows", i, r.Resource, r.ID, r.LimitApp, lim); err != nil {
			return err
		}
		if err := r.Validate(); err != nil {
			return errorf(ErrInvalid, KindRules, fieldAt("flows", i, ""), err.Error())
		}
	}
	for i := range m.Params {
		if err := validateParam(&m.Params[i], i, lim); err != nil {
			return err
		}
	}
	return nil
}

// checkRuleNames checks the names every rule may carry.
func checkRuleNames(list string, i int, resource, id, limitApp string, lim Limits) *DecodeError {
	if err := checkName(KindRules, list, i, "resource", resource, lim); err != nil {
		return err
	}
	if err := checkOptName(KindRules, list, i, "id", id, lim); err != nil {
		return err
	}
	return checkOptName(KindRules, list, i, "limitApp", limitApp, lim)
}

// validateParam checks a hot-parameter rule: its names, its specific items
// (at most lim.MaxItems, each value a name) and core's rule checks.
func validateParam(r *core.HotParamRule, i int, lim Limits) *DecodeError {
	if err := checkRuleNames("params", i, r.Resource, r.ID, "", lim); err != nil {
		return err
	}
	if err := checkOptName(KindRules, "params", i, "paramKey", r.ParamKey, lim); err != nil {
		return err
	}
	if len(r.SpecificItems) > lim.MaxItems {
		return errorf(ErrTooLarge, KindRules, fieldAt("params", i, "specificItems"),
			fmt.Sprintf("%d items exceed the limit of %d", len(r.SpecificItems), lim.MaxItems))
	}
	for v := range r.SpecificItems {
		if err := checkOptName(KindRules, "params", i, "specificItems", v, lim); err != nil {
			return err
		}
	}
	if err := r.Validate(); err != nil {
		return errorf(ErrInvalid, KindRules, fieldAt("params", i, ""), err.Error())
	}
	return nil
}

// validateBuckets checks everything but the resource names, which the
// decoders check while they read them (so an oversized name is never
// copied).
func validateBuckets(m *Buckets, lim Limits) *DecodeError {
	if err := validateHeader(&m.Header, KindBuckets, lim); err != nil {
		return err
	}
	if err := checkBucketMs(KindBuckets, m.BucketMs); err != nil {
		return err
	}
	if err := checkCount(KindBuckets, "", -1, "dropped", m.Dropped); err != nil {
		return err
	}
	if len(m.Items) > lim.MaxItems {
		return errorf(ErrTooLarge, KindBuckets, "items", fmt.Sprintf("more than %d items", lim.MaxItems))
	}
	for i := range m.Items {
		if err := validateItem(&m.Items[i], i, m.BucketMs); err != nil {
			return err
		}
	}
	return nil
}

func validateItem(it *BucketItem, i int, bucketMs int64) *DecodeError {
	const k = KindBuckets
	if it.Resource == "" {
		return errorf(ErrInvalid, k, fieldAt("items", i, "resource"), "must not be empty")
	}
	if err := checkTime(k, "items", i, "start", it.Start); err != nil {
		return err
	}
	if it.Start%bucketMs != 0 {
		return errorf(ErrInvalid, k, fieldAt("items", i, "start"),
			fmt.Sprintf("%d is not a multiple of bucketMs %d", it.Start, bucketMs))
	}
	// Fast check first: a valid item has no negative count.
	if it.Pass|it.Block|it.Complete|it.Error|it.Slow|it.RtSum|it.RtMin|it.RtMax|it.Concurrency < 0 {
		for _, f := range [...]struct {
			name string
			v    int64
		}{{"pass", it.Pass}, {"block", it.Block}, {"complete", it.Complete}, {"error", it.Error},
			{"slow", it.Slow}, {"rtSum", it.RtSum}, {"rtMin", it.RtMin}, {"rtMax", it.RtMax},
			{"concurrency", it.Concurrency}} {
			if err := checkCount(k, "items", i, f.name, f.v); err != nil {
				return err
			}
		}
	}
	if it.Error > it.Complete {
		return errorf(ErrInvalid, k, fieldAt("items", i, "error"),
			fmt.Sprintf("%d exceeds complete %d", it.Error, it.Complete))
	}
	if it.Slow > it.Complete {
		return errorf(ErrInvalid, k, fieldAt("items", i, "slow"),
			fmt.Sprintf("%d exceeds complete %d", it.Slow, it.Complete))
	}
	if it.Complete == 0 {
		if it.RtSum != 0 || it.RtMin != 0 || it.RtMax != 0 {
			return errorf(ErrInvalid, k, fieldAt("items", i, "rtSum"),
				fmt.Sprintf("rtSum/rtMin/rtMax %d/%d/%d must be 0 when complete is 0", it.RtSum, it.RtMin, it.RtMax))
		}
	} else {
		if it.RtMin > it.RtMax {
			return errorf(ErrInvalid, k, fieldAt("items", i, "rtMin"),
				fmt.Sprintf("%d exceeds rtMax %d", it.RtMin, it.RtMax))
		}
		if it.RtMax > it.RtSum {
			return errorf(ErrInvalid, k, fieldAt("items", i, "rtMax"),
				fmt.Sprintf("%d exceeds rtSum %d", it.RtMax, it.RtSum))
		}
	}
	if it.Hot != nil {
		if err := validateHot(it.Hot, i); err != nil {
			return err
		}
	}
	if it.HasHist {
		h := &it.Hist
		var or int64
		for _, c := range h {
			or |= c
		}
		if or < 0 {
			for j, c := range h {
				if c < 0 {
					return errorf(ErrInvalid, k, fieldAt("items", i, "rtHist["+strconv.Itoa(j)+"]"), fmt.Sprintf("%d is negative", c))
				}
			}
		}
	}
	return nil
}

// maxHotItems is the most hot items one bucket item may carry: the
// values and their (other).
const maxHotItems = MaxHotValues + 1

func tooManyHot(i int) *DecodeError {
	return errorf(ErrTooLarge, KindBuckets, fieldAt("items", i, "hot"),
		fmt.Sprintf("more than %d values and their %s", MaxHotValues, HotOther))
}

func hotValueTooLong(i, j, n int) *DecodeError {
	return errorf(ErrNameTooLong, KindBuckets, fieldAt("items", i, "hot["+strconv.Itoa(j)+"].value"),
		fmt.Sprintf("%d bytes exceeds the limit of %d", n, MaxHotValueBytes))
}

// validateHot checks an item's hot values: at most MaxHotValues values and
// one HotOther, each value valid UTF-8 of at most MaxHotValueBytes, counts
// >= 0. Their sums are not checked against the item's counts: a value is
// counted only when an entry has the rule's parameter.
func validateHot(hot []HotItem, i int) *DecodeError {
	if len(hot) > maxHotItems {
		return tooManyHot(i)
	}
	others := 0
	for j := range hot {
		h := &hot[j]
		field := func(name string) string { return fieldAt("items", i, "hot["+strconv.Itoa(j)+"]."+name) }
		switch {
		case len(h.Value) > MaxHotValueBytes:
			return hotValueTooLong(i, j, len(h.Value))
		case !utf8.ValidString(h.Value):
			return errorf(ErrMalformed, KindBuckets, field("value"), "invalid UTF-8")
		case h.Value == HotOther && others > 0:
			return errorf(ErrInvalid, KindBuckets, field("value"), HotOther+" given more than once")
		case h.Pass < 0:
			return errorf(ErrInvalid, KindBuckets, field("pass"), fmt.Sprintf("%d is negative", h.Pass))
		case h.Block < 0:
			return errorf(ErrInvalid, KindBuckets, field("block"), fmt.Sprintf("%d is negative", h.Block))
		}
		if h.Value == HotOther {
			others++
		}
	}
	if len(hot)-others > MaxHotValues {
		return tooManyHot(i)
	}
	return nil
}

func validateState(m *State, lim Limits) *DecodeError {
	const k = KindState
	if err := validateHeader(&m.Header, k, lim); err != nil {
		return err
	}
	if err := checkName(k, "", -1, "resource", m.Resource, lim); err != nil {
		return err
	}
	if m.Strategy > core.ErrorCount {
		return badStrategy(int64(m.Strategy))
	}
	if !validState(m.From) {
		return errorf(ErrInvalid, k, "from", fmt.Sprintf("%d is not a breaker state", m.From))
	}
	if !validState(m.To) {
		return errorf(ErrInvalid, k, "to", fmt.Sprintf("%d is not a breaker state", m.To))
	}
	if m.From == m.To {
		return errorf(ErrInvalid, k, "to", "equals from ("+m.From.String()+")")
	}
	if err := checkOptName(k, "", -1, "ruleId", m.RuleID, lim); err != nil {
		return err
	}
	if s := m.Snapshot; s != nil {
		for _, f := range [...]struct {
			name string
			v    int64
		}{{"snapshot.total", s.Total}, {"snapshot.slow", s.Slow}, {"snapshot.error", s.Error}} {
			if err := checkCount(k, "", -1, f.name, f.v); err != nil {
				return err
			}
		}
		if err := checkFloat(k, "snapshot.value", s.Value); err != nil {
			return err
		}
	}
	if p := m.Probe; p != nil {
		if err := checkCount(k, "", -1, "probe.rtMs", p.RtMs); err != nil {
			return err
		}
	}
	if err := checkFloat(k, "threshold", m.Threshold); err != nil {
		return err
	}
	if m.RetryTimeoutMs < 0 || m.RetryTimeoutMs > math.MaxUint32 {
		return errorf(ErrInvalid, k, "retryTimeoutMs", fmt.Sprintf("%d is not in [0, %d]", m.RetryTimeoutMs, uint32(math.MaxUint32)))
	}
	return nil
}

func validState(s core.State) bool {
	return s == core.Closed || s == core.Open || s == core.HalfOpen
}

func validateBye(m *Bye, lim Limits) *DecodeError {
	if err := validateHeader(&m.Header, KindBye, lim); err != nil {
		return err
	}
	return checkText(KindBye, "reason", m.Reason)
}
