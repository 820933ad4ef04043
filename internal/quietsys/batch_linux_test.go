//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64 || ppc64le || s390x)

package quietsys

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// newTestBatch is a batch of size closed when the test ends; the test is
// skipped where the kernel refuses an io_uring (the pollers then read with
// Recv, which the other tests cover).
func newTestBatch(t *testing.T, size int) *Batch {
	t.Helper()
	b, err := NewBatch(size)
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// socketPair is a connected pair of stream sockets, blocking, closed when
// the test ends: reads of a batch never wait, whatever the descriptor's
// mode.
func socketPair(t *testing.T) (int, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fds[0]); syscall.Close(fds[1]) })
	return fds[0], fds[1]
}

// A batch's reads return what Recv's would, each into its own buffer:
// the bytes waiting (as much as fits, the rest left for the next read),
// EAGAIN where nothing waits, 0 at the end of a stream, EBADF for a
// descriptor not open; and a batch is made again after Reset, as often as
// wanted.
func TestBatchReadsAsRecvDoes(t *testing.T) {
	b := newTestBatch(t, 8)
	if b.Cap() != 8 {
		t.Fatalf("room for %d reads, want 8", b.Cap())
	}
	type sock struct{ r, w int }
	var socks []sock
	for range 5 {
		r, w := socketPair(t)
		socks = append(socks, sock{r, w})
	}
	bad, _ := socketPair(t)
	syscall.Close(bad) // its number is closed again at the end: harmless (EBADF)
	for round := range 3 {
		msg := func(i int) []byte { return []byte(fmt.Sprintf("round %d socket %d", round, i)) }
		syscall.Write(socks[0].w, msg(0))
		syscall.Write(socks[1].w, msg(1))
		syscall.Write(socks[2].w, bytes.Repeat([]byte("x"), 100)) // more than its buffer
		// socks[3]: nothing sent; socks[4]: closed at the last round.
		if round == 2 {
			syscall.Close(socks[4].w)
		}
		bufs := make([][]byte, 6)
		for i := range bufs {
			bufs[i] = make([]byte, 64)
		}
		bufs[2] = bufs[2][:40]
		b.Reset()
		for i, s := range socks {
			if got := b.Recv(s.r, bufs[i]); got != i {
				t.Fatalf("read %d queued as %d", i, got)
			}
		}
		if got := b.Recv(bad, bufs[5]); got != 5 || b.Len() != 6 {
			t.Fatalf("read 5 queued as %d, %d queued", got, b.Len())
		}
		if got := b.Recv(socks[0].r, nil); got != -1 {
			t.Fatalf("a read into nothing queued as %d", got)
		}
		b.Do()
		for i := range 2 {
			if n, err := b.Result(i); err != nil || !bytes.Equal(bufs[i][:max(n, 0)], msg(i)) {
				t.Fatalf("round %d, read %d: %d %q, %v", round, i, n, bufs[i][:max(n, 0)], err)
			}
		}
		if n, err := b.Result(2); n != 40 || err != nil {
			t.Fatalf("round %d, a read of 100 bytes into 40: %d, %v", round, n, err)
		}
		rest := make([]byte, 100)
		if n, err := Recv(socks[2].r, rest); n != 60 || err != nil {
			t.Fatalf("round %d, what a read left: %d, %v", round, n, err)
		}
		if n, err := b.Result(3); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("round %d, nothing sent: %d, %v; want EAGAIN", round, n, err)
		}
		if n, err := b.Result(4); round == 2 && (n != 0 || err != nil) || round < 2 && !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("round %d, a stream ended at round 2: %d, %v", round, n, err)
		}
		if n, err := b.Result(5); !errors.Is(err, syscall.EBADF) {
			t.Fatalf("round %d, a descriptor not open: %d, %v; want EBADF", round, n, err)
		}
	}
	if b.Unkept() != 0 {
		t.Errorf("%d reads kept by the kernel", b.Unkept())
	}
}

// A batch holds Cap reads; one more is refused, and the batch is made as
// the reads fit.
func TestBatchHoldsItsCap(t *testing.T) {
	b := newTestBatch(t, 4)
	r, w := socketPair(t)
	syscall.Write(w, []byte("abcdefgh"))
	bufs := make([]byte, 8)
	for i := range 4 {
		if got := b.Recv(r, bufs[2*i:2*i+2]); got != i {
			t.Fatalf("read %d queued as %d", i, got)
		}
	}
	if got := b.Recv(r, bufs); got != -1 {
		t.Fatalf("a fifth read queued as %d", got)
	}
	b.Do()
	for i := range 4 {
		if n, err := b.Result(i); n != 2 || err != nil {
			t.Fatalf("read %d: %d, %v", i, n, err)
		}
	}
	if string(bufs) != "abcdefgh" {
		t.Fatalf("the reads in turn: %q", bufs)
	}
}

