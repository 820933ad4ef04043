//go:build unix

package bench

import (
	"syscall"
	"time"
)

// procCPU is the process's user and system time, all threads (getrusage,
// to the microsecond), and of it the system time.
func procCPU() (cpu, sys time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano()), true
}
