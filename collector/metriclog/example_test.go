package metriclog_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Converting a metric log into a wire recording that --replay (or
// collector.NewReplay) reads; bad lines come back with their file:line.
func ExampleConvert() {
	const log = `1764460800000|2025-11-30 00:00:00|GET:/member/info|10|2|10|1|35|0|3|1
1764460800000|2025-11-30 00:00:00|__total_inbound_traffic__|10|2|10|1|35|0|3|0
not a metric line
1764460801000|2025-11-30 00:00:01|GET:/member/info|12|0|12|0|30|0|2|1
`
	name := "order-metrics.log.2025-11-30"
	fmt.Println(metriclog.Detect(name, nil))
	r := metriclog.Convert(strings.NewReader(log), name, "", "")
	for _, err := range r.Errors {
		fmt.Println("bad line:", err)
	}
	var ndjson bytes.Buffer
	w := wire.NewWriter(&ndjson)
	for _, m := range r.Messages {
		w.Write(m)
	}
	w.Flush()
	fmt.Print(ndjson.String())
	// Output:
	// true
	// bad line: order-metrics.log.2025-11-30:3: malformed message: 1 fields, want at least 8 (timestamp|date time|resource|passQps|blockQps|successQps|exceptionQps|rt|...)
	// {"v":1,"kind":"hello","ts":1764460800000,"instance":"order","app":"order","host":"","pid":0,"startedAt":0,"sdk":"sentinel-metric-log","bucketMs":1000}
	// {"v":1,"kind":"buckets","ts":1764460801000,"instance":"order","bucketMs":1000,"items":[{"resource":"GET:/member/info","start":1764460800000,"pass":10,"block":2,"complete":10,"error":1,"slow":0,"rtSum":350,"rtMin":35,"rtMax":35,"concurrency":3}]}
	// {"v":1,"kind":"buckets","ts":1764460802000,"instance":"order","bucketMs":1000,"items":[{"resource":"GET:/member/info","start":1764460801000,"pass":12,"block":0,"complete":12,"error":0,"slow":0,"rtSum":360,"rtMin":30,"rtMax":30,"concurrency":2}]}
}
