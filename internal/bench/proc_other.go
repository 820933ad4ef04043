//go:build !unix

package bench

import "time"

// procCPU is unknown here.
func procCPU() (cpu, sys time.Duration, faults int64, ok bool) { return 0, 0, 0, false }
