package promapi

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

// MaxAnswerBytes bounds one answer read.
const MaxAnswerBytes = 64 << 20

// Client asks one server.
type Client struct {
	HTTP *http.Client
	Base string // http://host:port
}

// Get asks path with params and decodes the data of a successful answer
// into data; an answer that is not one is an error saying why, its text
// sanitized.
func (c Client) Get(path string, params url.Values, data any) error {
	u := c.Base + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	resp, err := c.HTTP.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxAnswerBytes)).Decode(&r); err != nil {
		return fmt.Errorf("%s: %s: %w", path, resp.Status, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, termtext.Sanitize(r.Error, 200))
	}
	return json.Unmarshal(r.Data, data)
}

// Sample is one series' value of an instant query.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Vector runs the instant query q.
func (c Client) Vector(q string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := c.Get("/api/v1/query", url.Values{"query": {q}}, &data); err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: result %s, want a vector", q, termtext.Sanitize(data.ResultType, 40))
	}
	out := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		v, err := value(r.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
		out = append(out, Sample{r.Metric, v})
	}
	return out, nil
}

// Point is one step of a range query's series.
type Point struct {
	At    time.Time
	Value float64
}

// Series is one series of a range query, its points in time order.
type Series struct {
	Labels map[string]string
	Points []Point
}

// Range runs q as a range query over [start, end] at step.
func (c Client) Range(q string, start, end time.Time, step time.Duration) ([]Series, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	params := url.Values{"query": {q}, "start": {Unix(start)}, "end": {Unix(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	if err := c.Get("/api/v1/query_range", params, &data); err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	if data.ResultType != "matrix" {
		return nil, fmt.Errorf("%s: result %s, want a matrix", q, termtext.Sanitize(data.ResultType, 40))
	}
	out := make([]Series, 0, len(data.Result))
	for _, r := range data.Result {
		s := Series{Labels: r.Metric, Points: make([]Point, 0, len(r.Values))}
		for _, p := range r.Values {
			at, ok := p[0].(float64)
			if !ok {
				return nil, fmt.Errorf("%s: a point's time %v", q, p[0])
			}
			v, err := value(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q, err)
			}
			s.Points = append(s.Points, Point{time.UnixMilli(int64(math.Round(at * 1000))), v})
		}
		out = append(out, s)
	}
	return out, nil
}

// value reads the value of a [time, "value"] pair.
func value(p [2]any) (float64, error) {
	s, _ := p[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q: %w", termtext.Sanitize(fmt.Sprint(p[1]), 40), err)
	}
	return v, nil
}

// Unix is t as the API takes a time: Unix seconds, to the millisecond.
func Unix(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}
