//go:build !linux

package source

import (
	"context"
	"errors"
	"time"
)

// pollers read plain connections with a few goroutines on Linux
// (poll_linux.go); elsewhere each connection is read by its own.
type pollers struct{}

func newPollers() *pollers { return nil }

func (p *pollers) close() {}

func (p *pollers) serve(context.Context, *stream, int, []byte, int, time.Duration) error {
	return errors.New("no poller on this system")
}

func takeFD(any) (int, error) { return -1, errors.New("no poller on this system") }
