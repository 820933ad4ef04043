package bench

import "syscall"

// childAttr makes the kernel kill an agents' process when the bench
// dies, however it dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
