// Package cliflag holds the flag values and plumbing sentinel-top's
// commands share: sizes written as 512MiB or 2GiB (Bytes), values given
// comma-separated or by repeating the flag (List), and every flag not on
// the command line taken from the environment (FromEnv).
package cliflag
