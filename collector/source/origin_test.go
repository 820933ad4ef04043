package source

import (
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
)

// TestOriginSlowCounts: of the hellos' sdks, an agent's and the Prometheus
// sentinel-top family's count slow calls; Java Sentinel's, the other
// Prometheus families' and a metric log's do not.
func TestOriginSlowCounts(t *testing.T) {
	for sdk, want := range map[string]bool{
		"sentinel-top/0.1":             false,
		PromSDK + "/" + promFamilyTop:  false,
		PromSDK + "/" + promFamilyGo:   true,
		PromSDK + "/" + promFamilyJava: true,
		"java-sentinel/1.8.9":          true,
		metriclog.SDK:                  true,
	} {
		if got := OriginOf(sdk).SlowUnknown; got != want {
			t.Errorf("OriginOf(%q).SlowUnknown = %v, want %v", sdk, got, want)
		}
	}
	if o := OriginOf(PromSDK + "/" + promFamilyTop); !o.StatesUnknown || !o.Polled {
		t.Errorf("the sentinel-top family's origin %+v: states must stay unknown, polled", o)
	}
}
