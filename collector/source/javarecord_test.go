package source

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
)

// javaExchange is one recorded request to a Java transport command API:
// when it was asked (the recorder's clock, Unix ms), what, and the answer.
type javaExchange struct {
	At     int64  `json:"at"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// TestRecordJavaTransport records a running Java Sentinel's transport API
// the way the poller reads it (/metric every second from the first second
// not seen yet, the rules every 5 s, the hot-parameter rules from the path
// that answered last, else from each of javaParamPaths in turn), for
// collector/testdata/java. It runs
// only when SENTINEL_TOP_RECORD_JAVA names the API (HOST:PORT) and
// SENTINEL_TOP_RECORD_OUT the file to write; SENTINEL_TOP_RECORD_SECONDS
// bounds it (default 60).
func TestRecordJavaTransport(t *testing.T) {
	addr, out := os.Getenv("SENTINEL_TOP_RECORD_JAVA"), os.Getenv("SENTINEL_TOP_RECORD_OUT")
	if addr == "" || out == "" {
		t.Skip("SENTINEL_TOP_RECORD_JAVA and SENTINEL_TOP_RECORD_OUT not set")
	}
	seconds, _ := strconv.Atoi(os.Getenv("SENTINEL_TOP_RECORD_SECONDS"))
	if seconds <= 0 {
		seconds = 60
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	client := &http.Client{Timeout: 5 * time.Second}
	ok := false // whether the last get was answered with HTTP 200
	get := func(path string) string {
		at := time.Now().UnixMilli()
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			enc.Encode(javaExchange{At: at, Path: path, Body: err.Error()})
			ok = false
			return ""
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		enc.Encode(javaExchange{At: at, Path: path, Status: resp.StatusCode, Body: string(body)})
		ok = resp.StatusCode == http.StatusOK
		return string(body)
	}
	paramPath := 0
	get("/version")
	get("/basicInfo")
	next := (time.Now().UnixMilli() - javaBacklog.Milliseconds()) / 1000 * 1000
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	rulesDue := time.Time{}
	tk := time.NewTicker(JavaMetricEvery)
	defer tk.Stop()
	for now := time.Now(); now.Before(end); now = <-tk.C {
		if !now.Before(rulesDue) {
			rulesDue = now.Add(JavaRulesEvery)
			get("/getRules?type=degrade")
			get("/getRules?type=flow")
			for k := range javaParamPaths {
				i := (paramPath + k) % len(javaParamPaths)
				if get(javaParamPaths[i]); ok {
					paramPath = i
					break
				}
			}
		}
		body := get("/metric?startTime=" + strconv.FormatInt(next, 10) + "&endTime=" + strconv.FormatInt(now.UnixMilli()+javaEndSlack.Milliseconds(), 10))
		for _, line := range strings.Split(body, "\n") {
			if l, err := metriclog.ParseThin(line); err == nil && !metriclog.Internal(l.Resource) && l.Timestamp >= next {
				next = l.Timestamp - l.Timestamp%1000 + 1000
			}
		}
	}
}
