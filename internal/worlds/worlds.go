package worlds

import "math/rand/v2"

// World is a downstream: a call arriving at atMs (since the start) takes
// rtMs and fails or not.
type World func(atMs int64, r *rand.Rand) (rtMs int64, failed bool)

// Brownout is a downstream answering in 40-80 ms (one call in a hundred
// 100-135 ms) that, over [fromMs, toMs), takes 340-390 ms for every call.
func Brownout(fromMs, toMs int64) World {
	return func(at int64, r *rand.Rand) (int64, bool) {
		if at >= fromMs && at < toMs {
			return 340 + r.Int64N(51), false
		}
		if r.IntN(100) == 0 {
			return 100 + r.Int64N(36), false
		}
		return 40 + r.Int64N(41), false
	}
}

// Down is a downstream answering in 20-60 ms that, over [fromMs, toMs),
// fails every call after 2 s; outside it one call in noise fails anyway
// (0: none).
func Down(fromMs, toMs int64, noise int) World {
	return func(at int64, r *rand.Rand) (int64, bool) {
		if at >= fromMs && at < toMs {
			return 2000, true
		}
		return 20 + r.Int64N(41), noise > 0 && r.IntN(noise) == 0
	}
}

// Jittery is a healthy downstream one call in ten of which takes 600-800
// ms (30-70 ms the others), with no outage at all.
func Jittery() World {
	return func(_ int64, r *rand.Rand) (int64, bool) {
		if r.IntN(10) == 0 {
			return 600 + r.Int64N(200), false
		}
		return 30 + r.Int64N(40), false
	}
}
