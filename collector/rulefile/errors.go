package rulefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/sentinel-top/sentinel-top/core"
)

// The errors this package's errors wrap, for errors.Is. A rule that core,
// Java Sentinel or sentinel-golang would refuse wraps core.ErrInvalidRule.
var (
	// ErrSyntax: the data is not JSON, or not a JSON array.
	ErrSyntax = errors.New("not a JSON array of rules")
	// ErrType: a rule is not a JSON object, or one of its fields has
	// the wrong JSON type or a value its type cannot hold (a negative
	// count, 1.5 where an integer goes, an integer past Java's int).
	ErrType = errors.New("wrong JSON type")
	// ErrFormat: the format cannot be told (an empty array, or no rule
	// with a field that tells it), a rule or the array mixes formats, a
	// rule does not fit the format named, or a format's name is unknown.
	ErrFormat = errors.New("rule file format")
)

// RuleError is a problem of one rule of an array: its index (from 0) and,
// when one field is at fault, that field's JSON name as the rule's format
// spells it ("" when the rule as a whole is). Err wraps ErrType,
// core.ErrInvalidRule or ErrFormat.
type RuleError struct {
	Index int
	Field string
	Err   error
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule at index %d: %v", e.Index, e.Err) }

// Unwrap returns the problem.
func (e *RuleError) Unwrap() error { return e.Err }

// problem is a rule's problem worded for the reader, field first, that
// wraps one of the errors above (or core.ErrInvalidRule) without
// repeating its text.
type problem struct {
	field string
	msg   string
	err   error
}

func (p *problem) Error() string { return p.msg }
func (p *problem) Unwrap() error { return p.err }

// invalid is a problem of a field that makes the rule one its runtime
// refuses.
func invalid(field, format string, args ...any) error {
	return &problem{field: field, msg: fmt.Sprintf(format, args...), err: core.ErrInvalidRule}
}

// wrongType is a problem of a field whose value its type cannot hold.
func wrongType(field, format string, args ...any) error {
	return &problem{field: field, msg: fmt.Sprintf(format, args...), err: ErrType}
}

// ruleError is the RuleError of the rule at index i, with the field of a
// problem.
func ruleError(i int, err error) *RuleError {
	e := &RuleError{Index: i, Err: err}
	var p *problem
	if errors.As(err, &p) {
		e.Field = p.field
	}
	return e
}

// decode unmarshals one rule into v; a type error names its field and
// says what the field takes.
func decode(raw json.RawMessage, v any) error {
	if bytes.Equal(raw, []byte("null")) {
		return wrongType("", "json: the rule is null, not an object")
	}
	err := json.Unmarshal(raw, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &te):
		return &problem{msg: "json: " + err.Error(), err: ErrType}
	case te.Field == "":
		return wrongType("", "json: the rule is %s, not an object", article(te.Value))
	default:
		return wrongType(te.Field, "json: %s is %s, not %s", te.Field, article(te.Value), takes(te.Type))
	}
}

// article puts an article before a JSON type's name ("a string", "an
// array"); a value ("number 1.5") stays as it is.
func article(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	case "string", "number":
		return "a " + v
	}
	return v
}

// takes says what values a Go type of a rule's field holds.
func takes(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Uint32:
		return fmt.Sprintf("an integer from 0 to %d", uint32(math.MaxUint32))
	case reflect.Uint64:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64))
	case reflect.Int32:
		return fmt.Sprintf("an integer from %d to %d", math.MinInt32, math.MaxInt32)
	case reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	default:
		return t.String()
	}
}
