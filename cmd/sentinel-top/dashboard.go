package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sentinel-top/sentinel-top/ui"
)

// dashboard runs the terminal UI over the chosen input with the options
// the flags set (colour, mouse).
func dashboard(ctx context.Context, in *inputFlags, opts ui.Options, stdout, stderr io.Writer) int {
	s, err := in.open(ctx, -1)
	if err != nil {
		return openFailed(stderr, "sentinel-top", err)
	}
	if s.replay != nil {
		s.replay.Stay() // seeking back after the end, even at --speed max
	}
	feedCtx, cancel := context.WithCancel(ctx)
	fed := make(chan error, 1)
	go func() { fed <- s.feed(feedCtx) }()
	published := make(chan struct{})
	go func() { s.c.Run(feedCtx); close(published) }()

	out, _ := stdout.(*os.File)
	if out != nil {
		opts.Output = out
	}
	if s.replay != nil {
		opts.Replay = s.replay
	}
	err = ui.Run(ctx, s.c, opts)
	cancel()
	<-published
	select {
	case <-fed:
	case <-time.After(5 * time.Second):
	}
	closeErr := s.close()
	switch {
	case errors.Is(err, ui.ErrNoTTY):
		fmt.Fprintln(stderr, err)
		return exitUsage
	case err != nil:
		fmt.Fprintln(stderr, "sentinel-top:", err)
		return exitRuntime
	case closeErr != nil:
		fmt.Fprintln(stderr, "sentinel-top:", closeErr)
		return exitRuntime
	}
	if in.record != "" {
		fmt.Fprintf(stderr, "recorded to %s; replay with: sentinel-top --replay %s\n", in.record, in.record)
	}
	return exitOK
}
