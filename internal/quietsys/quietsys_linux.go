package quietsys

import (
	"syscall"
	"unsafe"
)

// Read is read(2) on fd, which must be non-blocking: it returns EAGAIN
// rather than wait.
func Read(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// EpollNow is epoll_wait(2) on epfd with no timeout: the events ready now
// (epoll_pwait with no signal mask, which every architecture has).
func EpollNow(epfd int, evs []syscall.EpollEvent) (int, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
