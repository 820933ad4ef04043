package rulefile

import (
	"errors"
	"fmt"
)

// The errors this package's errors wrap, for errors.Is. A rule that core
// refuses (its Validate, or a check Java's or sentinel-golang's rule
// manager makes) wraps core.ErrInvalidRule.
var (
	// ErrSyntax: the data is not JSON, or not a JSON array.
	ErrSyntax = errors.New("not a JSON array of rules")
)

// RuleError is a problem of one rule of an array: its index (from 0) and,
// when one field is at fault, that field's JSON name as the file spells
// it.
type RuleError struct {
	Index int
	Field string
	Err   error
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule at index %d: %v", e.Index, e.Err) }

// Unwrap returns the problem.
func (e *RuleError) Unwrap() error { return e.Err }
