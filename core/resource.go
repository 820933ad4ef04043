package core

// The statistic every guarded resource keeps, as sentinel-golang's resource
// node does: 20 buckets of 500 ms over 10 s. Flow rules read the last second
// of it, and the agent ships its closed 500 ms buckets.
const (
	ResourceSampleCount = 20
	ResourceIntervalMs  = 10000
	ResourceBucketMs    = ResourceIntervalMs / ResourceSampleCount
)

// NewResourceWindow returns a resource statistic window.
func NewResourceWindow() *MetricWindow {
	w, err := NewMetricWindow(ResourceSampleCount, ResourceIntervalMs)
	if err != nil {
		panic(err) // constants above are valid
	}
	return w
}
