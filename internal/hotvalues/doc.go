// Package hotvalues counts a resource's entries by the parameter values
// its hot-parameter rules read, bucket by bucket, and gives each closed
// bucket's hot values as wire v1 sends them: the values with the most
// entries (pass and block each), at most wire.MaxHotValues, the rest
// summed in one wire.HotOther item. A Tracker is bounded (TrackedValues
// distinct values per bucket, ClosedBuckets closed buckets) and keeps
// nothing of an entry's parameters: counting a value already seen does not
// allocate. The agent and the sentinel-golang adapter both use it.
package hotvalues
