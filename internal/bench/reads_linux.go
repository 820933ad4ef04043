package bench

import "github.com/sentinel-top/sentinel-top/internal/quietsys"

// readPath says how the collector's pollers read the connections a pass
// finds readable on this host: the first read of each in one system
// call (quietsys.Batch, an io_uring's), or one recvfrom each, with why.
// It asks the kernel for a ring as a poller does.
func readPath() string {
	b, err := quietsys.NewBatch(1)
	if err != nil {
		return "one recvfrom a connection (" + err.Error() + ")"
	}
	b.Close()
	return "a pass's first reads in one system call (io_uring)"
}
