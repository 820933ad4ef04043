package collector

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
)

// TestJavaMetricLogsOfSeveralProcesses replays the metric logs of three
// Java processes as they lie on disk: two on host-a, one with its pid in
// the file name and one without, and one on host-b under the same name as
// host-a's. Each is an instance of its own, and every instance's totals
// are the sums of its file's lines: lines of one second under one name
// (price|cache and price_cache) are summed, never dropped as duplicates.
func TestJavaMetricLogsOfSeveralProcesses(t *testing.T) {
	const dir = "testdata/java"
	files := map[string]string{
		"price-service@host-a":   "host-a/price-service-metrics.log.2026-12-01",
		"price-service-pid28225": "host-a/price-service-metrics.log.pid28225.2026-12-01",
		"price-service@host-b":   "host-b/price-service-metrics.log.2026-12-01",
	}
	var specs []string
	for _, f := range []string{files["price-service@host-a"], files["price-service-pid28225"], files["price-service@host-b"]} {
		specs = append(specs, filepath.Join(dir, f))
	}
	srcs, err := metriclog.Group(specs)
	if err != nil {
		t.Fatal(err)
	}
	r := metriclog.ConvertSources(srcs)
	if len(r.Errors) != 0 {
		t.Fatal(r.Errors)
	}
	rp, err := newReplayMessages("logs", r.Messages, r.Errors, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rp.Collector()
	for _, x := range r.Collisions {
		c.Notice(Notice{Kind: NoticeNameCollision, Instance: x.Instance, Resource: x.Resource, At: x.First, Count: int64(x.Seconds)})
	}
	if err := rp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := c.Publish()
	if got := javaTotals(c, "price-service", "queryPrice"); got != "none" {
		t.Errorf("an instance of the merged processes: %s", got)
	}
	if _, _, dups := c.Counters(); dups != 0 {
		t.Errorf("%d duplicates dropped", dups)
	}
	for instance, file := range files {
		for res, want := range javaLineSums(t, filepath.Join(dir, file)) {
			if got := javaTotals(c, instance, res); got != want {
				t.Errorf("%s %s: %s, the lines sum to %s", instance, res, got, want)
			}
		}
	}
	notices := warningsOf[Notice](snap.Warnings)
	if len(notices) != 3 {
		t.Fatalf("notices %+v", notices)
	}
	for _, n := range notices {
		if n.Kind != NoticeNameCollision || n.Resource != "price_cache" || n.Count < 15 {
			t.Errorf("%+v", n)
		}
		if w := strings.Join(warningTexts(snap.Warnings), "\n"); !strings.Contains(w, WarningText(n)) {
			t.Errorf("warnings do not say %q", WarningText(n))
		}
	}
}

// javaLineSums sums a metric log's lines per resource, as javaTotals
// prints them.
func javaLineSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type sum struct{ pass, block, complete, errs int64 }
	sums := map[string]*sum{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, err := metriclog.ParseFat(sc.Text())
		if err != nil {
			t.Fatal(err)
		}
		if metriclog.Internal(l.Resource) {
			continue
		}
		s := sums[l.Resource]
		if s == nil {
			s = &sum{}
			sums[l.Resource] = s
		}
		s.pass, s.block, s.complete, s.errs = s.pass+l.Pass, s.block+l.Block, s.complete+l.Success, s.errs+l.Exception
	}
	out := map[string]string{}
	for res, s := range sums {
		out[res] = fmt.Sprintf("pass %d block %d complete %d error %d slow 0", s.pass, s.block, s.complete, s.errs)
	}
	return out
}
