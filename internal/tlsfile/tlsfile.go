package tlsfile

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ErrNoCertificates is ClientCA's error, wrapped after the file's name,
// for a file that holds no PEM certificate.
var ErrNoCertificates = errors.New("no PEM certificates in it")

// ErrHalfPair is Server's error when it is given a certificate file or a
// key file without the other.
var ErrHalfPair = errors.New("a certificate and its key go together")

// ClientCA is the TLS configuration of a client trusting the certificates
// of the PEM file at path alone, in place of the system's roots; nil (and
// no error) for no path. A file that cannot be read is os.ReadFile's
// error; one without a certificate wraps ErrNoCertificates.
func ClientCA(path string) (*tls.Config, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoCertificates)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Server is the TLS configuration of a server presenting the certificate
// (chain) of certFile with the private key of keyFile, both PEM; nil (and
// no error) when both are empty. One without the other is ErrHalfPair;
// files that cannot be read, or do not make a pair, are
// tls.LoadX509KeyPair's error.
func Server(certFile, keyFile string) (*tls.Config, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, ErrHalfPair
	}
	if certFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
