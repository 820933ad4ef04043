package wire_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// An agent encodes one buckets message per bucket period into a reused
// buffer; NewBucketItem turns a closed core bucket into an item that
// passes the receivers' checks.
func ExampleAppendBuckets() {
	var m core.MetricBucket
	m.Reset()
	m.AddPass(3)
	m.AddComplete(12, false, false)
	m.AddComplete(402, true, true)

	msg := wire.Buckets{
		Header:   wire.Header{Ts: 1764460800512, Instance: "gateway-3"},
		BucketMs: 500,
		Items:    []wire.BucketItem{wire.NewBucketItem("GET:/api/user?id=1", 1764460800000, m.Snapshot(), false)},
	}
	var buf []byte
	buf = wire.AppendBuckets(buf[:0], &msg)
	fmt.Println(string(buf))
	// Output:
	// {"v":1,"kind":"buckets","ts":1764460800512,"instance":"gateway-3","bucketMs":500,"items":[{"resource":"GET:/api/user?id=1","start":1764460800000,"pass":3,"block":0,"complete":2,"error":1,"slow":1,"rtSum":414,"rtMin":12,"rtMax":402,"concurrency":0}]}
}

// A collector keeps one Decoder per connection and switches on the
// message type; errors are counted by class, and an unknown kind is
// skipped, never fatal.
func ExampleDecoder_Decode() {
	frames := []string{
		`{"v":1,"kind":"hello","ts":1764460800000,"instance":"gateway-3","app":"gateway","bucketMs":500}`,
		`{"v":1,"kind":"buckets","ts":1764460800512,"instance":"gateway-3","bucketMs":500,"items":[{"resource":"priceService:queryPrice","start":1764460800000,"pass":11,"block":2,"complete":11,"error":0,"slow":3,"rtSum":1480,"rtMin":12,"rtMax":402,"concurrency":4}]}`,
		`{"v":1,"kind":"state","ts":1764460801203,"instance":"gateway-3","resource":"priceService:queryPrice","strategy":0,"from":"CLOSED","to":"OPEN","threshold":0.5,"retryTimeoutMs":10000}`,
		`{"v":1,"kind":"traces","ts":1764460801300,"instance":"gateway-3"}`,
		`{"v":2,"kind":"buckets"}`,
		`{"v":1,"kind":"buckets","ts":1764460801512,"instance":"gateway-3","bucketMs":500,"items":[{"resource":"x","start":1764460801000,"complete":1,"rtMin":9,"rtMax":3,"rtSum":9}]}`,
	}
	var d wire.Decoder
	for _, f := range frames {
		msg, err := d.Decode([]byte(f))
		switch {
		case errors.Is(err, wire.ErrUnknownKind):
			fmt.Println("skipped:", err)
		case err != nil:
			fmt.Println("rejected:", err)
		default:
			switch m := msg.(type) {
			case *wire.Hello:
				fmt.Println("hello from", m.Instance, "of", m.App)
			case *wire.Buckets:
				for _, it := range m.Items {
					fmt.Printf("%s: %d passed, %d blocked\n", it.Resource, it.Pass, it.Block)
				}
			case *wire.State:
				fmt.Printf("%s: %v -> %v\n", m.Resource, m.From, m.To)
			}
		}
	}
	// Output:
	// hello from gateway-3 of gateway
	// priceService:queryPrice: 11 passed, 2 blocked
	// priceService:queryPrice: CLOSED -> OPEN
	// skipped: wire: kind: "traces"
	// rejected: wire: v: is 2, want 1
	// rejected: wire: buckets items[0].rtMin: 9 exceeds rtMax 3
}

// A replay source reads a fixture line by line; a bad line is reported with
// its position and reading goes on.
func ExampleReader() {
	fixture := `{"v":1,"kind":"meta","ts":1764460800000,"title":"one bad line"}
{"v":1,"kind":"hello","ts":1764460800000,"instance":"gateway-3","bucketMs":500}
{"v":1,"kind":"buckets","ts":1764460800512,"instance":"gateway-3","bucketMs":500,"items":[{"resource":"r","start":1764460800000,"pass":-1}]}
{"v":1,"kind":"bye","ts":1764460900000,"instance":"gateway-3","reason":"shutdown"}
`
	r := wire.NewReader(strings.NewReader(fixture), "demo.ndjson")
	for msg, err := range r.All() {
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(r.Pos(), msg.Kind())
	}
	fmt.Println("title:", r.Meta().Title)
	// Output:
	// demo.ndjson:1 meta
	// demo.ndjson:2 hello
	// demo.ndjson:3: wire: buckets items[0].pass: -1 is negative
	// demo.ndjson:4 bye
	// title: one bad line
}

