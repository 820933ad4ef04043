package rulefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// How FormatAuto tells a file's format (doc.go says it for users).
//
// Each rule's keys are read, whatever their case (Go's encoding/json, and
// so sentinel-golang, match field names so). Some keys belong to one
// family only: familyMarks. A rule carrying both families' is ambiguous;
// an array whose rules carry different families' is mixed; an array where
// no rule carries either cannot be told. Within the family, kindMarks tell
// a breaker (degrade) rule from a flow rule, the same way. An array none
// of whose rules carries a breaker's key is flow rules: a breaker rule
// cannot be valid without its retry timeout (retryTimeoutMs, timeWindow),
// while a flow rule can be as short as a resource and its threshold.

// marks are the keys (lower case) that tell a family or a kind.
type marks []string

// familyMarks are the keys only one family's rules have.
var familyMarks = [2]marks{
	goFamily: {"threshold", "retrytimeoutms", "maxallowedrtms", "statslidingwindowbucketcount", "probenum",
		"tokencalculatestrategy", "relationstrategy", "warmupcoldfactor", "statintervalinms",
		"lowmemusagethreshold", "highmemusagethreshold", "memlowwatermarkbytes", "memhighwatermarkbytes", "semantics"},
	javaFamily: {"count", "grade", "timewindow", "slowratiothreshold", "rtslowrequestamount", "passcount",
		"regex", "clustermode", "clusterconfig"},
}

// The families.
const (
	goFamily = iota
	javaFamily
)

// kindMarks are, per family, the keys only its breaker rules have and
// those only its flow rules have. A Java rule's grade 2 (error count) is
// a degrade rule's too: a flow rule's grade is 0 or 1.
var kindMarks = [2][2]marks{
	goFamily: {
		{"strategy", "retrytimeoutms", "minrequestamount", "statintervalms", "statslidingwindowbucketcount",
			"maxallowedrtms", "probenum", "semantics"},
		{"tokencalculatestrategy", "controlbehavior", "relationstrategy", "refresource", "maxqueueingtimems",
			"warmupperiodsec", "warmupcoldfactor", "statintervalinms",
			"lowmemusagethreshold", "highmemusagethreshold", "memlowwatermarkbytes", "memhighwatermarkbytes"},
	},
	javaFamily: {
		{"timewindow", "slowratiothreshold", "minrequestamount", "statintervalms", "rtslowrequestamount", "passcount"},
		{"strategy", "controlbehavior", "refresource", "warmupperiodsec", "maxqueueingtimems", "clustermode", "clusterconfig"},
	},
}

// The kinds, kindMarks' second index.
const (
	breakerKind = iota
	flowKind
)

// formats are the formats by family and kind.
var formats = [2][2]Format{
	goFamily:   {FormatGoBreaker, FormatGoFlow},
	javaFamily: {FormatJavaDegrade, FormatJavaFlow},
}

// familyNames name the families in messages.
var familyNames = [2]string{"sentinel-golang", "Java Sentinel"}

// keys are a rule's keys: lower case, to the spelling the rule has.
type keys map[string]string

// first is the rule's first key (as spelt) of m, "" when it has none.
func (k keys) first(m marks) string {
	for _, name := range m {
		if spelt, ok := k[name]; ok {
			return spelt
		}
	}
	return ""
}

// keysOf reads a rule's keys, and a Java grade of 2 as the key "grade=2";
// nil for an element that is not an object (its decoding says so).
func keysOf(raw json.RawMessage) keys {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	k := make(keys, len(fields))
	for name, v := range fields {
		lower := strings.ToLower(name)
		k[lower] = name
		if lower == "grade" && bytes.Equal(bytes.TrimSpace(v), []byte("2")) {
			k["grade=2"] = name + " 2"
		}
	}
	return k
}

// sighting is the first rule of an array seen to carry a mark.
type sighting struct {
	index int
	key   string // as spelt; "" when none was seen
}

