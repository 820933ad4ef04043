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

// TestProcCountsFaults: the page faults bench prints are the process's:
// 1,024 pages touched the first time are 1,024 more at least.
func TestProcCountsFaults(t *testing.T) {
	const pages = 1024
	_, _, before, ok := procCPU()
	if !ok {
		t.Fatal("getrusage failed")
	}
	mem, err := syscall.Mmap(-1, 0, pages<<12, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Madvise(mem, syscall.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(mem); i += 1 << 12 {
		mem[i] = 1
	}
	if _, _, after, _ := procCPU(); after-before < pages {
		t.Errorf("%d pages touched, %d page faults counted", pages, after-before)
	}
}
