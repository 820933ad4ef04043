package source

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/collector/rulefile"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Java Sentinel's hot-parameter rules (ParamFlowRule, of its
// sentinel-parameter-flow-control module), and what the rule parsers
// share.

// javaParamPaths are where a Java service may answer its hot-parameter
// rules: /getRules?type=paramFlow, or the module's own command (which
// Sentinel's dashboard reads).
var javaParamPaths = [...]string{"/getRules?type=paramFlow", "/getParamFlowRules"}

// getParamRules fetches the hot-parameter rules from the path that
// answered last, else from each in turn; false when none answers (a
// service without the module has none, and a failing one keeps those read
// before).
func (p *javaPoller) getParamRules(ctx context.Context) ([]byte, bool) {
	for k := range javaParamPaths {
		i := (p.paramPath + k) % len(javaParamPaths)
		if body, err := p.get(ctx, javaParamPaths[i]); err == nil {
			p.paramPath = i
			return body, true
		}
	}
	return nil, false
}

// javaParamFlowRule is Java Sentinel's ParamFlowRule as its command API
// writes it.
type javaParamFlowRule struct {
	Resource          string          `json:"resource"`
	Grade             int64           `json:"grade"` // 0 threads, 1 QPS
	ParamIdx          *int64          `json:"paramIdx"`
	Count             float64         `json:"count"`
	ControlBehavior   int64           `json:"controlBehavior"` // 0 reject, 2 rate limiter
	MaxQueueingTimeMs int64           `json:"maxQueueingTimeMs"`
	BurstCount        int64           `json:"burstCount"`
	DurationInSec     int64           `json:"durationInSec"`
	ParamFlowItemList []javaParamItem `json:"paramFlowItemList"`
	LimitApp          string          `json:"limitApp"`
	ClusterMode       bool            `json:"clusterMode"`
	Regex             bool            `json:"regex"`
}

// javaParamItem is a ParamFlowItem: a value with its own threshold.
type javaParamItem struct {
	Object    *string `json:"object"`
	Count     *int64  `json:"count"`
	ClassType string  `json:"classType"`
}

// javaParamRules maps a hot-parameter rules answer to core rules (their
// JSON is sentinel-golang's hotspot.Rule): grade to metricType, paramIdx
// to paramIndex, count to threshold (truncated, as Java's checker reads
// it), paramFlowItemList to specificItems (an integer value written as
// core matches it: "007" of classType int is "7"). limitApp (unless
// "default") and cluster mode, which hotspot rules have no field for, go
// into the rule's id. Rules that do not map are left out and reported.
func javaParamRules(body []byte) (params []core.HotParamRule, problems []error) {
	const kind = "paramFlow"
	bad := func(i int, format string, args ...any) {
		problems = append(problems, javaRuleProblem(kind, i, format, args...))
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(orNull(body), &raws); err != nil {
		return nil, []error{fmt.Errorf("%w: /getRules?type=%s: %v", wire.ErrMalformed, kind, err)}
	}
	for i, raw := range raws {
		j := javaParamFlowRule{Grade: 1, DurationInSec: 1, LimitApp: "default"}
		if err := json.Unmarshal(raw, &j); err != nil {
			bad(i, "%v", err)
			continue
		}
		r, err := javaParamRule(&j)
		if err != nil {
			bad(i, "%v", err)
			continue
		}
		params = append(params, r)
	}
	return params, problems
}

// javaParamRule maps one ParamFlowRule.
func javaParamRule(j *javaParamFlowRule) (core.HotParamRule, error) {
	r := core.HotParamRule{Resource: metriclog.LegalName(j.Resource), DurationInSec: j.DurationInSec,
		BurstCount: j.BurstCount, MaxQueueingTimeMs: j.MaxQueueingTimeMs}
	if j.Regex {
		if err := rulefile.JavaPattern(j.Resource); err != nil {
			return r, err
		}
		r.Resource, r.Pattern = j.Resource, j.Resource
	}
	switch {
	case j.ParamIdx == nil:
		return r, fmt.Errorf("paramIdx is missing")
	case *j.ParamIdx < math.MinInt32 || *j.ParamIdx > math.MaxInt32:
		return r, fmt.Errorf("paramIdx %d is not an int", *j.ParamIdx)
	case j.Grade != 0 && j.Grade != 1:
		return r, fmt.Errorf("grade %d is not 0 (threads) or 1 (QPS)", j.Grade)
	case j.ControlBehavior != 0 && j.ControlBehavior != 2:
		return r, fmt.Errorf("controlBehavior %d is not 0 (reject) or 2 (rate limiter)", j.ControlBehavior)
	case math.IsNaN(j.Count) || j.Count < 0 || j.Count >= math.MaxInt64:
		return r, fmt.Errorf("count %v is not a threshold", j.Count)
	}
	r.ParamIndex, r.MetricType, r.Threshold = int(*j.ParamIdx), core.HotParamMetric(j.Grade), int64(j.Count)
	if j.ControlBehavior == 2 {
		r.ControlBehavior = core.Throttling
	}
	for _, it := range j.ParamFlowItemList {
		if it.Object == nil || it.Count == nil {
			continue // Java skips an item without a value or a count
		}
		if r.SpecificItems == nil {
			r.SpecificItems = map[string]int64{}
		}
		r.SpecificItems[javaItemText(*it.Object, it.ClassType)] = *it.Count
	}
	var id []string
	if la := rulefile.JavaLimitApp(j.LimitApp); la != "" {
		id = append(id, "limitApp="+la)
	}
	if j.ClusterMode {
		id = append(id, "cluster")
	}
	if len(id) > 0 {
		r.ID = "java:" + strings.Join(id, ",")
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	if len(r.Resource) > wire.DefaultMaxNameBytes || len(r.ID) > wire.DefaultMaxNameBytes || len(r.SpecificItems) > wire.DefaultMaxItems {
		return r, fmt.Errorf("resource or limitApp over %d bytes, or over %d items", wire.DefaultMaxNameBytes, wire.DefaultMaxItems)
	}
	for v := range r.SpecificItems {
		if len(v) > wire.DefaultMaxNameBytes {
			return r, fmt.Errorf("an item's value over %d bytes", wire.DefaultMaxNameBytes)
		}
	}
	return r, nil
}

// javaItemText is a ParamFlowItem's value as core matches a parameter: an
// integer class's value in decimal, anything else as written.
func javaItemText(object, classType string) string {
	switch strings.TrimPrefix(classType, "java.lang.") {
	case "int", "Integer", "long", "Long", "short", "Short", "byte", "Byte":
		if n, err := strconv.ParseInt(strings.TrimSpace(object), 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	}
	return object
}

// javaRuleProblem is a rule of a /getRules answer that does not map.
func javaRuleProblem(kind string, i int, format string, args ...any) error {
	return fmt.Errorf("%w: /getRules?type=%s: rule %d: %s", wire.ErrInvalid, kind, i, fmt.Sprintf(format, args...))
}

// orNull reads an empty answer as no rules.
func orNull(b []byte) []byte {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("null")
	}
	return b
}
