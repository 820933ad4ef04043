package source

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/internal/hostiletest"
)

// endlessHeaders is a target that answers every upgrade with 101 and then
// header lines until the connection breaks. It reports the bytes it sent.
func endlessHeaders(t *testing.T) (Target, *atomic.Int64) {
	t.Helper()
	addr, sent := hostiletest.EndlessHeaders(t)
	return Target{Name: addr, URL: "ws://" + addr + DefaultStreamPath}, sent
}

// TestDialBoundsTheUpgradeResponse: a target that answers the upgrade with
// endless headers is cut off after 64 KiB, at once rather than at the end
// of the 10 s handshake, and the collector's memory stays where it was.
func TestDialBoundsTheUpgradeResponse(t *testing.T) {
	target, sent := endlessHeaders(t)
	c := collector.New(collector.Options{})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	began := time.Now()
	dialPeer(t, c, target, DialOptions{Seed: 1})
	var st feed.TargetStatus
	eventually(t, "the target down", func() error {
		if st = firstTarget(c.Publish()); collector.ProblemText(st.Problem) == "" {
			return fmt.Errorf("target %+v", st)
		}
		return nil
	})
	took := time.Since(began)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("cut off after %v with %q; the target sent %d KiB; the collector allocated %d KiB meanwhile",
		took.Round(time.Millisecond), collector.ProblemText(st.Problem), sent.Load()>>10, allocated>>10)
	if collector.ProblemText(st.Problem) != "upgrade response over 64 KiB" {
		t.Fatalf("problem %q", collector.ProblemText(st.Problem))
	}
	if took > 5*time.Second {
		t.Fatalf("cut off after %v: the limit did not act before the handshake timeout", took)
	}
	if allocated > 16<<20 {
		t.Fatalf("the collector allocated %d MiB while the target sent headers", allocated>>20)
	}
	if rc := byReason(c.Publish().Rejects); rc[collector.ReasonTooLarge] == 0 {
		t.Fatalf("rejects %v: the oversized handshake is not counted", rc)
	}
	if st.Rejected == 0 {
		t.Fatalf("target %+v: the oversized handshake is not counted on the target", st)
	}
}
