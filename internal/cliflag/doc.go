// Package cliflag holds the flag values and plumbing sentinel-top's
// commands share: sizes written as 512MiB or 2GiB (Bytes), values given
// comma-separated or by repeating the flag (List), durations that say
// whether they were given (Duration), points in time written as RFC 3339
// or relative to now (ParseWhen), a replay's speed (ParseSpeed), flags
// whose value may be left out (OptionalValue), and every flag not on the
// command line taken from the environment (FromEnv).
package cliflag
