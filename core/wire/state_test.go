package wire

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// field is one key and its value, as written.
type field struct{ key, value string }

// stateFields lists m's fields as AppendState writes them, in its order.
func stateFields(m *State) []field {
	str := func(s string) string { return string(appendString(nil, s)) }
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	flt := func(v float64) string { b, _ := appendFloat(nil, v, ""); return string(b) }
	fs := []field{{"v", "1"}, {"kind", `"state"`}, {"ts", num(m.Ts)}, {"instance", str(m.Instance)},
		{"resource", str(m.Resource)}, {"strategy", num(int64(m.Strategy))},
		{"from", str(m.From.String())}, {"to", str(m.To.String())}}
	if m.RuleID != "" {
		fs = append(fs, field{"ruleId", str(m.RuleID)})
	}
	if s := m.Snapshot; s != nil {
		fs = append(fs, field{"snapshot", object([]field{{"total", num(s.Total)}, {"slow", num(s.Slow)},
			{"error", num(s.Error)}, {"value", flt(s.Value)}})})
	}
	if p := m.Probe; p != nil {
		fs = append(fs, field{"probe", object([]field{{"rtMs", num(p.RtMs)}, {"error", strconv.FormatBool(p.Error)}})})
	}
	fs = append(fs, field{"threshold", flt(m.Threshold)}, field{"retryTimeoutMs", num(m.RetryTimeoutMs)})
	if m.Inferred {
		fs = append(fs, field{"inferred", "true"})
	}
	return fs
}

func object(fs []field) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(appendString(nil, f.key)) + ":" + f.value)
	}
	b.WriteByte('}')
	return b.String()
}

// stateValues are values put in place of a field's: other types, nulls,
// numbers every reader must get right or hand over, breaker states
// spelled otherwise, names at and over the limit.
var stateValues = []string{"null", "0", "-0", "1", "2", "3", "-1", "0.0", "1.5", "1e2", "-1e-400", "1e400",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "123456789012345678901234567890",
	"4294967295", "4294967296", "253402300799999", "253402300800000", "0.60000000000000001", "1E-7",
	"true", "false", `""`, `"x"`, `"OPEN"`, `"CLOSED"`, `"HALF_OPEN"`, `"open"`, `"\u004fPEN"`, `"OPEN\u0000"`,
	`"\ud800"`, "{}", "[]", `{"total":1}`, `{"rtMs":5,"error":true}`, `{"ERROR":true,"rtms":1}`,
	`{"value":1e400}`, `{"total":1,"total":2}`, `{"x":[[{}]],"value":0.5}`, `{"error":1}`, `[1]`,
	strconv.Quote(strings.Repeat("n", 1024)), strconv.Quote(strings.Repeat("n", 1025)),
	`"` + strings.Repeat(`\u00e9`, 512) + `"`, `"` + strings.Repeat(`\u00e9`, 513) + `"`}

// stateKeys are keys added or put in place of one: every field, some in
// another case (ſ and K fold to s and k), and unknown ones.
var stateKeys = []string{"v", "kind", "ts", "instance", "resource", "strategy", "from", "to", "ruleId", "snapshot",
	"probe", "threshold", "retryTimeoutMs", "inferred", "RESOURCE", "Strategy", "FROM", "tO", "ruleid",
	"SNAPSHOT", "Probe", "THRESHOLD", "retrytimeoutms", "Inferred", "reſource", "ſtrategy", "\u212aind", "TS",
	"items", "bucketMs", "dropped", "extra", "total", "rtMs", ""}

// genStateFrame writes m's fields with some of: keys shuffled, in another
// case, escaped; whitespace; unknown, replaced, repeated or dropped
// fields; and returns whether the frame should stay on the scanner's path
// (nothing in it is left to encoding/json).
func genStateFrame(r *rand.Rand, m *State) (frame []byte, scanner bool) {
	fs := stateFields(m)
	scanner = len(m.Resource) <= DefaultMaxNameBytes && len(m.RuleID) <= DefaultMaxNameBytes
	if r.IntN(3) == 0 {
		r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	}
	for n := r.IntN(4); n > 0 && len(fs) > 0; n-- {
		k := r.IntN(len(fs))
		switch r.IntN(7) {
		case 0: // another case, as encoding/json matches it
			fs[k].key = strings.ToUpper(fs[k].key)
		case 1: // the first letter in upper case
			if fs[k].key != "" {
				fs[k].key = strings.ToUpper(fs[k].key[:1]) + fs[k].key[1:]
			}
		case 2: // an unknown field
			fs = append(fs, field{"x" + stateKeys[r.IntN(len(stateKeys))], stateValues[r.IntN(len(stateValues))]})
		case 3: // another value
			fs[k].value = stateValues[r.IntN(len(stateValues))]
			scanner = false
		case 4: // a field dropped
			fs = append(fs[:k], fs[k+1:]...)
			scanner = false
		case 5: // another key
			fs[k].key = stateKeys[r.IntN(len(stateKeys))]
			scanner = false
		default: // a field given twice
			fs = append(fs, fs[k])
			scanner = false
		}
	}
	var b strings.Builder
	ws := func() {
		if r.IntN(8) == 0 {
			b.WriteString(" \n\t\r"[:1+r.IntN(4)])
		}
	}
	ws()
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			ws()
			b.WriteByte(',')
		}
		ws()
		key := string(appendString(nil, f.key))
		if r.IntN(10) == 0 && len(f.key) > 0 {
			key = `"\u00` + strconv.FormatInt(int64(f.key[0]), 16) + f.key[1:] + `"`
		}
		b.WriteString(key)
		ws()
		b.WriteByte(':')
		ws()
		b.WriteString(f.value)
	}
	ws()
	b.WriteByte('}')
	ws()
	return []byte(b.String()), scanner
}

