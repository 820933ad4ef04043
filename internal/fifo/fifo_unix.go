//go:build unix

package fifo

import "syscall"

// Make creates a named pipe at path with mode perm.
func Make(path string, perm uint32) error {
	return syscall.Mkfifo(path, perm)
}
