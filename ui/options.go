package ui

import (
	"io"
	"os"
	"time"

	"github.com/muesli/termenv"
)

// ColorProfile selects how much colour the UI emits.
type ColorProfile uint8

// The colour profiles.
const (
	// ColorAuto detects the profile from the output and the environment
	// (NO_COLOR, CLICOLOR_FORCE, TERM, COLORTERM).
	ColorAuto ColorProfile = iota
	// ColorNone emits no colour or text attribute at all.
	ColorNone
	// ColorANSI uses the 16 basic colours.
	ColorANSI
	// ColorANSI256 uses the 256-colour palette.
	ColorANSI256
	// ColorTrueColor uses 24-bit colours.
	ColorTrueColor
)

// Options configure the dashboard. The zero value is valid; each field's
// default is given beside it.
type Options struct {
	// NoColor turns colour off whatever Profile says (as the NO_COLOR
	// environment variable does). Default false.
	NoColor bool
	// Profile is the colour profile. Default ColorAuto.
	Profile ColorProfile
	// Mouse enables mouse reporting from the start (cell motion: presses,
	// releases and drags, no bare motion): a click selects a row, an alert
	// or a target and opens the one selected, the wheel moves through the
	// list under the pointer; m turns it on and off at run time. Default
	// off: while it is on, the terminal does not select text.
	Mouse bool
	// TickInterval is how often the screen is refreshed from the latest
	// snapshot. Default 250ms; at least 10ms.
	TickInterval time.Duration
	// Range is the time range the detail screen shows first. Default 5
	// minutes; +, - and = change it at run time.
	Range time.Duration
	// Location is the time zone of clocks and timestamps. Default
	// time.Local.
	Location *time.Location
	// Input and Output are the terminal Run uses. Default: standard input
	// (or the controlling terminal when standard input is not one) and
	// os.Stdout; Output must be a terminal.
	Input  io.Reader
	Output io.Writer
	// Replay steers the replay feeding the source (pause, speed, seek).
	// Default nil: no replay, and the replay keys are not offered.
	Replay ReplayControl
}

// Defaults of Options.
const (
	DefaultTickInterval = 250 * time.Millisecond
	DefaultRange        = 5 * time.Minute
)

// withDefaults fills in the zero fields.
func (o Options) withDefaults() Options {
	if o.TickInterval <= 0 {
		o.TickInterval = DefaultTickInterval
	}
	if o.TickInterval < 10*time.Millisecond {
		o.TickInterval = 10 * time.Millisecond
	}
	if o.Range <= 0 {
		o.Range = DefaultRange
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Output == nil {
		o.Output = os.Stdout
	}
	return o
}

// termProfile resolves the colour profile for o.Output.
func (o Options) termProfile() termenv.Profile {
	if o.NoColor {
		return termenv.Ascii
	}
	switch o.Profile {
	case ColorNone:
		return termenv.Ascii
	case ColorANSI:
		return termenv.ANSI
	case ColorANSI256:
		return termenv.ANSI256
	case ColorTrueColor:
		return termenv.TrueColor
	}
	out := o.Output
	if out == nil {
		out = os.Stdout
	}
	return termenv.NewOutput(out).EnvColorProfile()
}
