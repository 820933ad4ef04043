package pagepool_test

import (
	"fmt"

	"github.com/sentinel-top/sentinel-top/internal/pagepool"
)

// A log of records in 4 KiB pages, within 1 MiB: a page is taken when
// the last one is full, and given back when the log drops it.
func Example() {
	pool := pagepool.New(4096, 1<<20)
	defer pool.Release()

	page := pool.Get()
	page = append(page, "a record"...)
	fmt.Println(len(page), cap(page), string(page))

	pool.Put(page) // dropped: nothing touches page after this
	st := pool.Stats()
	fmt.Println("out", st.Out, "free", st.Free)
	// Output:
	// 8 4096 a record
	// out 0 free 1
}
