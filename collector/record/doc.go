// Package record opens, creates and closes the files that hold recordings
// and fixtures (spec/wire-v1.md: NDJSON, one wire message per line,
// .ndjson or .ndjson.gz). The format itself, encoding, decoding, file:line
// positions and the bounds on what is read, is core/wire's; this package is
// what sits between it and the file system.
//
// Open returns a Reader of a file: a wire.Reader over it, whose Close
// closes the file. Create returns a Writer to a new file: a wire.Writer to
// it, gzip-compressed when the name ends in .gz, whose Close ends the
// stream and closes the file. Create never writes through a symbolic link
// (O_NOFOLLOW where the system has it), so a link planted where a
// recording goes cannot make it truncate another file, and it refuses a
// path that is already there unless told to overwrite it (ErrExists).
// Start is Create followed by the recording's first line, its meta.
// A Writer tells of the first write to its file that fails (a full disk,
// a size limit) as it happens: Failed is closed and Err says why, so that
// a recording that stopped is said at once rather than when it ends.
//
// Gzip stays in core/wire, on both sides. Reading, it is recognised by its
// magic bytes and not by a name, because a fixture arrives through streams
// that have no file behind them, or none with a telling name: a pipe or
// <(zcat ...), the spool a replay copies such a stream to, a fixture built
// into the binary. wire.NewReader decodes all of them alike, and the
// replay's later passes read what the first one read. Writing, the
// compression must sit inside the wire.Writer so that its Flush (the
// collector flushes its recording every second) writes a gzip block
// through; the file name only chooses between wire.NewWriter and
// wire.NewGzipWriter, and that choice is made here.
package record
