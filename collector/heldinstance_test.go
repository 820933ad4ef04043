package collector

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// A connection's sink keeps the instance its messages reached (heldShare)
// and does not look it up again while the store's names stand. Random
// messages from two targets and a file naming the same instances, with
// departures, retention pruning them and a Reset, go to two collectors:
// one through sinks kept for each connection's life, the other through a
// sink made afresh for every message. Each message must be taken alike
// and the instances must hold the same counts.
func TestKeptSinkFindsTheInstanceAFreshOneWould(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	opts := func(vc *core.VirtualClock) Options {
		return Options{Clock: vc, Retention: time.Minute, MaxClockSkew: -1}
	}
	vk, vf := core.NewVirtualClock(time.UnixMilli(t0ms)), core.NewVirtualClock(time.UnixMilli(t0ms))
	kept, fresh := New(opts(vk)), New(opts(vf))
	owners := []string{"a:8720", "b:8720", ""}
	sinks := map[string]interface {
		Ingest(string, wire.Message) bool
	}{}
	for _, o := range owners[:2] {
		sinks[o] = kept.Bound(o)
	}
	names := []string{"gw-1", "gw-2", "gw-1@a:8720", "gw-1@b:8720", "gw-2@a:8720", "gw-2@b:8720"}
	now := int64(t0ms)
	resets, prunes := 0, 0
	for step := range 4000 {
		switch r := rng.IntN(100); {
		case r < 2:
			kept.Reset()
			fresh.Reset()
			resets++
			continue
		case r < 6:
			// Past the retention: the instances gone since are pruned by
			// the next snapshot.
			now += 2 * time.Minute.Milliseconds()
			vk.Set(time.UnixMilli(now))
			vf.Set(time.UnixMilli(now))
			prunes++
		case r < 20:
			kept.Publish()
			fresh.Publish()
		}
		now += 500
		vk.Set(time.UnixMilli(now))
		vf.Set(time.UnixMilli(now))
		owner, name := owners[rng.IntN(len(owners))], names[rng.IntN(2)]
		h := wire.Header{Ts: now, Instance: name}
		var m wire.Message
		switch rng.IntN(6) {
		case 0:
			m = &wire.Hello{Header: h, App: fmt.Sprint("app-", rng.IntN(2)), StartedAt: now - 1000, BucketMs: 500}
		case 1:
			m = &wire.Bye{Header: h}
		default:
			m = &wire.Buckets{Header: h, BucketMs: 500,
				Items: []wire.BucketItem{{Resource: "r", Start: now - 500, Metrics: core.Metrics{Pass: int64(1 + rng.IntN(9))}}}}
		}
		var okKept, okFresh bool
		if owner == "" {
			okKept, okFresh = kept.Ingest("file", m), fresh.Ingest("file", m)
		} else {
			okKept, okFresh = sinks[owner].Ingest(owner, m), fresh.Bound(owner).Ingest(owner, m)
		}
		if okKept != okFresh {
			t.Fatalf("step %d: %s of %s from %q taken %v by the kept sink, %v by a fresh one", step, m.Kind(), name, owner, okKept, okFresh)
		}
		for _, n := range names {
			k, kok := kept.Totals(n, "r")
			f, fok := fresh.Totals(n, "r")
			if k != f || kok != fok {
				t.Fatalf("step %d (%s of %s from %q): %s holds pass %d (%v) through kept sinks, %d (%v) through fresh ones",
					step, m.Kind(), name, owner, n, k.Pass, kok, f.Pass, fok)
			}
		}
	}
	if resets == 0 || prunes == 0 {
		t.Fatalf("%d resets, %d prunes: the names never changed under the kept sinks", resets, prunes)
	}
	if s := kept.Publish(); s.Instances == 0 {
		t.Fatal("no instance at the end: the last steps compared nothing")
	}
}
