// Package termtext makes untrusted strings safe to print on a terminal.
// Resource, app and instance names come from remote peers and may carry
// escape sequences (screen clearing, OSC 52 clipboard writes), control
// characters or bidi overrides that disguise text; the dashboard and the
// text report print them only through Sanitize.
package termtext
