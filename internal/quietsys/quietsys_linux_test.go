package quietsys

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
)

// Read and EpollNow do what read(2) and epoll_wait(2) with no timeout
// do: EAGAIN and no event on an empty pipe, then the event and the bytes
// once written, and 0 bytes at the end.
func TestReadAndEpollNow(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(ep)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p[0])}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, p[0], &ev); err != nil {
		t.Fatal(err)
	}
	evs := make([]syscall.EpollEvent, 4)
	buf := make([]byte, 16)
	if n, err := EpollNow(ep, evs); n != 0 || err != nil {
		t.Fatalf("an empty set: %d events, %v", n, err)
	}
	if n, err := Read(p[0], buf); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("an empty pipe: %d, %v; want EAGAIN", n, err)
	}
	syscall.Write(p[1], []byte("hello"))
	if n, err := EpollNow(ep, evs); n != 1 || err != nil || evs[0].Fd != int32(p[0]) {
		t.Fatalf("after a write: %d events %+v, %v", n, evs[:max(n, 0)], err)
	}
	if n, err := Read(p[0], buf); n != 5 || err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read %d %q, %v", n, buf[:max(n, 0)], err)
	}
	if n, err := Read(p[0], nil); n != 0 || err != nil {
		t.Fatalf("into nothing: %d, %v", n, err)
	}
	syscall.Close(p[1])
	if n, err := Read(p[0], buf); n != 0 || err != nil {
		t.Fatalf("at the end: %d, %v", n, err)
	}
}

// Recv reads a socket as Read does: EAGAIN while nothing came (even on a
// blocking socket, but on linux/386, where it is Read), the bytes once
// written, 0 at the end.
func TestRecv(t *testing.T) {
	flags := syscall.SOCK_STREAM | syscall.SOCK_CLOEXEC
	if runtime.GOARCH == "386" {
		flags |= syscall.SOCK_NONBLOCK
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, flags, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	buf := make([]byte, 16)
	if n, err := Recv(fds[0], buf); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("nothing sent: %d, %v; want EAGAIN", n, err)
	}
	syscall.Write(fds[1], []byte("hello"))
	if n, err := Recv(fds[0], buf); n != 5 || err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("recv %d %q, %v", n, buf[:max(n, 0)], err)
	}
	if n, err := Recv(fds[0], nil); n != 0 || err != nil {
		t.Fatalf("into nothing: %d, %v", n, err)
	}
	syscall.Close(fds[1])
	if n, err := Recv(fds[0], buf); n != 0 || err != nil {
		t.Fatalf("at the end: %d, %v", n, err)
	}
}
