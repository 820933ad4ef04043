package ui

import (
	"context"
	"errors"
	"fmt"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
)

// ErrNoTTY is returned by Run when the output is not a terminal.
var ErrNoTTY = errors.New("sentinel-top needs a terminal; for a headless summary use: sentinel-top report [flags]")

// Run shows the dashboard on the terminal (in the alternate screen) until
// the user quits or ctx is done; both end it without error. It returns
// ErrNoTTY at once when opts.Output (default os.Stdout) is not a terminal.
// NO_COLOR in the environment turns colour off whatever opts says.
func Run(ctx context.Context, src Source, opts Options) error {
	input := opts.Input
	opts = opts.withDefaults()
	if !isTerminal(opts.Output) {
		return ErrNoTTY
	}
	if os.Getenv("NO_COLOR") != "" {
		opts.NoColor = true
	}
	popts := []tea.ProgramOption{
		tea.WithContext(ctx),
		// The caller's ctx carries SIGINT and SIGTERM (cmd uses
		// signal.NotifyContext): a second handler here would race it, its
		// QuitMsg sent to a loop that ctx already ended, and hold the exit.
		tea.WithoutSignalHandler(),
		tea.WithAltScreen(),
		tea.WithOutput(opts.Output),
	}
	if input != nil {
		popts = append(popts, tea.WithInput(input))
	}
	if opts.Mouse {
		popts = append(popts, tea.WithMouseCellMotion())
	}
	_, err := tea.NewProgram(newModel(src, opts), popts...).Run()
	switch {
	case err == nil, errors.Is(err, tea.ErrInterrupted):
		return nil
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return nil
	}
	return fmt.Errorf("dashboard: %w", err)
}

// isTerminal reports whether w is a file open on a terminal.
func isTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(f.Fd())
}
