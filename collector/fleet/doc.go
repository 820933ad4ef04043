// Package fleet holds the records of the fleet model that every view and
// every detector reads: an emitting process's identity, liveness and the
// spans of its history that are not known. The store (package collector)
// alone writes them, once, as it decides what each message means; triage's
// detectors and the views read them and keep no copy of their own, so no
// two of them can disagree about which process is there, when it started
// or what never arrived.
package fleet
