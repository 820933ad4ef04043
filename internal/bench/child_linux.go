package bench

import (
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// childAttr makes the kernel kill an agents' process when the bench
// dies, however it dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// quietReader reads r, an agents' process's standard output, without
// telling the scheduler of a system call. A read the scheduler is told
// of, made while every processor is idle, wakes the runtime's monitor
// thread, which then checks every 20 µs for a millisecond and more: at
// 2,000 targets the agents' transitions, read as they come, woke it a
// dozen times a second, sleeps bench would count as the collector's CPU
// (the collector's pollers read the same way: collector/source's
// pollNow). A pipe the runtime's poller does not watch is read as it is.
func quietReader(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok {
		return r
	}
	raw, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		return r
	}
	return &rawPipe{raw: raw}
}

// rawPipe reads a non-blocking pipe the runtime's poller watches, waiting
// for it through the poller.
type rawPipe struct{ raw syscall.RawConn }

func (p *rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := p.raw.Read(func(fd uintptr) bool {
		for {
			n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}
