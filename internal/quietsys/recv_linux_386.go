package quietsys

// Recv is Read: linux/386 reaches recvfrom(2) only through socketcall(2).
// fd must be non-blocking.
func Recv(fd int, p []byte) (int, error) { return Read(fd, p) }
