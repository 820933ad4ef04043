package promapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/promapi"
)

// server answers the API's paths as Prometheus does, from answers by
// path.
func server(t *testing.T, answers map[string]string) promapi.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.Contains(a, `"error"`) {
			w.WriteHeader(http.StatusBadRequest)
		}
		w.Write([]byte(a))
	}))
	t.Cleanup(srv.Close)
	return promapi.Client{HTTP: srv.Client(), Base: srv.URL}
}

// The results of instant and range queries come back as labels, times and
// values; an error answer, another kind of result or a value that is no
// number are errors, their text sanitized.
func TestVectorAndRange(t *testing.T) {
	c := server(t, map[string]string{
		"/api/v1/query": `{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"job":"demo"},"value":[1764547200.5,"3"]},{"metric":{"job":"replay"},"value":[1764547200.5,"1.5"]}]}}`,
		"/api/v1/query_range": `{"status":"success","data":{"resultType":"matrix","result":[` +
			`{"metric":{"pid":"7"},"values":[[1764547200,"10"],[1764547201.25,"12"]]}]}}`,
	})
	v, err := c.Vector("up")
	if err != nil || len(v) != 2 || v[0].Labels["job"] != "demo" || v[0].Value != 3 || v[1].Value != 1.5 {
		t.Fatalf("vector %+v, %v", v, err)
	}
	r, err := c.Range("x", time.Unix(1764547200, 0), time.Unix(1764547202, 0), time.Second)
	if err != nil || len(r) != 1 || len(r[0].Points) != 2 {
		t.Fatalf("range %+v, %v", r, err)
	}
	if p := r[0].Points[1]; !p.At.Equal(time.UnixMilli(1764547201250)) || p.Value != 12 || r[0].Labels["pid"] != "7" {
		t.Errorf("second point %+v of %v", p, r[0].Labels)
	}

	bad := server(t, map[string]string{
		"/api/v1/query":       `{"status":"error","errorType":"bad_data","error":"parse error \u001b[2J here"}`,
		"/api/v1/query_range": `{"status":"success","data":{"resultType":"vector","result":[]}}`,
	})
	_, err = bad.Vector("(")
	if err == nil || strings.Contains(err.Error(), "\x1b") || !strings.Contains(err.Error(), "parse error") {
		t.Errorf("an error answer: %q", err)
	}
	if _, err := bad.Range("x", time.Unix(0, 0), time.Unix(1, 0), time.Second); err == nil || !strings.Contains(err.Error(), "want a matrix") {
		t.Errorf("a vector asked as a range: %v", err)
	}
	nan := server(t, map[string]string{"/api/v1/query": `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"many"]}]}}`})
	if _, err := nan.Vector("x"); err == nil || !strings.Contains(err.Error(), `"many"`) {
		t.Errorf("a value that is no number: %v", err)
	}
	if err := c.Get("/api/v1/nowhere", nil, new(any)); err == nil {
		t.Error("a path the server does not have: no error")
	}
}

func TestUnix(t *testing.T) {
	if got := promapi.Unix(time.UnixMilli(1764547201250)); got != "1764547201.250" {
		t.Errorf("Unix = %s", got)
	}
}
