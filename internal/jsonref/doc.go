// Package jsonref holds the structs a decoder of the wire's buckets
// messages built on encoding/json would fill: the wire field names, no
// methods of their own. They are the reference the wire's Decoder is
// measured against, in core/wire's benchmarks and in `sentinel-top
// bench`, where the same run times json.Unmarshal into them on the same
// machine (docs/BENCHMARKS.md).
package jsonref
