// Package promapi reads a Prometheus server's HTTP API (/api/v1) for the
// tests that run a real Prometheus and for the bench harness beside it:
// an answer's status checked and its size bounded, and the results of
// instant and range queries as labels and values.
//
// It is not the collector's Prometheus source (collector/source), which
// reads counters into wire messages under its own limits and options.
package promapi
