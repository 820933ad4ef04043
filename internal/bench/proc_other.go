//go:build !unix

package bench

import "time"

// procCPU is unknown here.
func procCPU() (time.Duration, bool) { return 0, false }
