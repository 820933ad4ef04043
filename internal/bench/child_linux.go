package bench

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/quietsys"
)

// childAttr makes the kernel kill an agents' process when the bench
// dies, however it dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// quietReader reads r, an agents' process's standard output, without
// telling the scheduler of a system call (internal/quietsys): at 2,000
// targets the agents' transitions, read as they come, woke the runtime's
// monitor thread a dozen times a second, sleeps bench would count as the
// collector's CPU. A pipe the runtime's poller does not watch is read as
// it is.
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
	var n int
	var rerr error
	err := p.raw.Read(func(fd uintptr) bool {
		for {
			n, rerr = quietsys.Read(int(fd), b)
			if !errors.Is(rerr, syscall.EINTR) {
				return !errors.Is(rerr, syscall.EAGAIN)
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
