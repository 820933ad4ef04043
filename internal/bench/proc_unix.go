//go:build unix

package bench

import (
	"syscall"
	"time"
)

// procCPU is the process's user and system time, all threads (getrusage,
// to the microsecond), of it the system time, and the page faults it took
// (minor and major: memory touched the first time, or brought back).
func procCPU() (cpu, sys time.Duration, faults int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano()), int64(ru.Minflt + ru.Majflt), true
}
