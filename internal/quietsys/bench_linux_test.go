package quietsys

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// BenchmarkSocketRead reads 4.3 KB messages (an agent's buckets message at
// 20 resources) from 500 loopback TCP connections in turn, as a poller
// does, with Read (read(2)) and Recv (recvfrom(2)); the writes are not
// timed.
func BenchmarkSocketRead(b *testing.B) {
	for _, c := range []struct {
		name string
		read func(int, []byte) (int, error)
	}{{"read", Read}, {"recvfrom", Recv}} {
		b.Run(c.name, func(b *testing.B) {
			writers, fds := loopbackConns(b, 500)
			msg, buf := make([]byte, 4300), make([]byte, 64<<10)
			b.SetBytes(int64(len(msg)))
			b.ResetTimer()
			for i := range b.N {
				k := i % len(fds)
				if k == 0 {
					sendAll(b, writers, msg)
				}
				if n, err := c.read(fds[k], buf); n != len(msg) {
					b.Fatalf("read %d bytes, %v", n, err)
				}
			}
		})
	}
}

// BenchmarkSocketReadBatch reads the messages of BenchmarkSocketRead 50
// connections at a time, as a poller's pass reads those found readable:
// one Recv each, or one Batch of 50.
func BenchmarkSocketReadBatch(b *testing.B) {
	const pass = 50
	for _, mode := range []string{"recvfrom", "batch"} {
		b.Run(mode, func(b *testing.B) {
			writers, fds := loopbackConns(b, 500)
			msg := make([]byte, 4300)
			bufs := make([][]byte, pass)
			for i := range bufs {
				bufs[i] = make([]byte, 16<<10)
			}
			var batch *Batch
			if mode == "batch" {
				var err error
				if batch, err = NewBatch(pass); err != nil {
					b.Skipf("no io_uring here: %v", err)
				}
				defer batch.Close()
			}
			b.SetBytes(int64(len(msg)))
			b.ResetTimer()
			for i := 0; i < b.N; i += pass {
				k := i % len(fds)
				if k == 0 {
					sendAll(b, writers, msg)
				}
				if mode == "recvfrom" {
					for j, fd := range fds[k : k+pass] {
						if n, err := Recv(fd, bufs[j]); n != len(msg) {
							b.Fatalf("read %d bytes, %v", n, err)
						}
					}
					continue
				}
				batch.Reset()
				for j, fd := range fds[k : k+pass] {
					batch.Recv(fd, bufs[j])
				}
				batch.Do()
				for j := range pass {
					if n, err := batch.Result(j); n != len(msg) {
						b.Fatalf("read %d bytes, %v", n, err)
					}
				}
			}
		})
	}
}

// BenchmarkSyscall is a system call's own cost on this host, with no work
// in it: getppid(2), and Recv on a loopback connection with nothing
// waiting (EAGAIN). Beside BenchmarkSocketRead it splits a read's cost
// into the call and the copy; under a hypervisor that traps system calls
// the call is most of it (docs/BENCHMARKS.md).
func BenchmarkSyscall(b *testing.B) {
	b.Run("getppid", func(b *testing.B) {
		for b.Loop() {
			syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
		}
	})
	b.Run("recv-empty", func(b *testing.B) {
		_, fds := loopbackConns(b, 1)
		buf := make([]byte, 64<<10)
		for b.Loop() {
			if _, err := Recv(fds[0], buf); !errors.Is(err, syscall.EAGAIN) {
				b.Fatalf("a read of nothing: %v", err)
			}
		}
	})
}

// sendAll writes msg to every writer, the timer stopped.
func sendAll(b *testing.B, writers []net.Conn, msg []byte) {
	b.StopTimer()
	defer b.StartTimer()
	for _, w := range writers {
		if _, err := w.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// loopbackConns is n loopback TCP connections: the writing ends, and the
// reading ends' own non-blocking descriptors.
func loopbackConns(b *testing.B, n int) ([]net.Conn, []int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	var writers []net.Conn
	var fds []int
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		w, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		f, err := c.(*net.TCPConn).File()
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
		fd := int(f.Fd())
		if err := syscall.SetNonblock(fd, true); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close(); w.Close() })
		writers, fds = append(writers, w), append(fds, fd)
	}
	return writers, fds
}
