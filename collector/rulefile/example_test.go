package rulefile_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/sentinel-top/sentinel-top/collector/rulefile"
	"github.com/sentinel-top/sentinel-top/core"
)

// A proposed rule set in two files, a Java degrade file and a Java flow
// file, each told from its content and read as core's rules, then put
// together.
func Example() {
	degrade, f, err := rulefile.ReadFile("testdata/java-degrade.json", rulefile.FormatAuto, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f)
	// count 0.5 without slowRatioThreshold: a 1 ms bound and a ratio of 1.
	r := degrade.Breakers[0]
	fmt.Println(r.Resource, r.Strategy, r.MaxAllowedRtMs, r.Threshold, r.Semantics)

	flow, f, err := rulefile.ReadFile("testdata/java-flow.json", rulefile.FormatAuto, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f)
	rules := rulefile.Merge(degrade, flow)
	fmt.Println(len(rules.Breakers), "breakers,", len(rules.Flows), "flow rules")
	// Output:
	// java-degrade
	// GET:/api/price slow-ratio 1 1 java
	// java-flow
	// 3 breakers, 4 flow rules
}

// A rule that does not read names its index and its field; an empty
// array must have its format named.
func ExampleParse() {
	_, _, err := rulefile.Parse([]byte(`[
		{"resource": "a", "grade": 2, "count": 5, "timeWindow": 10},
		{"resource": "b", "grade": 1, "count": 0.5, "timeWindow": -1}
	]`), rulefile.FormatAuto)
	var re *rulefile.RuleError
	if errors.As(err, &re) {
		fmt.Println(re.Index, re.Field, errors.Is(err, core.ErrInvalidRule))
	}
	fmt.Println(err)

	_, _, err = rulefile.Parse([]byte(`[]`), rulefile.FormatAuto)
	fmt.Println(errors.Is(err, rulefile.ErrFormat))
	format, _ := rulefile.ParseFormat("go-breaker")
	rules, _, err := rulefile.Parse([]byte(`[]`), format)
	fmt.Println(len(rules.Breakers), err)
	// Output:
	// 1 timeWindow true
	// rule at index 1: timeWindow -1 must be positive (seconds)
	// true
	// 0 <nil>
}
