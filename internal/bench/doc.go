// Package bench is the harness of `sentinel-top bench`: it measures the
// collector at fleet scale on one machine. It owns the whole run: the
// agents' child processes (this executable run again as AgentsCommand)
// and the line protocol it speaks with them over their pipes, the agents
// and their traffic, the count of what they write on the wire (frames.go),
// the collector that dials them, the measured window (ingest, CPU,
// memory, the latency from a breaker transition to the snapshot showing
// it), the accounting of every call made, and the results' text.
//
// Run is the run and Config what it measures; RunAgents is an agents'
// process. The command's flags, its usage text and its exit codes are the
// program's (cmd/sentinel-top), which calls them.
//
// It sits under internal/, not collector/: it runs agents (package agent),
// which the collector's packages never import, and it is a tool of this
// program, not an API.
package bench
