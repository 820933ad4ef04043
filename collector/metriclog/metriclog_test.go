package metriclog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

func TestParseFatAndThin(t *testing.T) {
	for _, tc := range []struct {
		name string
		fat  bool
		line string
		want Line
	}{
		{"sentinel-golang, all fields", true, "1764460800000|2025-11-30 00:00:00|GET:/api/user|12|3|11|2|25|0|4|1",
			Line{Timestamp: 1764460800000, Resource: "GET:/api/user", Pass: 12, Block: 3, Success: 11, Exception: 2, Rt: 25, Concurrency: 4, Classification: 1}},
		{"Java, occupied pass", true, "1764460801000|2025-11-30 08:00:01|com.foo.Svc:bar(java.lang.String)|5|0|5|0|7|2|1|0\r",
			Line{Timestamp: 1764460801000, Resource: "com.foo.Svc:bar(java.lang.String)", Pass: 5, Success: 5, Rt: 7, OccupiedPass: 2, Concurrency: 1}},
		{"older Java: seven counts missing", true, "1764460802000|2025-11-30 08:00:02|db|9|1|9|0|3",
			Line{Timestamp: 1764460802000, Resource: "db", Pass: 9, Block: 1, Success: 9, Rt: 3}},
		{"a '|' of the name written as '_'", true, "1764460803000|2025-11-30 08:00:03|GET:/api_v2|1|0|1|0|1|0|0|0",
			Line{Timestamp: 1764460803000, Resource: "GET:/api_v2", Pass: 1, Success: 1, Rt: 1}},
		{"extra fields ignored", true, "1764460804000|2025-11-30 08:00:04|x|1|0|1|0|1|0|0|0|99|zz",
			Line{Timestamp: 1764460804000, Resource: "x", Pass: 1, Success: 1, Rt: 1}},
		{"negative concurrency reads 0", true, "1764460805000|2025-11-30 08:00:05|x|1|0|0|0|0|0|-1|0",
			Line{Timestamp: 1764460805000, Resource: "x", Pass: 1}},
		{"thin, all fields", false, "1764460800000|GET:/api/user|12|3|11|2|25|0|4|2",
			Line{Timestamp: 1764460800000, Resource: "GET:/api/user", Pass: 12, Block: 3, Success: 11, Exception: 2, Rt: 25, Concurrency: 4, Classification: 2}},
		{"thin, seven fields", false, "1764460800000|风控检查|1|2|1|1|400",
			Line{Timestamp: 1764460800000, Resource: "风控检查", Pass: 1, Block: 2, Success: 1, Exception: 1, Rt: 400}},
		{"thin, cpu usage", false, "1764460800000|__cpu_usage__|1234|0|0|0|0|0|0|0",
			Line{Timestamp: 1764460800000, Resource: CPUUsage, Pass: 1234}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := ParseThin
			if tc.fat {
				parse = ParseFat
			}
			got, err := parse(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			checkItem(t, got.Item())
		})
	}
}

func TestParseRejects(t *testing.T) {
	for line, want := range map[string]string{
		"":                                    "empty line",
		"1764460800000|2025-11-30 00:00:00|x": "fields",
		"1764460800000|2025-11-30 00:00:00|x|1|2|3|4":                                   "want at least 8",
		"nope|2025-11-30 00:00:00|x|1|0|1|0|1":                                          "timestamp",
		"-5|2025-11-30 00:00:00|x|1|0|1|0|1":                                            "timestamp",
		"99999999999999999|2025-11-30 00:00:00|x|1|0|1|0|1":                             "timestamp",
		"1764460800000|2025-11-30 00:00:00||1|0|1|0|1":                                  "empty resource",
		"1764460800000|2025-11-30 00:00:00|x|-1|0|1|0|1":                                "passQps",
		"1764460800000|2025-11-30 00:00:00|x|1|0|1|0|1.5":                               "rt",
		"1764460800000|2025-11-30 00:00:00|x|1|0|1|0|1|z":                               "occupiedPassQps",
		"1764460800000|2025-11-30 00:00:00|x|1|0|1|0|1|0|z":                             "concurrency",
		"1764460800000|2025-11-30 00:00:00|x|1|0|1|0|1|0|0|z":                           "classification",
		"1764460800000|2025-11-30 00:00:00|x|1|0|9|0|9223372036854775807":               "overflows",
		"1764460800000|2025-11-30 00:00:00|" + strings.Repeat("r", 2000) + "|1|0|1|0|1": "exceeds 1024",
		// 1,000 bytes, 3,000 once each invalid byte is U+FFFD.
		"1764460800000|2025-11-30 00:00:00|" + strings.Repeat("\xffa", 500) + "|1|0|1|0|1": "exceeds 1024",
	} {
		_, err := ParseFat(line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: err %v, want %q", line, err, want)
			continue
		}
		if !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrTooLarge) {
			t.Errorf("%.60q: %v is neither malformed nor too large", line, err)
		}
		if name := want == "exceeds 1024"; errors.Is(err, wire.ErrNameTooLong) != name {
			t.Errorf("%.60q: %v: name too long %v, want %v", line, err, !name, name)
		}
	}
	if _, err := ParseThin("1764460800000|x|1|0|1|0"); err == nil {
		t.Error("a thin line with 6 fields parsed")
	}
}

