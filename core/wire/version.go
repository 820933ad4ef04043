package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// RulesVersion returns the content hash that identifies a rule set, for
// Rules.Version: 12 hex digits of the SHA-256 of the rules' canonical JSON.
//
// Equal content gives an equal version: each rule is canonicalised (its
// JSON object with keys sorted, so the order of struct fields does not
// matter) and the rules of each list are hashed as a sorted multiset,
// because a rule set's order does not change what Sentinel decides (every
// rule is checked). A repeated rule counts twice, as Sentinel would run it
// twice. Defaults are not filled in: a warmUpColdFactor of 0 and of 3 are
// different content. Hot-parameter rules are hashed when there are any,
// so a rule set without them keeps the version it had before they existed.
func RulesVersion(breakers []core.BreakerRule, flows []core.FlowRule, params ...core.HotParamRule) string {
	h := sha256.New()
	h.Write([]byte("sentinel-top rules v1\n"))
	writeCanonical := func(section string, n int, rule func(i int) any) {
		lines := make([][]byte, 0, n)
		for i := 0; i < n; i++ {
			lines = append(lines, canonicalJSON(rule(i)))
		}
		slices.SortFunc(lines, bytes.Compare)
		h.Write([]byte(section))
		for _, l := range lines {
			h.Write(l)
			h.Write([]byte{'\n'})
		}
	}
	writeCanonical("breakers\n", len(breakers), func(i int) any { return &breakers[i] })
	writeCanonical("flows\n", len(flows), func(i int) any { return &flows[i] })
	if len(params) > 0 {
		writeCanonical("params\n", len(params), func(i int) any { return &params[i] })
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// canonicalJSON encodes v with sorted keys and numbers kept as written.
// It cannot fail for rule types; a value that does not encode (a NaN
// threshold) is hashed by its Go syntax instead, still deterministic.
func canonicalJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprintf("!%#v", v))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return raw
	}
	out, err := json.Marshal(tree) // maps marshal with sorted keys
	if err != nil {
		return raw
	}
	return out
}
