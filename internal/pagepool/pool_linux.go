package pagepool

import (
	"fmt"
	"syscall"
)

// OutsideHeap says whether a pool's pages are outside the Go heap on this
// system (in its own mapping), where no Go memory limit counts them.
const OutsideHeap = true

// madvHugePage is MADV_HUGEPAGE: the kernel may back the range with
// transparent huge pages in its "madvise" mode too.
const madvHugePage = 14

// mapPages maps n bytes of private, zeroed memory, taken from the system
// only as it is touched (no swap is reserved for it), nil when the system
// refuses. The kernel is asked for transparent huge pages for it.
func mapPages(n int) []byte {
	if n <= 0 {
		return nil
	}
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	// Refused where the kernel's mode is "never", or without THP: the
	// pages are then 4 KiB ones, as on the heap.
	_ = syscall.Madvise(mem, madvHugePage)
	return mem
}

func unmapPages(mem []byte) error {
	if err := syscall.Munmap(mem); err != nil {
		return fmt.Errorf("pagepool: unmap %d bytes: %w", len(mem), err)
	}
	return nil
}
