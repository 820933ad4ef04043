// Package collector turns wire v1 streams into a diagnosis. It dials
// instrumented services (--targets), replays recorded fixtures on a virtual
// clock, validates and deduplicates what arrives, aggregates it per instance
// and per app x resource with bounded retention, keeps every breaker
// transition on a timeline, and runs the triage engine over all of it.
//
// What it knows is published as an immutable Snapshot at a fixed rate (4 per
// second by default): the one seam between data and presentation. The UI
// renders the latest snapshot and asks for a Detail of one resource when it
// shows one; the report command reads the findings at the end of the input;
// the recorder writes every accepted message back out as a fixture.
package collector