func TestItemMapping(t *testing.T) {
	l := Line{Timestamp: 1764460800123, Resource: "r", Pass: 10, Block: 2, Success: 8, Exception: 9, Rt: 30, Concurrency: 3}
	it := l.Item()
	want := wire.BucketItem{Resource: "r", Start: 1764460800000, Metrics: core.Metrics{Pass: 10, Block: 2, Complete: 8, Error: 8, RtSum: 240, RtMin: 30, RtMax: 30, Concurrency: 3}}
	if !reflect.DeepEqual(it, want) {
		t.Fatalf("got  %+v\nwant %+v", it, want)
	}
	checkItem(t, it)
	// No completion: no response time, whatever rt says.
	l = Line{Timestamp: 1764460800000, Resource: "r", Block: 4, Rt: 12}
	if it := l.Item(); it.RtSum != 0 || it.RtMax != 0 {
		t.Fatalf("rt without completions: %+v", it)
	}
	if LegalName("GET:/a|b|c") != "GET:/a_b_c" {
		t.Fatal(LegalName("GET:/a|b|c"))
	}
	for _, n := range []string{TotalInbound, CPUUsage, SystemLoad} {
		if !Internal(n) {
			t.Errorf("%s is not internal", n)
		}
	}
	if Internal("__custom__") {
		t.Error("__custom__ is internal")
	}
}

// checkItem requires it to pass the wire's validation.
func checkItem(t *testing.T, it wire.BucketItem) {
	t.Helper()
	b := &wire.Buckets{Header: wire.Header{Ts: it.Start + BucketMs, Instance: "i"}, BucketMs: BucketMs, Items: []wire.BucketItem{it}}
	if err := wire.Validate(b, wire.Limits{}); err != nil {
		t.Fatalf("%+v: %v", it, err)
	}
}

// A metric log as sentinel-golang and Java Sentinel write it, with a few
// lines that are not: blank ones, pseudo resources, garbage.
const sampleLog = `1764460800000|2025-11-30 00:00:00|GET:/api_v2|10|1|9|1|20|0|2|1
1764460800000|2025-11-30 00:00:00|__total_inbound_traffic__|10|1|9|1|20|0|2|0
1764460800000|2025-11-30 00:00:00|db|5|0|5|0|3

this line is not a metric line
1764460801000|2025-11-30 00:00:01|GET:/api_v2|12|0|12|0|18|0|1|1
1764460801000|2025-11-30 00:00:01|__cpu_usage__|3100|0|0|0|0|0|0|0
1764460801000|2025-11-30 00:00:01|__system_load__|12000|0|0|0|0|0|0|0
1764460801000|2025-11-30 00:00:01|db|x|0|5|0|3
1764460800000|2025-11-30 00:00:00|late|1|0|1|0|1|0|0|0
`

