package tlsfile_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sentinel-top/sentinel-top/internal/tlsfile"
)

// A server's certificate and key, and a client trusting that certificate
// alone; a file of no certificate is told apart from one not read.
func Example() {
	dir, err := os.MkdirTemp("", "tlsfile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	certFile, keyFile, err := writePair(dir) // a self-signed certificate for 127.0.0.1
	if err != nil {
		log.Fatal(err)
	}

	server, err := tlsfile.Server(certFile, keyFile)
	if err != nil {
		log.Fatal(err)
	}
	client, err := tlsfile.ClientCA(certFile)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(server.Certificates), "certificate served;", client.RootCAs != nil)

	none, err := tlsfile.ClientCA("") // no --ca: the system's roots
	fmt.Println(none == nil, err)

	_, err = tlsfile.ClientCA(keyFile)
	fmt.Println(errors.Is(err, tlsfile.ErrNoCertificates), filepath.Base(err.Error()))
	_, err = tlsfile.Server(certFile, "")
	fmt.Println(err)
	// Output:
	// 1 certificate served; true
	// true <nil>
	// true key.pem: no PEM certificates in it
	// a certificate and its key go together
}
