package source

import (
	"strings"
	"testing"
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
