package jsonref

import "github.com/sentinel-top/sentinel-top/core"

// Buckets is a buckets message (wire-v1), as encoding/json fills it.
type Buckets struct {
	V        int    `json:"v"`
	Kind     string `json:"kind"`
	Ts       int64  `json:"ts"`
	Instance string `json:"instance"`
	BucketMs int64  `json:"bucketMs"`
	Items    []Item `json:"items"`
	Dropped  int64  `json:"dropped"`
}

// Item is one item of a buckets message.
type Item struct {
	Resource    string                      `json:"resource"`
	Start       int64                       `json:"start"`
	Pass        int64                       `json:"pass"`
	Block       int64                       `json:"block"`
	Complete    int64                       `json:"complete"`
	Error       int64                       `json:"error"`
	Slow        int64                       `json:"slow"`
	RtSum       int64                       `json:"rtSum"`
	RtMin       int64                       `json:"rtMin"`
	RtMax       int64                       `json:"rtMax"`
	Concurrency int64                       `json:"concurrency"`
	RtHist      *[core.HistogramSlots]int64 `json:"rtHist,omitempty"`
}
