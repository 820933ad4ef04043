package serveapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/internal/serveapi"
)

// The routes of serve over a collector, on a loopback server: /report
// needs the token, /healthz does not.
func ExampleHandler() {
	c := collector.New(collector.Options{Source: "example"})
	c.Publish()
	stream := c.Restream(collector.RestreamOptions{})
	defer stream.Close(nil)
	srv := httptest.NewServer(serveapi.Handler(serveapi.Options{Collector: c, Source: "example", Stream: stream, Token: "t0ken"}))
	defer srv.Close()

	for _, path := range []string{"/healthz", "/report"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %s", path, resp.StatusCode, body)
	}
	// Output:
	// /healthz 200 ok
	// /report 401 401 unauthorized: a valid bearer token is required
}
