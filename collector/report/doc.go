// Package report renders the triage report of spec/findings-v1.md: the
// findings of a stream (live or replayed) and their rule plans, with what
// was seen, as JSON (the spec's fields exactly), Markdown (a postmortem
// document) or plain text (the same for a terminal).
//
// A Report is made of a snapshot the collector published (FromSnapshot):
// its findings are the snapshot's, judged once at the publish, and its
// warnings the snapshot's typed ones, worded by collector.WarningText.
// Rendering is pure: the same Report gives byte-identical output. Names that
// come from the input (apps, instances, resources, rule versions) are
// untrusted: Text escapes control characters, escape sequences, bidi and
// other invisible format characters (see Sanitize); Markdown prints them as
// code spans or inside fenced code blocks sized to their content, so they
// can neither inject HTML nor Markdown.
package report
