package jsonref_test

import (
	"encoding/json"
	"fmt"

	"github.com/sentinel-top/sentinel-top/internal/jsonref"
)

func Example() {
	line := `{"v":1,"kind":"buckets","ts":1764460800512,"instance":"gateway-3","bucketMs":500,
	 "items":[{"resource":"priceService:queryPrice","start":1764460800000,"pass":11,"block":2,
	 "complete":11,"error":0,"slow":3,"rtSum":1480,"rtMin":12,"rtMax":402,"concurrency":4,
	 "rtHist":[0,0,1,2,3,1,0,1,3,0,0,0,0,0]}]}`
	var m jsonref.Buckets
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		fmt.Println(err)
		return
	}
	it := m.Items[0]
	fmt.Println(m.Instance, it.Resource, it.Pass, it.Slow, it.RtHist[4])
	// Output: gateway-3 priceService:queryPrice 11 3 3
}
