//go:build !unix

package main

import "time"

// procCPU is unknown here.
func procCPU() (time.Duration, bool) { return 0, false }
