// Package tlsfile loads the TLS configurations sentinel-top's commands
// take from PEM files: the certificate authority a client trusts for the
// wss:// and https:// servers it reaches (ClientCA, --ca), and a server's
// certificate and key (Server, serve's --tls-cert and --tls-key). Both
// speak TLS 1.2 at least. An empty name means no file: nil and no error,
// the caller's default (the system's roots, or plain text).
//
// A file that reads but holds no certificate is ErrNoCertificates, and a
// certificate without its key (or a key without its certificate) is
// ErrHalfPair, so that the caller can call them the user's mistake rather
// than a failure to read.
package tlsfile
