package ui

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// paint is a style reduced to the sequences that open and close it, so hot
// paths colour a cell by concatenation. Both are empty without colour.
type paint struct{ pre, post string }

func newPaint(s lipgloss.Style) paint {
	out := s.Render("X")
	i := strings.IndexByte(out, 'X')
	if i < 0 {
		return paint{}
	}
	return paint{pre: out[:i], post: out[i+1:]}
}

// on returns s painted.
func (p paint) on(s string) string {
	if p.pre == "" || s == "" {
		return s
	}
	return p.pre + s + p.post
}

// write appends s painted to b.
func (p paint) write(b *strings.Builder, s string) {
	b.WriteString(p.pre)
	b.WriteString(s)
	b.WriteString(p.post)
}

// Styles holds every colour and attribute the UI uses, for one colour
// profile. With termenv.Ascii every paint is empty: text, glyphs and words
// carry all meaning, colour only adds to it.
type Styles struct {
	r     *lipgloss.Renderer
	color bool

	title, dim, bold, selected, header, mode, frozen, warn paint
	closed, half, open                                     paint
	crit, warning, info                                    paint
	drift, threshold, key                                  paint

	// help bubble styles.
	helpKey, helpDesc, helpSep lipgloss.Style
}

func newStyles(p termenv.Profile) *Styles {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(p)
	r.SetHasDarkBackground(true) // never query the terminal
	ns := r.NewStyle
	c := func(s string) lipgloss.Color { return lipgloss.Color(s) }
	st := &Styles{r: r, color: p != termenv.Ascii}
	st.title = newPaint(ns().Bold(true))
	st.bold = newPaint(ns().Bold(true))
	st.dim = newPaint(ns().Foreground(c("8")))
	st.selected = newPaint(ns().Reverse(true).Bold(true))
	st.header = newPaint(ns().Bold(true).Foreground(c("6")))
	st.mode = newPaint(ns().Bold(true).Foreground(c("0")).Background(c("6")))
	st.frozen = newPaint(ns().Bold(true).Foreground(c("0")).Background(c("3")))
	st.warn = newPaint(ns().Foreground(c("3")))
	st.closed = newPaint(ns().Foreground(c("2")))
	st.half = newPaint(ns().Foreground(c("3")))
	st.open = newPaint(ns().Foreground(c("1")).Bold(true))
	st.crit = newPaint(ns().Foreground(c("1")).Bold(true))
	st.warning = newPaint(ns().Foreground(c("3")))
	st.info = newPaint(ns().Foreground(c("4")))
	st.drift = newPaint(ns().Foreground(c("5")).Bold(true))
	st.threshold = newPaint(ns().Foreground(c("1")))
	st.key = newPaint(ns().Bold(true).Foreground(c("6")))
	st.helpKey = ns().Bold(true).Foreground(c("6"))
	st.helpDesc = ns()
	st.helpSep = ns().Foreground(c("8"))
	return st
}

// Breaker states: a glyph, a word and a colour each (never colour alone).
const (
	glyphClosed = "●"
	glyphHalf   = "◐"
	glyphOpen   = "✖"
	// Timeline bands: the height of the bar grows with the trouble.
	bandClosed = "▁"
	bandHalf   = "▄"
	bandOpen   = "█"
	bandNone   = "·" // no data: before the instance's first, or after now
	// A breaker whose source cannot tell its state (Java Sentinel's
	// transport, metric logs): never drawn as CLOSED.
	glyphUnknown = "?"
	// A state inferred from per-second counts, accurate to the second.
	markInferred = "~"
	// The cursor of a list: in the panel with the keyboard, in another.
	glyphCursor     = "▸"
	glyphCursorIdle = "▹"
	// A rule that differs from most instances'.
	glyphDrift = "≠"
	// A finding whose rule has a plan found safe on the input's traffic.
	glyphPlan = "✓"
)

func stateGlyph(s core.State) string {
	switch s {
	case core.Open:
		return glyphOpen
	case core.HalfOpen:
		return glyphHalf
	default:
		return glyphClosed
	}
}

func stateWord(s core.State) string {
	switch s {
	case core.Open:
		return "OPEN"
	case core.HalfOpen:
		return "HALF"
	default:
		return "CLOSED"
	}
}

func stateBand(s core.State) string {
	switch s {
	case core.Open:
		return bandOpen
	case core.HalfOpen:
		return bandHalf
	default:
		return bandClosed
	}
}

func (st *Styles) statePaint(s core.State) paint {
	switch s {
	case core.Open:
		return st.open
	case core.HalfOpen:
		return st.half
	default:
		return st.closed
	}
}

// state renders "● CLOSED", "◐ HALF" or "✖ OPEN", coloured.
func (st *Styles) state(s core.State) string {
	return st.statePaint(s).on(stateGlyph(s) + " " + stateWord(s))
}

// stateOf renders a state as its source knows it: "? unknown" when the
// source cannot tell it, "✖ OPEN~" when it was inferred from counts.
func (st *Styles) stateOf(s core.State, p collector.Provenance) string {
	switch p {
	case collector.ProvenanceUnknown:
		return st.dim.on(glyphUnknown + " unknown")
	case collector.ProvenanceInferred:
		return st.statePaint(s).on(stateGlyph(s) + " " + stateWord(s) + markInferred)
	}
	return st.state(s)
}

// Finding severities: a two-cell mark and a word.
func sevMark(s triage.Severity) string {
	switch s {
	case triage.Critical:
		return "!!"
	case triage.Warning:
		return "! "
	default:
		return "i "
	}
}

func sevWord(s triage.Severity) string {
	switch s {
	case triage.Critical:
		return "CRIT"
	case triage.Warning:
		return "WARN"
	default:
		return "INFO"
	}
}

func (st *Styles) sevPaint(s triage.Severity) paint {
	switch s {
	case triage.Critical:
		return st.crit
	case triage.Warning:
		return st.warning
	default:
		return st.info
	}
}
