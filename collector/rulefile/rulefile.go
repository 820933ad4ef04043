package rulefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// Rules is a rule set read from one or more files.
type Rules struct {
	Breakers []core.BreakerRule
	Flows    []core.FlowRule
}

// Merge puts rule sets together (a degrade file's and a flow file's, for
// one), in order, into a new set that shares no slice with them.
func Merge(sets ...Rules) Rules {
	var out Rules
	for _, s := range sets {
		out.Breakers = append(out.Breakers, s.Breakers...)
		out.Flows = append(out.Flows, s.Flows...)
	}
	return out
}

// Format is a rule file's format: one JSON array of rules of one kind.
type Format int

// The formats. The package documentation says how FormatAuto tells them.
const (
	// FormatAuto tells the format from the content.
	FormatAuto Format = iota
	// FormatGoBreaker is sentinel-golang v1.0.4's circuitbreaker.Rule,
	// whose JSON core.BreakerRule shares.
	FormatGoBreaker
	// FormatGoFlow is sentinel-golang v1.0.4's flow.Rule, whose JSON
	// core.FlowRule shares (the fields core supports).
	FormatGoFlow
	// FormatJavaDegrade is Java Sentinel's DegradeRule (1.8, or 1.6 and
	// 1.7 told by their fields), mapped as JavaDegradeRules maps it.
	FormatJavaDegrade
	// FormatJavaFlow is Java Sentinel's FlowRule, mapped as JavaFlowRules
	// maps it.
	FormatJavaFlow
)

var formatNames = [...]string{"auto", "go-breaker", "go-flow", "java-degrade", "java-flow"}

// String is the format's name, as ParseFormat reads it.
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat reads a format's name: auto, go-breaker, go-flow,
// java-degrade or java-flow (any case). Another name is an error wrapping
// ErrFormat.
func ParseFormat(s string) (Format, error) {
	for i, name := range formatNames {
		if strings.EqualFold(s, name) {
			return Format(i), nil
		}
	}
	return FormatAuto, fmt.Errorf("%w %q: want one of %s", ErrFormat, s, strings.Join(formatNames[:], ", "))
}

// Set sets the format from its name, for a flag (flag.Var).
func (f *Format) Set(s string) error {
	v, err := ParseFormat(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// java reports whether the format is one of Java Sentinel's.
func (f Format) java() bool { return f == FormatJavaDegrade || f == FormatJavaFlow }

// breakers reports whether the format's rules are circuit breakers.
func (f Format) breakers() bool { return f == FormatGoBreaker || f == FormatJavaDegrade }

// Parse reads a JSON array of rules of format f (FormatAuto: told from the
// content, as the package documentation says) and returns them with the
// format read.
//
// It is strict about what it reads and lenient about what it ignores:
// fields it does not know are ignored (real files carry more), but a rule
// that is not an object, a field of the wrong type or out of its range,
// and a rule its runtime or core would refuse are errors, every one of
// them, as Problems: each a RuleError naming the rule's index and, when
// one field is at fault, the field. Empty data (or white space) and JSON
// null read as an empty array. An array whose format cannot be told (it is empty, or no
// rule has a field that tells it), that mixes formats, or that does not
// fit the format f names, is an error wrapping ErrFormat. On any error
// the rules returned are empty.
func Parse(data []byte, f Format) (Rules, Format, error) {
	if f < FormatAuto || f > FormatJavaFlow {
		return Rules{}, f, fmt.Errorf("%w: %v", ErrFormat, f)
	}
	raws, err := array(data)
	if err != nil {
		return Rules{}, f, err
	}
	f, err = detect(raws, f)
	if err != nil {
		return Rules{}, f, err
	}
	var rules Rules
	var problems []*RuleError
	switch f {
	case FormatGoBreaker:
		rules.Breakers, problems = mapAll(raws, goBreakerAt)
	case FormatGoFlow:
		rules.Flows, problems = mapAll(raws, goFlowAt)
	case FormatJavaDegrade:
		rules.Breakers, problems = mapAll(raws, func(raw json.RawMessage) (core.BreakerRule, error) {
			return javaDegradeRuleAt(raw, "")
		})
	case FormatJavaFlow:
		rules.Flows, problems = mapAll(raws, javaFlowRuleAt)
	}
	if problems != nil {
		return Rules{}, f, Problems(problems)
	}
	return rules, f, nil
}

// Problems is Parse's error when rules do not map: every rule's problem,
// in the array's order.
type Problems []*RuleError

// maxListed is how many problems Problems.Error lists.
const maxListed = 10

// Error lists the first problems, one a line.
func (p Problems) Error() string {
	var b strings.Builder
	for i, e := range p {
		if i == maxListed {
			fmt.Fprintf(&b, "\nand %d more", len(p)-maxListed)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (p Problems) Unwrap() []error {
	errs := make([]error, len(p))
	for i, e := range p {
		errs[i] = e
	}
	return errs
}

// array splits a JSON array into its elements: none for empty data or
// null.
func array(data []byte) ([]json.RawMessage, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%w: the data is %s", ErrSyntax, te.Value)
		}
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	return raws, nil
}

// mapAll maps every element of an array with one, returning the rules
// that map and a RuleError for each that does not.
func mapAll[R any](raws []json.RawMessage, one func(json.RawMessage) (R, error)) ([]R, []*RuleError) {
	var rules []R
	var problems []*RuleError
	for i, raw := range raws {
		r, err := one(raw)
		if err != nil {
			problems = append(problems, ruleError(i, err))
			continue
		}
		rules = append(rules, r)
	}
	return rules, problems
}
