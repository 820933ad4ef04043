package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const baseItem = `{"resource":"r","start":1000,"pass":3,"block":1,"complete":2,"error":1,"slow":1,` +
	`"rtSum":30,"rtMin":10,"rtMax":20,"concurrency":1,"rtHist":[0,0,0,1,1,0,0,0,0,0,0,0,0,0]}`

const baseBuckets = `{"v":1,"kind":"buckets","ts":1000,"instance":"gw-1","bucketMs":500,"items":[` + baseItem + `]}`

// rep returns the base buckets frame with old replaced by new, failing
// loudly when old is not there (a table typo).
func rep(old, new string) string {
	if !strings.Contains(baseBuckets, old) {
		panic("rep: " + old + " not in base frame")
	}
	return strings.Replace(baseBuckets, old, new, 1)
}

// paramsFrame is a rules message whose one hot-parameter rule is rule.
func paramsFrame(rule string) string {
	return `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","flows":[],"params":[` + rule + `]}`
}

type vcase struct {
	name  string
	frame string
	class error  // nil: accepted
	field string // expected DecodeError.Field
}

// hotFrame is the base buckets frame whose item carries hot as "hot".
func hotFrame(hot string) string { return rep(`"concurrency":1`, `"concurrency":1,"hot":`+hot) }

// hotValues lists n hot items of distinct values, then extra.
func hotValues(n int, extra string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		fmt.Fprintf(&b, `{"param":0,"value":"v%d","pass":%d,"block":1},`, i, i)
	}
	b.WriteString(extra)
	return b.String() + "]"
}

