package collector

import (
	"bytes"
	"strings"
	"testing"

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

// FuzzIngest: whatever a peer sends, decoding it and feeding the collector,
// then taking a snapshot and a detail, never panics.
func FuzzIngest(f *testing.F) {
	for _, line := range bytes.Split(sawtoothFixtureBytes(), []byte("\n")) {
		if len(line) > 0 {
			f.Add(line)
		}
	}
	f.Add([]byte(`{"v":1,"kind":"buckets","ts":5,"instance":"i","bucketMs":500,"items":[{"resource":"r","start":-500,"pass":9223372036854775807,"complete":1,"rtSum":1,"rtMin":1,"rtMax":1}]}`))
	f.Add([]byte(`{"v":1,"kind":"state","ts":-9,"instance":"i","resource":"r","strategy":2,"from":"HALF_OPEN","to":"OPEN","threshold":1e308,"retryTimeoutMs":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := New(Options{})
		dec := wire.NewDecoder(wire.Limits{})
		m, err := dec.Decode(data)
		if err != nil {
			c.Reject("fuzz", err)
		} else {
			c.Ingest("fuzz", m)
			c.Ingest("fuzz", m) // twice: dedupe
		}
		s := c.Publish()
		for _, r := range s.Rows {
			c.Detail(r.App, r.Resource, s.At-60000, s.At)
		}
	})
}