func TestConvert(t *testing.T) {
	msgs, errs := split(Convert(strings.NewReader(sampleLog), "/var/log/csp/order-service-metrics.log.pid4242.2025-11-30.1", "", ""))
	if len(errs) != 2 {
		t.Fatalf("errors: %v", errs)
	}
	for i, want := range []string{"order-service-metrics.log.pid4242.2025-11-30.1:5: ", "order-service-metrics.log.pid4242.2025-11-30.1:9: "} {
		var le *wire.LineError
		if !errors.As(errs[i], &le) || !strings.HasSuffix(le.Pos.String(), strings.TrimSuffix(want, ": ")) ||
			!errors.Is(errs[i], wire.ErrMalformed) {
			t.Errorf("error %d: %v, want at %s", i, errs[i], want)
		}
	}
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	hello, ok := msgs[0].(*wire.Hello)
	if !ok || hello.App != "order-service" || hello.Instance != "order-service-pid4242" || hello.BucketMs != 1000 ||
		hello.Ts != 1764460800000 || hello.SDK != SDK {
		t.Fatalf("hello %+v", msgs[0])
	}
	first := msgs[1].(*wire.Buckets)
	second := msgs[2].(*wire.Buckets)
	if first.Ts != 1764460801000 || second.Ts != 1764460802000 {
		t.Fatalf("ts %d %d", first.Ts, second.Ts)
	}
	var names []string
	for _, it := range first.Items {
		names = append(names, it.Resource)
	}
	if strings.Join(names, ",") != "GET:/api_v2,db,late" {
		t.Fatalf("first second: %v", names)
	}
	if len(second.Items) != 1 || !reflect.DeepEqual(second.Items[0], wire.BucketItem{Resource: "GET:/api_v2", Start: 1764460801000,
		Metrics: core.Metrics{Pass: 12, Complete: 12, RtSum: 216, RtMin: 18, RtMax: 18, Concurrency: 1}}) {
		t.Fatalf("second second: %+v", second.Items)
	}
	for _, m := range msgs {
		if err := wire.Validate(m, wire.Limits{}); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
	}
	// The app and instance given win over the file name.
	msgs, _ = split(Convert(strings.NewReader(sampleLog), "x.log", "gw", "gw-1"))
	if h := msgs[0].(*wire.Hello); h.App != "gw" || h.Instance != "gw-1" {
		t.Fatalf("%+v", h)
	}
}

func TestConvertGzipLongLinesAndEmpty(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Repeat("y", MaxLineBytes+10) + "\n" + sampleLog))
	zw.Close()
	msgs, errs := split(Convert(&gz, "app-metrics.log.2025-11-30.gz", "", ""))
	if len(msgs) != 3 || len(errs) != 3 || !strings.Contains(errs[0].Error(), ":1: ") || !errors.Is(errs[0], wire.ErrTooLarge) {
		t.Fatalf("%d messages, errors %v", len(msgs), errs)
	}
	if !strings.Contains(errs[1].Error(), ":6: ") {
		t.Fatalf("line numbers after a long line: %v", errs[1])
	}
	if h := msgs[0].(*wire.Hello); h.App != "app" || h.Instance != "app" {
		t.Fatalf("%+v", h)
	}
	msgs, errs = split(Convert(strings.NewReader("\n\n"), "empty", "", ""))
	if msgs != nil || errs != nil {
		t.Fatalf("%v %v", msgs, errs)
	}
	msgs, errs = split(Convert(strings.NewReader("garbage\n"), "g", "", ""))
	if msgs != nil || len(errs) != 1 {
		t.Fatalf("%v %v", msgs, errs)
	}
}

