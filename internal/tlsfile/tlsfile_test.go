package tlsfile_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/tlsfile"
)

// writePair writes a new self-signed certificate for 127.0.0.1 and
// localhost, and its key, as PEM files in dir.
func writePair(dir string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "collector-a"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// files writes a pair, a second one of another key, a file of no PEM and
// an empty file into a new directory.
func files(t *testing.T) (cert, key, otherKey, noPEM, empty string) {
	t.Helper()
	dir := t.TempDir()
	cert, key, err := writePair(dir)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, otherKey, err = writePair(other); err != nil {
		t.Fatal(err)
	}
	noPEM, empty = filepath.Join(dir, "notes.txt"), filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(noPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key, otherKey, noPEM, empty
}

func TestClientCA(t *testing.T) {
	cert, key, _, noPEM, empty := files(t)
	missing := filepath.Join(filepath.Dir(cert), "missing.pem")
	for _, tc := range []struct {
		name, path string
		want       error  // errors.Is, nil for none
		msg        string // the error's text, when want is set
		config     bool
	}{
		{name: "none", path: ""},
		{name: "a certificate", path: cert, config: true},
		{name: "no PEM", path: noPEM, want: tlsfile.ErrNoCertificates, msg: noPEM + ": no PEM certificates in it"},
		{name: "empty", path: empty, want: tlsfile.ErrNoCertificates, msg: empty + ": no PEM certificates in it"},
		{name: "a key alone", path: key, want: tlsfile.ErrNoCertificates, msg: key + ": no PEM certificates in it"},
		{name: "missing", path: missing, want: fs.ErrNotExist, msg: "open " + missing + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := tlsfile.ClientCA(tc.path)
			switch {
			case tc.want != nil && (!errors.Is(err, tc.want) || err.Error() != tc.msg):
				t.Fatalf("error %v, want %q (%v)", err, tc.msg, tc.want)
			case tc.want == nil && err != nil:
				t.Fatal(err)
			case tc.want == fs.ErrNotExist && errors.Is(err, tlsfile.ErrNoCertificates):
				t.Fatalf("a file not read is %v", err)
			case (conf != nil) != tc.config:
				t.Fatalf("config %v, want one: %t", conf, tc.config)
			}
			if conf != nil && (conf.RootCAs == nil || conf.MinVersion != tls.VersionTLS12 || conf.Certificates != nil) {
				t.Errorf("config %+v", conf)
			}
		})
	}
}

func TestServer(t *testing.T) {
	cert, key, otherKey, noPEM, _ := files(t)
	missing := filepath.Join(filepath.Dir(cert), "missing.pem")
	for _, tc := range []struct {
		name, cert, key string
		want            error // errors.Is; errAny for any other
		config          bool
	}{
		{name: "none"},
		{name: "a pair", cert: cert, key: key, config: true},
		{name: "a certificate alone", cert: cert, want: tlsfile.ErrHalfPair},
		{name: "a key alone", key: key, want: tlsfile.ErrHalfPair},
		{name: "another's key", cert: cert, key: otherKey, want: errAny},
		{name: "swapped", cert: key, key: cert, want: errAny},
		{name: "no PEM", cert: noPEM, key: noPEM, want: errAny},
		{name: "missing certificate", cert: missing, key: key, want: fs.ErrNotExist},
		{name: "missing key", cert: cert, key: missing, want: fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := tlsfile.Server(tc.cert, tc.key)
			switch {
			case tc.want == nil && err != nil:
				t.Fatal(err)
			case tc.want != nil && err == nil:
				t.Fatalf("no error, want %v", tc.want)
			case tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.want != tlsfile.ErrHalfPair && errors.Is(err, tlsfile.ErrHalfPair):
				t.Fatalf("error %v: both files were given", err)
			case (conf != nil) != tc.config:
				t.Fatalf("config %v, want one: %t", conf, tc.config)
			}
			if conf != nil && (len(conf.Certificates) != 1 || conf.MinVersion != tls.VersionTLS12 || conf.RootCAs != nil) {
				t.Errorf("config %+v", conf)
			}
		})
	}
}

var errAny = errors.New("any error")

// TestHandshake: a client of ClientCA's configuration reaches a server of
// Server's over TLS when the file is the server's certificate, and not
// when it trusts the system's roots instead.
func TestHandshake(t *testing.T) {
	cert, key, _, _, _ := files(t)
	serverConf, err := tlsfile.Server(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.TLS = serverConf
	srv.StartTLS()
	defer srv.Close()
	caConf, err := tlsfile.ClientCA(cert)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		conf *tls.Config
		ok   bool
	}{
		{"the server's certificate trusted", caConf, true},
		{"the system's roots", &tls.Config{MinVersion: tls.VersionTLS12}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc.conf}, Timeout: 10 * time.Second}
			defer client.CloseIdleConnections()
			resp, err := client.Get(srv.URL)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != "ok" {
					t.Errorf("body %q", body)
				}
			}
			if (err == nil) != tc.ok {
				t.Errorf("error %v, want success: %t", err, tc.ok)
			}
		})
	}
}