// A read the kernel keeps waiting (here made without MSG_DONTWAIT on a
// blocking socket with nothing sent: never so in the collector) is
// cancelled before Do returns and told as EAGAIN: it takes nothing sent
// afterwards, which the next read gets whole.
func TestBatchCancelsAReadTheKernelKeeps(t *testing.T) {
	b := newTestBatch(t, 4)
	r, w, buf := keptAndReady(t, b, syscall.EAGAIN)
	if b.Unkept() != 1 || b.Broken() {
		t.Fatalf("%d reads kept, want 1; broken %v", b.Unkept(), b.Broken())
	}
	syscall.Write(w, []byte("later"))
	if n, err := Recv(r, buf); n != 5 || err != nil || string(buf[:5]) != "later" {
		t.Fatalf("what came after the cancel: %d %q, %v", n, buf[:max(n, 0)], err)
	}
	// The ring is made again as before.
	b.Reset()
	syscall.Write(w, []byte("again"))
	b.Recv(r, buf)
	b.Do()
	if n, err := b.Result(0); n != 5 || err != nil || b.Unkept() != 1 {
		t.Fatalf("the next batch: %d, %v, %d kept", n, err, b.Unkept())
	}
}

// A read the kernel keeps and will not give back (a ring failing while
// the batch waits for its cancel: the tests make it fail) tells ErrKept;
// the batch is broken, holds the read's buffer, and reads on with Recv.
func TestBatchBrokenKeepsTheBufferAndReadsWithRecv(t *testing.T) {
	b := newTestBatch(t, 4)
	b.failWait = true
	_, _, buf := keptAndReady(t, b, ErrKept)
	if !b.Broken() {
		t.Fatal("not broken")
	}
	if len(b.lost) != 1 || &b.lost[0].p[0] != &buf[0] {
		t.Fatalf("the buffers held: %d reads", len(b.lost))
	}
	r, w := socketPair(t)
	b.Reset()
	syscall.Write(w, []byte("after"))
	b.Recv(r, buf)
	b.Do()
	if n, err := b.Result(0); n != 5 || err != nil || string(buf[:5]) != "after" {
		t.Fatalf("a read once broken: %d %q, %v", n, buf[:max(n, 0)], err)
	}
}

// keptAndReady makes on b a read the kernel keeps (without MSG_DONTWAIT,
// of a blocking socket with nothing sent) and one of a socket with 5
// bytes waiting: the first must tell kept, the second the 5 bytes. It
// returns the first's socket, its peer and its buffer; the batch makes
// its reads with MSG_DONTWAIT again after.
func keptAndReady(t *testing.T, b *Batch, kept error) (r, w int, buf []byte) {
	t.Helper()
	b.dontWait = 0
	defer func() { b.dontWait = syscall.MSG_DONTWAIT }()
	r, w = socketPair(t)
	r2, w2 := socketPair(t)
	syscall.Write(w2, []byte("ready"))
	buf, buf2 := make([]byte, 16), make([]byte, 16)
	b.Reset()
	b.Recv(r, buf)
	b.Recv(r2, buf2)
	b.Do()
	if n, err := b.Result(0); !errors.Is(err, kept) {
		t.Fatalf("the read kept: %d, %v; want %v", n, err, kept)
	}
	if n, err := b.Result(1); n != 5 || err != nil {
		t.Fatalf("the read beside it: %d, %v", n, err)
	}
	return r, w, buf
}

// Once closed, a batch still reads, one Recv at a time.
func TestBatchClosedReadsWithRecv(t *testing.T) {
	b := newTestBatch(t, 2)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	r, w := socketPair(t)
	syscall.Write(w, []byte("hi"))
	buf := make([]byte, 4)
	b.Recv(r, buf)
	b.Do()
	if n, err := b.Result(0); n != 2 || err != nil {
		t.Fatalf("%d, %v", n, err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("closed twice: %v", err)
	}
}

func TestNewBatchSize(t *testing.T) {
	for _, n := range []int{0, -1, 5000} {
		if _, err := NewBatch(n); err == nil {
			t.Errorf("a batch of %d made", n)
		}
	}
}