func TestFileNamesAndDetect(t *testing.T) {
	for name, want := range map[string]string{
		"order-metrics.log.2025-11-30":               "order 0 2025-11-30",
		"/logs/csp/order-metrics.log.2025-11-30.3":   "order 0 2025-11-30",
		"com-foo-gw-metrics.log.pid77.2025-01-02.12": "com-foo-gw 77 2025-01-02",
		"-metrics.log.2025-11-30":                    " 0 2025-11-30",
		"order-metrics.log.2025-11-30.gz":            "order 0 2025-11-30",
	} {
		app, pid, date, ok := ParseFileName(name)
		if got := app + " " + strings.TrimSpace(itoa(pid)) + " " + date; !ok || got != want {
			t.Errorf("%s: %q %v, want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"order-metrics.log", "order-metrics.log.2025-11-30.idx", "fixture.ndjson", "metrics.log.2025-11-30"} {
		if _, _, _, ok := ParseFileName(name); ok {
			t.Errorf("%s parsed", name)
		}
	}
	if app, inst := Identify("weird.txt"); app != "sentinel" || inst != "sentinel" {
		t.Errorf("%s %s", app, inst)
	}
	ndjson := []byte(`{"v":1,"kind":"meta","ts":1}` + "\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(sampleLog))
	zw.Close()
	for _, tc := range []struct {
		name string
		head []byte
		want bool
	}{
		{"order-metrics.log.2025-11-30", nil, true},
		{"order-metrics.log.2025-11-30.idx", []byte(sampleLog), false},
		{"copy.log", []byte("\n" + sampleLog), true},
		{"copy.log.gz", gz.Bytes(), true},
		{"fixture.ndjson", ndjson, false},
		{"fixture.ndjson.gz", []byte{0x1f, 0x8b, 1, 2}, false},
		{"notes.txt", []byte("hello|world"), false},
		{"empty", nil, false},
	} {
		if got := Detect(tc.name, tc.head); got != tc.want {
			t.Errorf("Detect(%s) = %v", tc.name, got)
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestConvertFilesInWritingOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	line := func(sec int, res string) string {
		return itoa(1764460800000+sec*1000) + "|2025-11-30 00:00:0" + itoa(sec) + "|" + res + "|1|0|1|0|5|0|0|0\n"
	}
	paths := []string{
		write("gw-metrics.log.2025-11-30.2", line(4, "a")),
		write("gw-metrics.log.2025-12-01", line(5, "a")),
		write("gw-metrics.log.2025-11-30", line(0, "a")+"bad line\n"),
		write("gw-metrics.log.2025-11-30.1", line(2, "a")+line(3, "b")),
		filepath.Join(dir, "gw-metrics.log.2025-11-29.absent"),
	}
	sorted := append([]string(nil), paths...)
	SortFiles(sorted)
	var names []string
	for _, p := range sorted {
		names = append(names, filepath.Base(p))
	}
	if got := strings.Join(names, " "); got != "gw-metrics.log.2025-11-30 gw-metrics.log.2025-11-30.1 gw-metrics.log.2025-11-30.2 gw-metrics.log.2025-12-01 gw-metrics.log.2025-11-29.absent" {
		t.Fatalf("order: %s", got)
	}
	msgs, errs := split(ConvertFiles(paths, "", ""))
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "gw-metrics.log.2025-11-30:2: ") || !errors.Is(errs[1], os.ErrNotExist) {
		t.Fatalf("errors %v", errs)
	}
	if len(msgs) != 6 {
		t.Fatalf("%d messages", len(msgs))
	}
	if h := msgs[0].(*wire.Hello); h.App != "gw" || h.Instance != "gw" || h.Ts != 1764460800000 {
		t.Fatalf("hello %+v", h)
	}
	var starts []int64
	for _, m := range msgs[1:] {
		starts = append(starts, m.(*wire.Buckets).Items[0].Start)
	}
	if len(msgs[3].(*wire.Buckets).Items) != 1 || starts[0] != 1764460800000 || starts[4] != 1764460805000 {
		t.Fatalf("starts %v", starts)
	}
}

// split is a Result's messages and errors.
func split(r Result) ([]wire.Message, []error) { return r.Messages, r.Errors }

// TestConvertLongSilence: a line years after the others (a corrupt
// timestamp, or a log reused long after) tells the inference of at most
// idleSeconds silent seconds, not of every second in between: the gap
// used to move its own bound and fed billions of seconds (the fuzzer's
// workers stalled on it).
func TestConvertLongSilence(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(sampleLog), "\n")
	far := strings.Replace(lines[0], "1764", "9764", 1)
	if far == lines[0] {
		t.Fatal("the sample's first line has no timestamp to move")
	}
	base := len(Convert(strings.NewReader(sampleLog), "f", "", "").Messages)
	got := len(Convert(strings.NewReader(sampleLog+"\n"+far), "f", "", "").Messages)
	if got < base+1 || got > base+1+idleSeconds*2 {
		t.Fatalf("%d messages with the far line, %d without", got, base)
	}
}
