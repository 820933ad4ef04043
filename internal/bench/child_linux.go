package bench

import "syscall"

// benchChildAttr makes the kernel kill an agents' process when the bench
// dies, however it dies.
func benchChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
