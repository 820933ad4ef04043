package rulefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	sgflow "github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/ext/datasource"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// FuzzParse: whatever the data and the format named, Parse never panics,
// and an error is one of its kinds. Rules that parse are valid and make a
// valid wire rules message; sentinel-golang rules re-encode and re-parse
// (named, and told) to the same rules, and sentinel-golang's own parser
// reads them too, field for field, as rules its IsValidRule passes.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(FormatAuto))
	}
	f.Add([]byte(`[{"resource":"a","threshold":1,"relationStrategy":0,"refResource":"b"}]`), uint8(FormatGoFlow))
	f.Add([]byte(`[{"RESOURCE":"a","strategy":2,"retryTimeoutMs":1,"statIntervalMs":1,"threshold":1,"semantics":"java"}]`), uint8(FormatAuto))
	f.Add([]byte(`[{"resource":"a","count":1,"timeWindow":1,"grade":2},null,{"resource":"b","regex":true}]`), uint8(FormatJavaDegrade))
	f.Add([]byte(`[{"resource":"a|b","count":1e300,"controlBehavior":3,"strategy":2,"refResource":"x"}]`), uint8(FormatAuto))
	f.Add([]byte(`[]`), uint8(FormatGoBreaker))
	f.Fuzz(func(t *testing.T, data []byte, named uint8) {
		rules, got, err := Parse(data, Format(named%5))
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrType) && !errors.Is(err, core.ErrInvalidRule) {
				t.Fatalf("an error of no kind: %v", err)
			}
			return
		}
		if got == FormatAuto || (rules.Breakers != nil) != (len(rules.Breakers) > 0) || (rules.Flows != nil) != (len(rules.Flows) > 0) {
			t.Fatalf("format %v, rules %+v", got, rules)
		}
		for i := range rules.Breakers {
			r := &rules.Breakers[i]
			java := r.Semantics == core.SemanticsJava || r.Semantics == core.SemanticsJava16
			if err := r.Validate(); err != nil || got.java() && !java {
				t.Fatalf("%+v: %v", r, err)
			}
		}
		for i := range rules.Flows {
			if err := rules.Flows[i].Validate(); err != nil {
				t.Fatalf("%+v: %v", rules.Flows[i], err)
			}
		}
		if len(rules.Breakers) <= wire.DefaultMaxItems && len(rules.Flows) <= wire.DefaultMaxItems {
			m := &wire.Rules{Header: wire.Header{Ts: 1764460800000, Instance: "i"}, Version: wire.RulesVersion(rules.Breakers, rules.Flows),
				Breakers: rules.Breakers, Flows: rules.Flows}
			if err := wire.Validate(m, wire.Limits{}); err != nil {
				t.Fatalf("%v\n%+v", err, rules)
			}
		}
		if got.java() {
			return
		}
		var enc []byte
		if got == FormatGoBreaker {
			enc, err = json.Marshal(rules.Breakers)
		} else {
			enc, err = json.Marshal(rules.Flows)
		}
		if err != nil {
			t.Fatal(err)
		}
		again, format, err := Parse(enc, got)
		if err != nil || format != got || !reflect.DeepEqual(again, rules) {
			t.Fatalf("re-parsed as %v: %v\n%+v\n%+v", format, err, again, rules)
		}
		if len(enc) > 4 {
			if told, format, err := Parse(enc, FormatAuto); err != nil || format != got || !reflect.DeepEqual(told, rules) {
				t.Fatalf("re-parsed, told %v: %v", format, err)
			}
		}
		sameAsSentinelGolang(t, data, got, rules)
	})
}

// sameAsSentinelGolang checks rules Parse read against what
// sentinel-golang's datasource parser reads of the same data. Data of
// white space only is no rules here; sentinel-golang reads no rules of
// empty data, and refuses white space.
func sameAsSentinelGolang(t *testing.T, data []byte, f Format, rules Rules) {
	if len(data) > 0 && len(bytes.TrimSpace(data)) == 0 {
		return
	}
	if f == FormatGoBreaker {
		v, err := datasource.CircuitBreakerRuleJsonArrayParser(data)
		sg, _ := v.([]*sgcb.Rule)
		if err != nil || len(sg) != len(rules.Breakers) {
			t.Fatalf("sentinel-golang: %d rules, %v; here %d", len(sg), err, len(rules.Breakers))
		}
		for i, r := range sg {
			if err := sgcb.IsValidRule(r); err != nil || r.Strategy > sgcb.ErrorCount {
				t.Fatalf("sentinel-golang refuses rule %d: %v", i, err)
			}
			sameFields(t, r, &rules.Breakers[i])
		}
		return
	}
	v, err := datasource.FlowRuleJsonArrayParser(data)
	sg, _ := v.([]*sgflow.Rule)
	if err != nil || len(sg) != len(rules.Flows) {
		t.Fatalf("sentinel-golang: %d rules, %v; here %d", len(sg), err, len(rules.Flows))
	}
	for i, r := range sg {
		if err := sgflow.IsValidRule(r); err != nil {
			t.Fatalf("sentinel-golang refuses rule %d: %v", i, err)
		}
		if r.RelationStrategy == sgflow.CurrentResource {
			r.RefResource = ""
		}
		sameFields(t, r, &rules.Flows[i])
	}
}
