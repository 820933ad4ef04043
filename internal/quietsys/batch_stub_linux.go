//go:build linux && !(amd64 || arm64 || riscv64 || loong64 || ppc64 || ppc64le || s390x)

package quietsys

import "errors"

// Batch is not made on this architecture (its system calls are numbered
// apart): NewBatch fails, and sockets are read with Recv.
type Batch struct{}

// NewBatch fails: read with Recv.
func NewBatch(size int) (*Batch, error) {
	return nil, errors.New("io_uring: not on this architecture")
}

func (b *Batch) Cap() int                  { return 0 }
func (b *Batch) Len() int                  { return 0 }
func (b *Batch) Recv(fd int, p []byte) int { return -1 }
func (b *Batch) Reset()                    {}
func (b *Batch) Do()                       {}
func (b *Batch) Result(i int) (int, error) { return -1, errors.New("no batch") }
func (b *Batch) Unkept() int               { return 0 }
func (b *Batch) Broken() bool              { return true }
func (b *Batch) Close() error              { return nil }
