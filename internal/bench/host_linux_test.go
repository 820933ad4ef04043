package bench

import (
	"syscall"
	"testing"
)

// BenchmarkHostPageFault is what this host charges for memory touched the
// first time, a 4 KiB page at a time: each op writes one byte to a page
// of an anonymous mapping never touched before, in 4 KiB pages
// (MADV_NOHUGEPAGE) and in 2 MiB ones (MADV_HUGEPAGE, where the kernel
// gives them). A collector whose heap grows pays the first for every 4 KiB
// it grows by (the Go runtime asks for no huge pages): with bench's
// growth, the most of the kernel's share of its CPU on a host that traps
// faults (docs/BENCHMARKS.md).
func BenchmarkHostPageFault(b *testing.B) {
	for _, c := range []struct {
		name   string
		advice int
	}{{"4KiB", syscall.MADV_NOHUGEPAGE}, {"2MiB", syscall.MADV_HUGEPAGE}} {
		b.Run(c.name, func(b *testing.B) {
			const size = 64 << 20
			var mem []byte
			off := size
			defer func() {
				if mem != nil {
					syscall.Munmap(mem)
				}
			}()
			for b.Loop() {
				if off == size {
					b.StopTimer()
					if mem != nil {
						syscall.Munmap(mem)
					}
					var err error
					if mem, err = syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE); err != nil {
						b.Fatal(err)
					}
					if err := syscall.Madvise(mem, c.advice); err != nil {
						b.Skipf("madvise: %v", err)
					}
					off = 0
					b.StartTimer()
				}
				mem[off] = 1
				off += 4 << 10
			}
		})
	}
}
