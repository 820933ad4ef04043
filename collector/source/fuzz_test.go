package source

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// FuzzParseTargets: any --targets value gives targets or an error, never a
// panic, and every target it accepts is a ws:// or wss:// URL.
func FuzzParseTargets(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8720", "ws://h:1", "wss://h:443/x", "a:1,b:2,,a:1", "http://h:80", ":8720",
		"[::1]:8720", "ws://[::1]:1/p?q=1", "h:0", "ws://u:p@h:1", "\x1b[2J:1", "@", "h:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if strings.Contains(spec, "@") {
			return // file references read the disk
		}
		targets, err := ParseTargets(spec)
		if err != nil {
			return
		}
		for _, tg := range targets {
			if !strings.HasPrefix(tg.URL, "ws://") && !strings.HasPrefix(tg.URL, "wss://") && !strings.HasPrefix(tg.URL, "sentinel://") {
				t.Fatalf("%q gave %q", spec, tg.URL)
			}
		}
	})
}

// FuzzPromAnswer: any answer of a Prometheus server, read as a range
// query's is and taken as counters, state-change counters and Java's
// gauges alike, gives messages that validate, transitions marked
// inferred, and never a panic.
func FuzzPromAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"app":"a","host":"h","pid":"1","resource":"r","result":"pass","from_state":"Closed","to_state":"Open","type":"passQps"},"values":[[0,"0"],[1,"5"],[2,"3"],[3,"9"]]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"resource":"r","from":"HALF_OPEN","to":"CLOSED"},"values":[[1,"1e300"],[2,"NaN"],[3,"-1"]]}]}}`,
		`{"status":"error","errorType":"timeout","error":"query timed out"}`,
		`{"data":{"result":[{"metric":{},"values":[[1]]}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := NewPrometheus(PromOptions{URL: "http://127.0.0.1:9", Step: time.Second, MaxSeries: 64, MaxPoints: 4096})
		if err != nil {
			t.Fatal(err)
		}
		w := p.conv.begin(0, 10_000)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		_ = decodeAnswer(dec, func(dec *json.Decoder) error {
			return p.matrix(dec, "fuzz", func(s *promSeries) error {
				id := goInstance(s.Metric)
				w.counter(id, s, fieldPass)
				w.gauge(id, s, fieldError)
				w.transitions(id, s, s.Metric["from_state"], s.Metric["to_state"])
				return nil
			})
		})
		msgs, _, _ := p.conv.finish(w, wire.Limits{})
		for _, m := range msgs {
			if err := wire.Validate(m, wire.Limits{}); err != nil {
				t.Fatalf("an invalid message written: %v", err)
			}
			if st, ok := m.(*wire.State); ok && !st.Inferred {
				t.Fatalf("a transition not marked inferred: %+v", st)
			}
		}
	})
}