// Equal rule sets have equal versions, whatever their order.
func ExampleRulesVersion() {
	a := core.BreakerRule{Resource: "a", Strategy: core.ErrorRatio, Threshold: 0.5, StatIntervalMs: 1000, RetryTimeoutMs: 5000}
	b := core.BreakerRule{Resource: "b", Strategy: core.ErrorCount, Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 5000}
	v1 := wire.RulesVersion([]core.BreakerRule{a, b}, nil)
	v2 := wire.RulesVersion([]core.BreakerRule{b, a}, nil)
	b.Threshold = 6
	v3 := wire.RulesVersion([]core.BreakerRule{a, b}, nil)
	fmt.Println(len(v1), v1 == v2, v1 == v3)
	// Output:
	// 12 true false
}

// A bucket item's hot values: an agent cuts each value's text to the
// wire's bound before sending it.
func ExampleCutHotValue() {
	long := strings.Repeat("客户", 30) // 180 bytes
	it := wire.BucketItem{Resource: "query-order", Start: 1764460800000, Metrics: core.Metrics{Pass: 40, Block: 160},
		Hot: []wire.HotItem{{Value: wire.CutHotValue("vip-123"), Pass: 30, Block: 160}, {Value: wire.CutHotValue(long), Pass: 10}}}
	b := &wire.Buckets{Header: wire.Header{Ts: 1764460800512, Instance: "order-1"}, BucketMs: 500, Items: []wire.BucketItem{it}}
	fmt.Println(wire.Validate(b, wire.Limits{}), len(it.Hot[1].Value))
	// Output: <nil> 126
}

// A collector gives the Decoders of all its connections one NamePool: the
// resource names a fleet repeats on every connection are then kept once.
func ExampleNamePool() {
	pool := wire.NewNamePool(0, 0)
	read := func(instance string) string {
		d := wire.NewDecoder(wire.Limits{})
		d.ShareNames(pool)
		m, err := d.Decode([]byte(`{"v":1,"kind":"buckets","ts":1764460800512,"instance":"` + instance +
			`","bucketMs":500,"items":[{"resource":"priceService:queryPrice","start":1764460800000,"pass":1}]}`))
		if err != nil {
			return err.Error()
		}
		return m.(*wire.Buckets).Items[0].Resource
	}
	fmt.Println(read("gateway-1"), read("gateway-2"))
	st := pool.Stats()
	fmt.Println(st.Names, "names,", st.Bytes, "bytes")
	// Output:
	// priceService:queryPrice priceService:queryPrice
	// 3 names, 41 bytes
}

// A goroutine that reads many connections gives their Decoders one
// Scratch: each decodes its buckets into it, so a message must be used
// before the next Decode of any of them, which then holds the next one.
func ExampleDecoder_ShareScratch() {
	var scratch wire.Scratch
	frame := func(instance string, pass int) []byte {
		return []byte(fmt.Sprintf(`{"v":1,"kind":"buckets","ts":1764460800512,"instance":%q,"bucketMs":500,`+
			`"items":[{"resource":"db","start":1764460800000,"pass":%d}]}`, instance, pass))
	}
	a, b := wire.NewDecoder(wire.Limits{}), wire.NewDecoder(wire.Limits{})
	a.ShareScratch(&scratch)
	b.ShareScratch(&scratch)
	ma, _ := a.Decode(frame("gateway-1", 3))
	fmt.Println(ma.(*wire.Buckets).Instance, ma.(*wire.Buckets).Items[0].Pass)
	mb, _ := b.Decode(frame("gateway-2", 5))
	fmt.Println(mb.(*wire.Buckets).Instance, mb.(*wire.Buckets).Items[0].Pass, ma == mb)
	// Output:
	// gateway-1 3
	// gateway-2 5 true
}
