//go:build !linux

package pagepool

// OutsideHeap says whether a pool's pages are outside the Go heap on this
// system (in its own mapping), where no Go memory limit counts them.
const OutsideHeap = false

// mapPages maps nothing here: pages come from the Go heap.
func mapPages(int) []byte { return nil }

func unmapPages([]byte) error { return nil }