var bucketCases = []vcase{
	{"valid", baseBuckets, nil, ""},
	{"hot", hotFrame(`[{"param":0,"value":"vip-123","pass":40,"block":160},{"param":1,"value":"","pass":0,"block":0},{"param":0,"value":"(other)","pass":7,"block":0}]`), nil, ""},
	{"hot null", hotFrame(`null`), nil, ""},
	{"hot empty", hotFrame(`[]`), nil, ""},
	{"hot null element", hotFrame(`[null,{"PARAM":-1,"Value":"x"}]`), nil, ""},
	{"hot unknown field", hotFrame(`[{"value":"x","future":[1,{"a":2}]}]`), nil, ""},
	{"hot 8 values and other", hotFrame(hotValues(8, `{"value":"(other)","pass":100}`)), nil, ""},
	{"hot 8 values", hotFrame(hotValues(7, `{"value":"v7"}`)), nil, ""},
	{"hot 9 values", hotFrame(hotValues(8, `{"value":"v8"}`)), ErrTooLarge, "items[0].hot"},
	{"hot 10 items", hotFrame(hotValues(9, `{"value":"(other)"}`)), ErrTooLarge, "items[0].hot"},
	{"hot 40 items", hotFrame(hotValues(39, `{"value":"(other)"}`)), ErrTooLarge, "items[0].hot"},
	{"hot a value after 8 and other", hotFrame(hotValues(8, `{"value":"(other)"},{"value":"late"}`)), ErrTooLarge, "items[0].hot"},
	{"hot other twice", hotFrame(`[{"value":"(other)"},{"value":"a"},{"value":"(other)"}]`), ErrInvalid, "items[0].hot[2].value"},
	{"hot value 128 bytes", hotFrame(`[{"value":"` + strings.Repeat("é", 64) + `"}]`), nil, ""},
	{"hot value 129 bytes", hotFrame(`[{"value":"` + strings.Repeat("v", 129) + `"}]`), ErrNameTooLong, "items[0].hot[0].value"},
	{"hot value 129 bytes escaped", hotFrame(`[{"value":"é` + strings.Repeat("v", 127) + `"}]`), ErrNameTooLong, "items[0].hot[0].value"},
	{"hot negative pass", hotFrame(`[{"value":"a","pass":-1}]`), ErrInvalid, "items[0].hot[0].pass"},
	{"hot negative block", hotFrame(`[{"value":"a","block":-2}]`), ErrInvalid, "items[0].hot[0].block"},
	{"hot value number", hotFrame(`[{"value":42}]`), ErrMalformed, "items[0].hot[0].value"},
	{"hot param float", hotFrame(`[{"value":"a","param":0.5}]`), ErrMalformed, "items[0].hot[0].param"},
	{"hot pass string", hotFrame(`[{"value":"a","pass":"1"}]`), ErrMalformed, "items[0].hot[0].pass"},
	{"hot object", hotFrame(`{"value":"a"}`), ErrMalformed, "items[0].hot"},
	{"hot element string", hotFrame(`["a"]`), ErrMalformed, "items[0].hot[0]"},
	{"hot repeated value", hotFrame(`[{"value":"a","VALUE":"b"}]`), ErrMalformed, "items[0].hot[0].value"},
	{"hot repeated", hotFrame(`[],"hot":[]`), ErrMalformed, "items[0].hot"},
	{"hot truncated", hotFrame(`[{"value":"a"`), ErrMalformed, ""},
	{"spaces around", " \t\r\n" + baseBuckets + "\n ", nil, ""},
	{"unknown top field ignored", rep(`"bucketMs"`, `"future":{"a":[1,2,{"b":null}],"c":"\u00e9"},"bucketMs"`), nil, ""},
	{"unknown item field ignored", rep(`"pass"`, `"p99":[1.5e3,true,false,null],"pass"`), nil, ""},
	{"unknown field repeated ignored", rep(`"bucketMs"`, `"x":1,"x":2,"bucketMs"`), nil, ""},
	{"field names match case-insensitively", rep(`"pass"`, `"PASS"`), nil, ""},
	{"escaped key", rep(`"pass"`, `"p\u0061ss"`), nil, ""},
	{"null count is zero", rep(`"block":1`, `"block":null`), nil, ""},
	{"null rtHist is absent", rep(`[0,0,0,1,1,0,0,0,0,0,0,0,0,0]`, `null`), nil, ""},
	{"no rtHist", rep(`,"rtHist":[0,0,0,1,1,0,0,0,0,0,0,0,0,0]`, ``), nil, ""},
	{"heartbeat", rep(`[`+baseItem+`]`, `[]`), nil, ""},
	{"items null", rep(`[`+baseItem+`]`, `null`), nil, ""},
	{"items missing", rep(`,"items":[`+baseItem+`]`, ``), nil, ""},
	{"dropped", rep(`"bucketMs"`, `"dropped":7,"bucketMs"`), nil, ""},
	{"ts zero", rep(`"ts":1000`, `"ts":0`), nil, ""},
	{"minus zero", rep(`"block":1`, `"block":-0`), nil, ""},
	{"resource 1024 bytes", rep(`"resource":"r"`, `"resource":"`+strings.Repeat("é", 512)+`"`), nil, ""},
	{"lone surrogate becomes U+FFFD", rep(`"resource":"r"`, `"resource":"\ud800x"`), nil, ""},

	{"v 2", rep(`"v":1`, `"v":2`), ErrVersion, "v"},
	{"v string", rep(`"v":1`, `"v":"1"`), ErrVersion, "v"},
	{"v 1.0", rep(`"v":1`, `"v":1.0`), ErrVersion, "v"},
	{"v object", rep(`"v":1`, `"v":{"major":1}`), ErrVersion, "v"},
	{"v missing", rep(`"v":1,`, ``), ErrMalformed, "v"},
	{"v null", rep(`"v":1`, `"v":null`), ErrMalformed, "v"},
	{"version before types", strings.Replace(rep(`"v":1`, `"v":2`), `"ts":1000`, `"ts":"x"`, 1), ErrVersion, "v"},
	{"repeated common field before version", rep(`"v":1`, `"v":2,"ts":"x"`), ErrMalformed, "ts"},
	{"kind missing", rep(`"kind":"buckets",`, ``), ErrMalformed, "kind"},
	{"kind number", rep(`"kind":"buckets"`, `"kind":5`), ErrMalformed, "kind"},
	{"kind other case", rep(`"kind":"buckets"`, `"kind":"Buckets"`), ErrUnknownKind, "kind"},
	{"kind unknown", rep(`"kind":"buckets"`, `"kind":"histogram"`), ErrUnknownKind, "kind"},
	{"unknown kind wins over bad fields", rep(`"kind":"buckets"`, `"kind":"histogram","items":5`), ErrUnknownKind, "kind"},
	{"ts missing", rep(`"ts":1000,`, ``), ErrMalformed, "ts"},
	{"ts null", rep(`"ts":1000`, `"ts":null`), ErrMalformed, "ts"},
	{"ts string", rep(`"ts":1000`, `"ts":"1000"`), ErrMalformed, "ts"},
	{"ts fraction", rep(`"ts":1000`, `"ts":1000.5`), ErrMalformed, "ts"},
	{"ts exponent", rep(`"ts":1000`, `"ts":1e3`), ErrMalformed, "ts"},
	{"ts negative", rep(`"ts":1000`, `"ts":-1`), ErrInvalid, "ts"},
	{"ts after year 9999", rep(`"ts":1000`, `"ts":253402300800000`), ErrInvalid, "ts"},
	{"instance missing", rep(`"instance":"gw-1",`, ``), ErrMalformed, "instance"},
	{"instance empty", rep(`"instance":"gw-1"`, `"instance":""`), ErrInvalid, "instance"},
	{"instance number", rep(`"instance":"gw-1"`, `"instance":1`), ErrMalformed, "instance"},
	{"instance too long", rep(`"instance":"gw-1"`, `"instance":"`+strings.Repeat("i", 1025)+`"`), ErrNameTooLong, "instance"},
	{"bucketMs zero", rep(`"bucketMs":500`, `"bucketMs":0`), ErrInvalid, "bucketMs"},
	{"bucketMs missing", rep(`"bucketMs":500,`, ``), ErrInvalid, "bucketMs"},
	{"bucketMs negative", rep(`"bucketMs":500`, `"bucketMs":-500`), ErrInvalid, "bucketMs"},
	{"bucketMs over an hour", rep(`"bucketMs":500`, `"bucketMs":3600001`), ErrInvalid, "bucketMs"},
	{"dropped negative", rep(`"bucketMs"`, `"dropped":-1,"bucketMs"`), ErrInvalid, "dropped"},
	{"items object", rep(`[`+baseItem+`]`, `{}`), ErrMalformed, "items"},
	{"item not object", rep(`[`+baseItem+`]`, `[1]`), ErrMalformed, "items[0]"},
	{"null item", rep(`[`+baseItem+`]`, `[null]`), ErrInvalid, "items[0].resource"},
	{"resource missing", rep(`"resource":"r",`, ``), ErrInvalid, "items[0].resource"},
	{"resource empty", rep(`"resource":"r"`, `"resource":""`), ErrInvalid, "items[0].resource"},
	{"resource number", rep(`"resource":"r"`, `"resource":7`), ErrMalformed, "items[0].resource"},
	{"resource too long", rep(`"resource":"r"`, `"resource":"`+strings.Repeat("r", 1025)+`"`), ErrNameTooLong, "items[0].resource"},
	{"resource too long after unescaping", rep(`"resource":"r"`, `"resource":"`+strings.Repeat(`\u00e9`, 513)+`"`), ErrNameTooLong, "items[0].resource"},
	{"start not a multiple", rep(`"start":1000`, `"start":1001`), ErrInvalid, "items[0].start"},
	{"start negative", rep(`"start":1000`, `"start":-500`), ErrInvalid, "items[0].start"},
	{"pass negative", rep(`"pass":3`, `"pass":-1`), ErrInvalid, "items[0].pass"},
	{"block negative", rep(`"block":1`, `"block":-1`), ErrInvalid, "items[0].block"},
	{"concurrency negative", rep(`"concurrency":1`, `"concurrency":-1`), ErrInvalid, "items[0].concurrency"},
	{"pass overflows int64", rep(`"pass":3`, `"pass":9223372036854775808`), ErrMalformed, "items[0].pass"},
	{"pass huge", rep(`"pass":3`, `"pass":123456789012345678901234567890`), ErrMalformed, "items[0].pass"},
	{"pass max int64", rep(`"pass":3`, `"pass":9223372036854775807`), nil, ""},
	{"pass bool", rep(`"pass":3`, `"pass":true`), ErrMalformed, "items[0].pass"},
	{"error over complete", rep(`"error":1`, `"error":3`), ErrInvalid, "items[0].error"},
	{"slow over complete", rep(`"slow":1`, `"slow":3`), ErrInvalid, "items[0].slow"},
	{"rtMin over rtMax", rep(`"rtMin":10`, `"rtMin":21`), ErrInvalid, "items[0].rtMin"},
	{"rtMax over rtSum", rep(`"rtMax":20`, `"rtMax":31`), ErrInvalid, "items[0].rtMax"},
	{"rt without completions", rep(`"complete":2,"error":1,"slow":1`, `"complete":0,"error":0,"slow":0`), ErrInvalid, "items[0].rtSum"},
	{"rtHist 13 counts", rep(`[0,0,0,1,1,0,0,0,0,0,0,0,0,0]`, `[0,0,0,1,1,0,0,0,0,0,0,0,0]`), ErrInvalid, "items[0].rtHist"},
	{"rtHist 15 counts", rep(`[0,0,0,1,1,0,0,0,0,0,0,0,0,0]`, `[0,0,0,1,1,0,0,0,0,0,0,0,0,0,0]`), ErrInvalid, "items[0].rtHist"},
	{"rtHist empty", rep(`[0,0,0,1,1,0,0,0,0,0,0,0,0,0]`, `[]`), ErrInvalid, "items[0].rtHist"},
	{"rtHist negative", rep(`[0,0,0,1,1,0,0,0,0,0,0,0,0,0]`, `[0,0,0,-1,1,0,0,0,0,0,0,0,0,0]`), ErrInvalid, "items[0].rtHist[3]"},
	{"rtHist string", rep(`[0,0,0,1,1,0,0,0,0,0,0,0,0,0]`, `"0,0"`), ErrMalformed, "items[0].rtHist"},
	{"rtHist float", rep(`[0,0,0,1,1,0,0,0,0,0,0,0,0,0]`, `[0,0,0,1.5,1,0,0,0,0,0,0,0,0,0]`), ErrMalformed, "items[0].rtHist[3]"},
	{"repeated ts", rep(`"ts":1000`, `"ts":1000,"ts":1000`), ErrMalformed, "ts"},
	{"repeated v", rep(`"v":1`, `"v":1,"v":1`), ErrMalformed, "v"},
	{"repeated items", rep(`"bucketMs"`, `"items":[],"bucketMs"`), ErrMalformed, "items"},
	{"repeated item field", rep(`"pass":3`, `"pass":3,"pass":3`), ErrMalformed, "items[0].pass"},
	{"repeated by case folding", rep(`"pass":3`, `"pass":3,"Pass":3`), ErrMalformed, "items[0].pass"},
	{"repeated by unicode folding", rep(`"slow":1`, `"slow":1,"\u017flow":1`), ErrMalformed, "items[0].slow"},
	{"invalid UTF-8 in resource", rep(`"resource":"r"`, "\"resource\":\"r\xff\""), ErrMalformed, ""},
	{"invalid UTF-8 in unknown field", rep(`"bucketMs"`, "\"x\":\"\xc3\",\"bucketMs\""), ErrMalformed, ""},
	{"raw control character in string", rep(`"resource":"r"`, "\"resource\":\"r\x01\""), ErrMalformed, ""},
	{"bad escape", rep(`"resource":"r"`, `"resource":"\x41"`), ErrMalformed, ""},
	{"short unicode escape", rep(`"resource":"r"`, `"resource":"\u41"`), ErrMalformed, ""},
	{"leading zero", rep(`"pass":3`, `"pass":03`), ErrMalformed, ""},
	{"plus sign", rep(`"pass":3`, `"pass":+3`), ErrMalformed, ""},
	{"bare minus", rep(`"pass":3`, `"pass":-`), ErrMalformed, ""},
	{"NaN", rep(`"pass":3`, `"pass":NaN`), ErrMalformed, ""},
	{"trailing comma", rep(`"concurrency":1,`, `"concurrency":1,}`), ErrMalformed, ""},
	{"single quotes", rep(`"resource":"r"`, `'resource':'r'`), ErrMalformed, ""},
	{"trailing garbage", baseBuckets + "x", ErrMalformed, ""},
	{"two objects", baseBuckets + baseBuckets, ErrMalformed, ""},
	{"byte order mark", "\ufeff" + baseBuckets, ErrMalformed, ""},
	{"array", `[` + baseBuckets + `]`, ErrMalformed, ""},
	{"string", `"buckets"`, ErrMalformed, ""},
	{"null", `null`, ErrMalformed, ""},
	{"empty", ``, ErrMalformed, ""},
	{"whitespace", "  \n", ErrMalformed, ""},
	{"empty object", `{}`, ErrMalformed, "v"},
	{"depth 10000 is fine", rep(`"bucketMs"`, `"x":`+strings.Repeat("[", 9999)+strings.Repeat("]", 9999)+`,"bucketMs"`), nil, ""},
	{"depth 10001 is not", rep(`"bucketMs"`, `"x":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`,"bucketMs"`), ErrMalformed, ""},
	{"deep in an item", rep(`"pass"`, `"x":`+strings.Repeat(`{"a":`, 9998)+`1`+strings.Repeat("}", 9998)+`,"pass"`), ErrMalformed, ""},
}

var otherCases = []vcase{
	{"hello", `{"v":1,"kind":"hello","ts":1,"instance":"gw","app":"gateway","host":"10.0.0.13","pid":4242,"startedAt":0,"sdk":"x/0.1","bucketMs":500,"new":[1]}`, nil, ""},
	{"hello minimal", `{"v":1,"kind":"hello","ts":1,"instance":"gw","bucketMs":500}`, nil, ""},
	{"hello bucketMs missing", `{"v":1,"kind":"hello","ts":1,"instance":"gw"}`, ErrInvalid, "bucketMs"},
	{"hello pid negative", `{"v":1,"kind":"hello","ts":1,"instance":"gw","pid":-1,"bucketMs":500}`, ErrInvalid, "pid"},
	{"hello startedAt negative", `{"v":1,"kind":"hello","ts":1,"instance":"gw","startedAt":-1,"bucketMs":500}`, ErrInvalid, "startedAt"},
	{"hello app too long", `{"v":1,"kind":"hello","ts":1,"instance":"gw","app":"` + strings.Repeat("a", 1025) + `","bucketMs":500}`, ErrNameTooLong, "app"},
	{"hello instance missing", `{"v":1,"kind":"hello","ts":1,"bucketMs":500}`, ErrMalformed, "instance"},
	{"hello pid string", `{"v":1,"kind":"hello","ts":1,"instance":"gw","pid":"1","bucketMs":500}`, ErrMalformed, "pid"},
	{"hello repeated app", `{"v":1,"kind":"hello","ts":1,"instance":"gw","app":"a","APP":"b","bucketMs":500}`, ErrMalformed, "app"},
	{"hello repeated items is unknown to hello", `{"v":1,"kind":"hello","ts":1,"instance":"gw","items":1,"items":2,"bucketMs":500}`, nil, ""},
	{"hello v 2", `{"v":2,"kind":"hello","ts":1,"instance":"gw","bucketMs":500}`, ErrVersion, "v"},
	{"rules", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"abc","breakers":[{"resource":"r","strategy":1,"threshold":0.5,"statIntervalMs":1000,"retryTimeoutMs":5000}],"flows":[{"resource":"f","threshold":10}]}`, nil, ""},
	{"rules empty", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"abc","breakers":[],"flows":null}`, nil, ""},
	{"rules version missing", `{"v":1,"kind":"rules","ts":1,"instance":"gw","breakers":[]}`, ErrInvalid, "version"},
	{"rules bad strategy", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","breakers":[{"resource":"r","strategy":3,"statIntervalMs":1000,"retryTimeoutMs":5000}]}`, ErrInvalid, "breakers[0]"},
	{"rules ratio over 1", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","breakers":[{"resource":"r","strategy":0,"threshold":1.5,"statIntervalMs":1000,"retryTimeoutMs":5000}]}`, ErrInvalid, "breakers[0]"},
	{"rules negative unsigned", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","breakers":[{"resource":"r","statIntervalMs":-1,"retryTimeoutMs":5000}]}`, ErrMalformed, "breakers.statIntervalMs"},
	{"rules flow warm-up without period", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","flows":[{"resource":"f","tokenCalculateStrategy":1,"threshold":10}]}`, ErrInvalid, "flows[0]"},
	{"rules repeated rule field", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","breakers":[{"resource":"r","threshold":0.1,"threshold":0.2,"statIntervalMs":1000,"retryTimeoutMs":5000}]}`, ErrMalformed, "breakers[0].threshold"},
	{"rules breakers object", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","breakers":{}}`, ErrMalformed, "breakers"},
	{"rules limitApp", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","breakers":[{"resource":"r","statIntervalMs":1000,"retryTimeoutMs":5000,"limitApp":"default"}],"flows":[{"resource":"f","threshold":10,"limitApp":"order-service"}]}`, nil, ""},
	{"rules limitApp too long", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","flows":[{"resource":"f","threshold":10,"limitApp":"` + strings.Repeat("a", 1025) + `"}]}`, ErrNameTooLong, "flows[0].limitApp"},
	{"rules breaker limitApp not UTF-8", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","breakers":[{"resource":"r","statIntervalMs":1000,"retryTimeoutMs":5000,"limitApp":"\udc00"}],"flows":[{"resource":"f","threshold":10,"limitApp":1}]}`, ErrMalformed, "flows.limitApp"},
	{"rules params", paramsFrame(`{"resource":"q","metricType":1,"controlBehavior":0,"paramIndex":0,"threshold":200,"durationInSec":1,"burstCount":0,"paramsMaxCapacity":1000,"specificItems":{"vip-123":1000,"":5}}`), nil, ""},
	{"rules params key and throttling", paramsFrame(`{"resource":"q","metricType":1,"controlBehavior":1,"paramIndex":-1,"paramKey":"uid","threshold":5,"durationInSec":2,"maxQueueingTimeMs":100,"specificItems":null}`), nil, ""},
	{"rules params null", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","params":null}`, nil, ""},
	{"rules params object", `{"v":1,"kind":"rules","ts":1,"instance":"gw","version":"a","params":{}}`, ErrMalformed, "params"},
	{"rules params QPS without duration", paramsFrame(`{"resource":"q","metricType":1,"threshold":5}`), ErrInvalid, "params[0]"},
	{"rules params negative threshold", paramsFrame(`{"resource":"q","threshold":-1}`), ErrInvalid, "params[0]"},
	{"rules params metric 2", paramsFrame(`{"resource":"q","metricType":2,"threshold":1}`), ErrInvalid, "params[0]"},
	{"rules params index and key", paramsFrame(`{"resource":"q","paramIndex":1,"paramKey":"k","threshold":1}`), ErrInvalid, "params[0]"},
	{"rules params resource empty", paramsFrame(`{"resource":"","threshold":1}`), ErrInvalid, "params[0].resource"},
	{"rules params key too long", paramsFrame(`{"resource":"q","paramKey":"` + strings.Repeat("k", 1025) + `"}`), ErrNameTooLong, "params[0].paramKey"},
	{"rules params item too long", paramsFrame(`{"resource":"q","specificItems":{"` + strings.Repeat("v", 1025) + `":1}}`), ErrNameTooLong, "params[0].specificItems"},
	{"rules params item threshold string", paramsFrame(`{"resource":"q","specificItems":{"v":"1"}}`), ErrMalformed, "params.specificItems"},
	{"rules params item repeated", paramsFrame(`{"resource":"q","specificItems":{"v":1,"w":2,"v":3}}`), ErrMalformed, `params[0].specificItems["v"]`},
	{"rules params item case differs", paramsFrame(`{"resource":"q","specificItems":{"v":1,"V":3}}`), nil, ""},
	{"rules params repeated field", paramsFrame(`{"resource":"q","threshold":1,"Threshold":2}`), ErrMalformed, "params[0].threshold"},
	{"rules params paramIndex float", paramsFrame(`{"resource":"q","paramIndex":0.5}`), ErrMalformed, "params.paramIndex"},
	{"state", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","strategy":0,"from":"CLOSED","to":"OPEN","snapshot":{"total":5,"slow":3,"error":0,"value":0.6},"threshold":0.5,"retryTimeoutMs":10000}`, nil, ""},
	{"state probe", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","strategy":2,"from":"HALF_OPEN","to":"CLOSED","ruleId":"b2","probe":{"rtMs":412,"error":false},"threshold":5,"retryTimeoutMs":10000}`, nil, ""},
	{"state from unknown", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"OPENED","to":"OPEN"}`, ErrInvalid, "from"},
	{"state to missing", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"OPEN"}`, ErrMalformed, "to"},
	{"state from equals to", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"OPEN","to":"OPEN"}`, ErrInvalid, "to"},
	{"state strategy 3", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","strategy":3,"from":"OPEN","to":"HALF_OPEN"}`, ErrInvalid, "strategy"},
	{"state resource missing", `{"v":1,"kind":"state","ts":1,"instance":"gw","from":"OPEN","to":"HALF_OPEN"}`, ErrInvalid, "resource"},
	{"state negative value", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"CLOSED","to":"OPEN","snapshot":{"value":-0.5}}`, ErrInvalid, "snapshot.value"},
	{"state negative total", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"CLOSED","to":"OPEN","snapshot":{"total":-1}}`, ErrInvalid, "snapshot.total"},
	{"state negative probe", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"HALF_OPEN","to":"OPEN","probe":{"rtMs":-1}}`, ErrInvalid, "probe.rtMs"},
	{"state negative threshold", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"CLOSED","to":"OPEN","threshold":-1}`, ErrInvalid, "threshold"},
	{"state retry over uint32", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"CLOSED","to":"OPEN","retryTimeoutMs":4294967296}`, ErrInvalid, "retryTimeoutMs"},
	{"state probe error not bool", `{"v":1,"kind":"state","ts":1,"instance":"gw","resource":"r","from":"HALF_OPEN","to":"OPEN","probe":{"error":"yes"}}`, ErrMalformed, "probe.error"},
	{"meta", `{"v":1,"kind":"meta","ts":1,"title":"t","description":"d","recordedBy":"r","expect":["flapping"]}`, nil, ""},
	{"meta with instance", `{"v":1,"kind":"meta","ts":1,"instance":"gw"}`, nil, ""},
	{"meta ts missing", `{"v":1,"kind":"meta","title":"t"}`, ErrMalformed, "ts"},
	{"bye", `{"v":1,"kind":"bye","ts":1,"instance":"gw","reason":"shutdown"}`, nil, ""},
	{"bye no reason", `{"v":1,"kind":"bye","ts":1,"instance":"gw"}`, nil, ""},
	{"bye instance null", `{"v":1,"kind":"bye","ts":1,"instance":null}`, ErrMalformed, "instance"},
}

func TestValidation(t *testing.T) {
	for _, tc := range append(append([]vcase{}, bucketCases...), otherCases...) {
		t.Run(tc.name, func(t *testing.T) {
			var d Decoder
			m, err := decodeBoth(t, &d, []byte(tc.frame))
			if tc.class == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if m == nil {
					t.Fatal("nil message")
				}
				return
			}
			if !errors.Is(err, tc.class) {
				t.Fatalf("err %v, want class %v", err, tc.class)
			}
			// A name or a hot value too long is too large as well; a
			// list or a frame too large is no name.
			if name := tc.class == ErrNameTooLong; errors.Is(err, ErrNameTooLong) != name || name && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err %v: name too long %v, too large %v", err, errors.Is(err, ErrNameTooLong), errors.Is(err, ErrTooLarge))
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err %T is not a *DecodeError", err)
			}
			if de.Field != tc.field {
				t.Fatalf("field %q, want %q (%v)", de.Field, tc.field, err)
			}
			if tc.field != "" && !strings.Contains(err.Error(), tc.field+": ") {
				t.Fatalf("message %q does not name %q", err, tc.field)
			}
		})
	}
}

func TestDecodedValues(t *testing.T) {
	var d Decoder
	m, err := d.Decode([]byte(rep(`"pass":3`, `"PASS":7`)))
	if err != nil {
		t.Fatal(err)
	}
	it := m.(*Buckets).Items[0]
	if it.Pass != 7 || it.Block != 1 || !it.HasHist || it.Hist[4] != 1 {
		t.Fatalf("%+v", it)
	}
	m, err = d.Decode([]byte(rep(`"resource":"r"`, `"resource":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\udd25\ud800\udc00x\udc00"`)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.(*Buckets).Items[0].Resource, "a\"b\\c/d\b\f\n\r\té🔥\U00010000x\uFFFD"; got != want {
		t.Fatalf("resource %q, want %q", got, want)
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct{ frame, want string }{
		{rep(`"rtMin":10`, `"rtMin":21`), "wire: buckets items[0].rtMin: 21 exceeds rtMax 20"},
		{rep(`"v":1`, `"v":2`), "wire: v: is 2, want 1"},
		{rep(`"kind":"buckets"`, `"kind":"histogram"`), `wire: kind: "histogram"`},
		{rep(`"ts":1000`, `"ts":"1000"`), "wire: buckets ts: must be an integer, not a string"},
		{rep(`"rtMin":10`, `"rtMin":10,"rtMin":10`), "wire: buckets items[0].rtMin: given more than once"},
		{baseBuckets[:40], "wire: unexpected end of JSON input"},
		{rep(`"pass":3`, `"pass":3x`), `wire: invalid character 'x' after object key:value pair at offset 113`},
	} {
		_, err := Decode([]byte(tc.frame))
		if err == nil || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
	}
}

func TestTruncated(t *testing.T) {
	var d Decoder
	for n := 0; n < len(baseBuckets); n++ {
		_, err := decodeBoth(t, &d, []byte(baseBuckets[:n]))
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
}

func TestLimits(t *testing.T) {
	eleven := strings.Repeat(baseItem+",", 10) + baseItem
	frame := []byte(rep(`[`+baseItem+`]`, `[`+eleven+`]`))
	d := NewDecoder(Limits{MaxItems: 11})
	if _, err := decodeBoth(t, d, frame); err != nil {
		t.Fatalf("11 items, limit 11: %v", err)
	}
	d = NewDecoder(Limits{MaxItems: 10})
	_, err := decodeBoth(t, d, frame)
	if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrNameTooLong) || !strings.Contains(err.Error(), "items: more than 10 items") {
		t.Fatalf("11 items, limit 10: %v", err)
	}
	d = NewDecoder(Limits{MaxFrameBytes: len(frame) - 1})
	if _, err := decodeBoth(t, d, frame); !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrNameTooLong) {
		t.Fatalf("frame over limit: %v", err)
	}
	d = NewDecoder(Limits{MaxNameBytes: 3})
	if _, err := decodeBoth(t, d, []byte(rep(`"resource":"r"`, `"resource":"abcd"`))); !errors.Is(err, ErrNameTooLong) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("name over limit: %v", err)
	}
	// A frame just over the default 1 MiB, valid otherwise.
	pad := strings.Repeat(" ", DefaultMaxFrameBytes-len(baseBuckets)+1)
	var dd Decoder
	if _, err := dd.Decode([]byte(baseBuckets + pad)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge frame: %v", err)
	}
	if _, err := dd.Decode([]byte(baseBuckets + pad[1:])); err != nil {
		t.Fatalf("frame at the limit: %v", err)
	}
	// Hot-parameter rules and their specific items count against MaxItems.
	three := paramsFrame(`{"resource":"a"},{"resource":"b"},{"resource":"c"}`)
	items := paramsFrame(`{"resource":"a","specificItems":{"x":1,"y":2,"z":3}}`)
	for _, frame := range []string{three, items} {
		if _, err := decodeBoth(t, NewDecoder(Limits{MaxItems: 3}), []byte(frame)); err != nil {
			t.Fatalf("3 of a limit of 3: %v", err)
		}
		if _, err := decodeBoth(t, NewDecoder(Limits{MaxItems: 2}), []byte(frame)); !errors.Is(err, ErrTooLarge) ||
			!strings.Contains(err.Error(), "3 ") {
			t.Fatalf("3 of a limit of 2: %v", err)
		}
	}
	// 10,001 items in a frame under 1 MiB.
	many := `{"v":1,"kind":"buckets","ts":1,"instance":"i","bucketMs":1,"items":[` +
		strings.Repeat(`{"resource":"r","start":1},`, 10000) + `{"resource":"r","start":1}]}`
	if _, err := decodeBoth(t, &dd, []byte(many)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("10001 items: %v", err)
	}
}

func TestValidateBuiltMessages(t *testing.T) {
	ok := &Buckets{Header: Header{Ts: 1, Instance: "i"}, BucketMs: 500, Items: []BucketItem{{Resource: "r", Start: 500}}}
	if err := Validate(ok, Limits{}); err != nil {
		t.Fatal(err)
	}
	bad := ok.Clone()
	bad.Items[0].Resource = "bad\xff"
	if err := Validate(bad, Limits{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("invalid UTF-8 name: %v", err)
	}
	bad = ok.Clone()
	bad.Items[0].Hot = []HotItem{{Value: "bad\xff"}}
	if err := Validate(bad, Limits{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("invalid UTF-8 hot value: %v", err)
	}
	bad.Items[0].Hot[0].Value = CutHotValue("bad\xff" + strings.Repeat("é", 200))
	if err := Validate(bad, Limits{}); err != nil || len(bad.Items[0].Hot[0].Value) > MaxHotValueBytes {
		t.Fatalf("a cut value %q: %v", bad.Items[0].Hot[0].Value, err)
	}
	bad = ok.Clone()
	bad.Items[0].Pass = -1
	if err := Validate(bad, Limits{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative pass: %v", err)
	}
}
