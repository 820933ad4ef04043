package metriclog

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

func TestGroupOneInstancePerProcess(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"host-a", "host-b", "x/host-a"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	at := func(p string) string { return filepath.Join(dir, p) }
	describe := func(srcs []Source) string {
		var out []string
		for _, s := range srcs {
			var names []string
			for _, p := range s.Paths {
				rel, _ := filepath.Rel(dir, p)
				names = append(names, rel)
			}
			out = append(out, s.App+"/"+s.Instance+"="+strings.Join(names, "+"))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name  string
		specs []string
		want  string
	}{
		{"rotations of one process are one instance",
			[]string{at("host-a/price-metrics.log.2026-11-30.1"), at("host-a/price-metrics.log.2026-11-30")},
			"price/price=host-a/price-metrics.log.2026-11-30.1+host-a/price-metrics.log.2026-11-30"},
		{"with and without a pid: two processes",
			[]string{at("host-a/price-metrics.log.2026-11-30"), at("host-a/price-metrics.log.pid4242.2026-11-30"), at("host-a/price-metrics.log.pid4242.2026-11-30.1")},
			"price/price=host-a/price-metrics.log.2026-11-30 price/price-pid4242=host-a/price-metrics.log.pid4242.2026-11-30+host-a/price-metrics.log.pid4242.2026-11-30.1"},
		{"one name from two hosts' folders",
			[]string{at("host-a/price-metrics.log.2026-11-30"), at("host-b/price-metrics.log.2026-11-30")},
			"price/price@host-a=host-a/price-metrics.log.2026-11-30 price/price@host-b=host-b/price-metrics.log.2026-11-30"},
		{"folders of one name: their whole path",
			[]string{at("host-a/price-metrics.log.2026-11-30"), at("x/host-a/price-metrics.log.2026-11-30")},
			"price/price@" + at("host-a") + "=host-a/price-metrics.log.2026-11-30 price/price@" + at("x/host-a") + "=x/host-a/price-metrics.log.2026-11-30"},
		{"named per file",
			[]string{at("host-a/price-metrics.log.2026-11-30") + "@a-1", at("host-b/price-metrics.log.2026-11-30") + "@b-1", at("host-a/price-metrics.log.2026-11-30.1")},
			"price/a-1=host-a/price-metrics.log.2026-11-30+host-a/price-metrics.log.2026-11-30.1 price/b-1=host-b/price-metrics.log.2026-11-30"},
		{"a file named twice is read once",
			[]string{at("host-a/price-metrics.log.2026-11-30"), at("host-a/../host-a/price-metrics.log.2026-11-30")},
			"price/price=host-a/price-metrics.log.2026-11-30"},
		{"a log under another name is its own process",
			[]string{at("host-a/copy.log"), at("host-b/copy.log")},
			"sentinel/sentinel@host-a=host-a/copy.log sentinel/sentinel@host-b=host-b/copy.log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Group(tc.specs)
			if err != nil {
				t.Fatal(err)
			}
			if d := describe(got); d != tc.want {
				t.Errorf("got  %s\nwant %s", d, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		specs []string
		want  string
	}{
		{[]string{at("host-a/price-metrics.log.2026-11-30@a"), at("host-a/price-metrics.log.2026-11-30.1@b")}, `named "b", but another file of the same process is named "a"`},
		{[]string{at("host-a/price-metrics.log.2026-11-30@a"), at("host-b/price-metrics.log.2026-11-30@a")}, `different processes with one instance name "a"`},
	} {
		if _, err := Group(tc.specs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.specs, err, tc.want)
		}
	}
	// A path with an '@' of its own stays a path when the file exists.
	odd := at("host-a/price@2-metrics.log.2026-11-30")
	os.WriteFile(odd, nil, 0o600)
	if p, n := SplitSpec(odd); p != odd || n != "" {
		t.Errorf("%s %s", p, n)
	}
	if p, n := SplitSpec("logs@2/x.log"); p != "logs@2/x.log" || n != "" {
		t.Errorf("%s %s", p, n)
	}
	if log, ok := IndexOf("/l/price-metrics.log.pid7.2026-11-30.idx"); !ok || log != "/l/price-metrics.log.pid7.2026-11-30" {
		t.Errorf("%s %v", log, ok)
	}
	if _, ok := IndexOf("notes.idx"); ok {
		t.Error("notes.idx is an index")
	}
}

// Java writes "|" as "_": "price|cache" and "price_cache" are two lines
// of one second named price_cache. They are summed, and the name is
// reported once per instance, with the seconds it happened in.
func TestConvertSumsLinesOfOneName(t *testing.T) {
	const log = `1796083478000|2026-12-01 00:04:38|price_cache|6|0|5|0|62|0|1|0
1796083478000|2026-12-01 00:04:38|price_cache|9|1|8|2|24|0|2|0
1796083478000|2026-12-01 00:04:38|queryPrice|29|0|27|0|28|0|0|0
1796083479000|2026-12-01 00:04:39|price_cache|4|0|4|0|10|0|0|0
1796083479000|2026-12-01 00:04:39|price_cache|0|0|0|0|0|0|0|0
1796083480000|2026-12-01 00:04:40|price_cache|3|0|3|0|12|0|0|0
`
	r := Convert(strings.NewReader(log), "price-service-metrics.log.2026-12-01", "", "")
	if len(r.Errors) != 0 || len(r.Messages) != 4 {
		t.Fatalf("%d messages, errors %v", len(r.Messages), r.Errors)
	}
	first := r.Messages[1].(*wire.Buckets).Items
	if len(first) != 2 || !reflect.DeepEqual(first[0], wire.BucketItem{Resource: "price_cache", Start: 1796083478000, Metrics: core.Metrics{Pass: 15, Block: 1, Complete: 13, Error: 2, RtSum: 62*5 + 24*8, RtMin: 24, RtMax: 62, Concurrency: 3}}) {
		t.Fatalf("%+v", first)
	}
	if second := r.Messages[2].(*wire.Buckets).Items; len(second) != 1 || second[0].Pass != 4 || second[0].RtMin != 10 {
		t.Fatalf("%+v", second)
	}
	if len(r.Collisions) != 1 || r.Collisions[0] != (Collision{Instance: "price-service", Resource: "price_cache", First: 1796083478000, Seconds: 2}) {
		t.Fatalf("%+v", r.Collisions)
	}
	if s := r.Collisions[0].String(); !strings.Contains(s, `"price_cache"`) || !strings.Contains(s, "2 seconds") {
		t.Error(s)
	}
	for _, m := range r.Messages {
		if err := wire.Validate(m, wire.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
}