// detect tells the format of an array of rules, or checks that its rules
// fit the format f names.
func detect(raws []json.RawMessage, f Format) (Format, error) {
	if len(raws) == 0 && f == FormatAuto {
		return f, fmt.Errorf("%w: an empty array can be any format's: name it (%s)", ErrFormat, strings.Join(formatNames[1:], ", "))
	}
	all := make([]keys, len(raws))
	for i, raw := range raws {
		all[i] = keysOf(raw)
	}
	family := -1
	if f != FormatAuto {
		family = goFamily
		if f.java() {
			family = javaFamily
		}
	}
	family, err := tell(all, family, func(k keys, fam int) string { return k.first(familyMarks[fam]) },
		func(fam int) string { return familyNames[fam] })
	if err != nil {
		return f, err
	}
	if family < 0 {
		for i, k := range all {
			if k == nil { // not an object: say so, rather than that nothing tells
				var m map[string]json.RawMessage
				return f, ruleError(i, decode(raws[i], &m))
			}
		}
		return f, fmt.Errorf("%w: no rule has a field that tells sentinel-golang's rules (threshold) from Java Sentinel's (count): name the format (%s)",
			ErrFormat, strings.Join(formatNames[1:], ", "))
	}
	kind := -1
	if f != FormatAuto {
		kind = flowKind
		if f.breakers() {
			kind = breakerKind
		}
	}
	kindName := func(kind int) string { return formats[family][kind].String() }
	markOf := func(k keys, kind int) string {
		if kind == breakerKind && family == javaFamily && k["grade=2"] != "" {
			return k["grade=2"]
		}
		return k.first(kindMarks[family][kind])
	}
	kind, err = tell(all, kind, markOf, kindName)
	if err != nil {
		return f, err
	}
	if kind < 0 {
		kind = flowKind
	}
	return formats[family][kind], nil
}

// tell decides between two classes (families, or kinds) by the marks
// each rule carries (markOf: the first key of a class, or ""): a rule
// with both classes' marks is ambiguous, rules with different classes'
// are mixed, and with want >= 0, a rule with the other class's mark does
// not fit. It returns the class seen (or want), -1 when no rule told.
func tell(all []keys, want int, markOf func(keys, int) string, name func(int) string) (int, error) {
	var seen [2]sighting
	for c := range seen {
		seen[c].index = -1
	}
	for i, k := range all {
		if k == nil {
			continue
		}
		a, b := markOf(k, 0), markOf(k, 1)
		switch {
		case a != "" && b != "":
			return want, &RuleError{Index: i, Err: &problem{err: ErrFormat,
				msg: fmt.Sprintf("%s: the rule has both a %s field (%s) and a %s field (%s)", ErrFormat, name(0), a, name(1), b)}}
		case a == "" && b == "":
			continue
		}
		c, key := 0, a
		if b != "" {
			c, key = 1, b
		}
		field, _, _ := strings.Cut(key, " ") // "grade 2": grade
		if want >= 0 && c != want {
			return want, &RuleError{Index: i, Field: field, Err: &problem{field: field, err: ErrFormat,
				msg: fmt.Sprintf("%s: the rule has a %s field (%s): it is not a %s rule", ErrFormat, name(c), key, name(want))}}
		}
		if seen[c].index < 0 {
			seen[c] = sighting{index: i, key: key}
		}
		if o := seen[1-c]; o.index >= 0 {
			return want, &RuleError{Index: i, Field: field, Err: &problem{field: field, err: ErrFormat,
				msg: fmt.Sprintf("%s: mixed: the rule has a %s field (%s), the rule at index %d a %s field (%s)", ErrFormat, name(c), key, o.index, name(1-c), o.key)}}
		}
	}
	switch {
	case want >= 0:
		return want, nil
	case seen[0].index >= 0:
		return 0, nil
	case seen[1].index >= 0:
		return 1, nil
	}
	return -1, nil
}
