package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/sentinel-top/sentinel-top/internal/cliflag"
)

// command is one subcommand's flags: the shared input flags and its own.
type command struct {
	name  string // as in messages: "sentinel-top report"
	hint  string // printed after the error of no input (errChooseInput), when set
	fs    *flag.FlagSet
	in    inputFlags
	plain bool // no input flags (bench)
}

func newCommand(name, usage string, stderr io.Writer) *command {
	c := newPlainCommand(name, usage, stderr)
	c.plain = false
	c.in.register(c.fs)
	return c
}

// newPlainCommand is a command without the input flags.
func newPlainCommand(name, usage string, stderr io.Writer) *command {
	c := &command{name: name, fs: flag.NewFlagSet(name, flag.ContinueOnError), plain: true}
	c.fs.SetOutput(stderr)
	c.fs.Usage = func() {
		fmt.Fprint(c.fs.Output(), usage)
		c.fs.PrintDefaults()
	}
	return c
}

// parse parses args, fills unset flags from SENTINEL_TOP_* and checks the
// input flags. When it returns false the command ends with code (help was
// printed, or a usage error was).
func (c *command) parse(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	// The flag package prints its complaints (and the usage) itself: keep
	// them, and print them to stderr only when they are errors.
	var said bytes.Buffer
	c.fs.SetOutput(&said)
	err := c.fs.Parse(cliflag.OptionalValue(args, "demo")) // --demo alone: the default scenario
	c.fs.SetOutput(stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.fs.SetOutput(stdout)
			c.fs.Usage()
			return exitOK, false
		}
		// The complaint, not the whole usage.
		c.failf("%v (see %s --help)", err, c.name)
		return exitUsage, false
	}
	if err = cliflag.FromEnv(c.fs, "SENTINEL_TOP_"); err != nil {
		err = usageError{err}
	}
	if err == nil && c.fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q (see --help)", c.fs.Arg(0))
	}
	if err == nil && !c.plain {
		err = c.in.validate()
	}
	if err != nil {
		c.failf("%v", err)
		if c.hint != "" && errors.Is(err, errChooseInput) {
			fmt.Fprintln(c.fs.Output(), c.hint)
		}
		return exitUsage, false
	}
	return exitOK, true
}

// failf prints one error line, prefixed with the command's name.
func (c *command) failf(format string, args ...any) {
	fmt.Fprintf(c.fs.Output(), c.name+": "+format+"\n", args...)
}