// stateMutations are the bytes put into damaged state frames.
var stateMutations = []string{`"OPEN"`, `"from":`, `"to":"CLOSED"`, `"snapshot":{}`, `"probe":null`, "1e400", "true",
	"-", "0", `\u0041`, `"`, `\`, ",", ":", "{", "}", "[", "]", " ", "null", "\x01", "é"}

// TestStateAgreesWithGeneral holds the scanner's reading of state
// messages to encoding/json's (the general Decoder hands every state
// message to it) on generated frames of every shape, valid and damaged:
// the same values, or the same error to the text, every time. Frames with
// nothing to hand over must not be.
func TestStateAgreesWithGeneral(t *testing.T) {
	g := newGen(21)
	r := g.r
	var fast Decoder
	general := Decoder{general: true}
	probe := Decoder{lim: Limits{}.withDefaults(), ready: true}
	var ok, failed, scanned, handed int
	n := racetest.Cases(12000)
	for range n {
		m := g.state()
		if r.IntN(20) == 0 {
			m.Resource = strings.Repeat("r", DefaultMaxNameBytes+r.IntN(2))
		}
		if r.IntN(30) == 0 {
			m.Ts = MaxTimeMs + int64(r.IntN(2))
		}
		frame, scanner := genStateFrame(r, m)
		if r.IntN(3) == 0 {
			frame = mutateWith(r, frame, stateMutations)
			scanner = false
		}
		if err := decodeAlike(t, &fast, &general, frame); err != nil {
			failed++
		} else {
			ok++
			got, _ := fast.Decode(frame)
			if _, isState := got.(*State); !isState {
				t.Fatalf("decoded %T from %q", got, frame)
			}
		}
		_, fallback, _ := probe.decodeFast(frame, false)
		if scanner && fallback {
			t.Fatalf("handed to encoding/json: %q", frame)
		}
		if fallback {
			handed++
		} else {
			scanned++
		}
	}
	t.Logf("%d frames accepted, %d rejected, %d read by the scanner, %d handed over", ok, failed, scanned, handed)
	if ok < n/4 || failed < n/4 || scanned < n/2 || handed < n/12 {
		t.Fatalf("%d frames accepted, %d rejected, %d read by the scanner, %d handed over: want many of each", ok, failed, scanned, handed)
	}
}

// TestStateDecoded: a state message's values as the scanner reads them,
// whatever the order of its fields, and each message its own.
func TestStateDecoded(t *testing.T) {
	var d Decoder
	frame := `{"probe":{"error":true,"rtMs":412},"snapshot":{"value":0.6,"ERROR":1,"slow":3,"total":5},"to":"OPEN",` +
		`"from":"HALF_OPEN","x":[{"to":"CLOSED"}],"strategy":2,"ruleId":"b\u00e9","Resource":"r\"1","inferred":true,` +
		`"threshold":5e-1,"retryTimeoutMs":10000,"kind":"state","instance":"gw","v":1,"ts":7}`
	m, err := d.Decode([]byte(frame))
	if err != nil {
		t.Fatal(err)
	}
	want := State{Header: Header{Ts: 7, Instance: "gw"}, Resource: `r"1`, Strategy: core.ErrorCount, From: core.HalfOpen, To: core.Open, RuleID: "bé",
		Snapshot: &Snapshot{Total: 5, Slow: 3, Error: 1, Value: 0.6}, Probe: &Probe{RtMs: 412, Error: true},
		Threshold: 0.5, RetryTimeoutMs: 10000, Inferred: true}
	got := m.(*State)
	if b1, _ := json.Marshal(got); string(b1) != string(must(json.Marshal(&want))) || *got.Snapshot != *want.Snapshot || *got.Probe != *want.Probe {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	again, _ := d.Decode([]byte(`{"v":1,"kind":"state","ts":8,"instance":"gw","resource":"s","from":"CLOSED","to":"OPEN"}`))
	if got.Ts != 7 || got.Resource != `r"1` || got.Snapshot.Total != 5 || again.(*State).Snapshot != nil {
		t.Fatalf("the next Decode changed the first message: %+v", got)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
