package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// gen makes random valid messages of every kind from a seed.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

// hostileNames are resource names real and nasty: every byte that needs
// escaping, separators of URLs and Sentinel resources, CJK, emoji, the
// replacement character itself, JavaScript line separators, and things
// that look like escapes but are not.
var hostileNames = []string{
	"GET:http://member-service/api/user/info",
	"priceService:queryPrice",
	`quo"te`, `back\slash`, `\u0041 not an escape`, `\"`, `\\\\`,
	"ctl\x00\x01\x02\x1f\x7f", "tab\tnew\nline\rcr\bbs\fff",
	"path/with spaces?q=1&r=<2>", "订单服务:创建订单", "データベース/クエリ",
	"emoji 🔥💥", "\uFFFD", "\u2028\u2029", "\x1b[31mred\x1b[0m",
	"\u00e9\u0301", "ſ K", strings.Repeat("x", 1024), strings.Repeat("é", 512),
	" ", "{", "}", "[", "]", ",", ":", "null", "true", "1",
}

func (g *gen) name() string {
	switch g.r.IntN(4) {
	case 0:
		return hostileNames[g.r.IntN(len(hostileNames))]
	case 1:
		return g.randString(1 + g.r.IntN(40))
	default:
		return fmt.Sprintf("svc-%d:/api/v%d/op%d", g.r.IntN(20), g.r.IntN(3), g.r.IntN(50))
	}
}

// randString draws runes from ranges that stress escaping.
func (g *gen) randString(n int) string {
	var b strings.Builder
	for b.Len() < n {
		switch g.r.IntN(6) {
		case 0:
			b.WriteByte(byte(g.r.IntN(0x20)))
		case 1:
			b.WriteByte(`"\/:?& {}[],`[g.r.IntN(12)])
		case 2:
			b.WriteRune(rune(0x80 + g.r.IntN(0x780)))
		case 3:
			b.WriteRune(rune(0x4e00 + g.r.IntN(0x5000)))
		case 4:
			b.WriteRune(rune(0x10000 + g.r.IntN(0x10000)))
		default:
			b.WriteByte(byte(0x20 + g.r.IntN(0x5f)))
		}
	}
	s := b.String()
	for len(s) > 1024 {
		s = string([]rune(s)[:len([]rune(s))-1])
	}
	return s
}

func (g *gen) text() string {
	if g.r.IntN(3) == 0 {
		return ""
	}
	return g.randString(g.r.IntN(200))
}

func (g *gen) ts() int64 {
	switch g.r.IntN(5) {
	case 0:
		return 0
	case 1:
		return MaxTimeMs
	default:
		return 1764460800000 + g.r.Int64N(1e9)
	}
}

func (g *gen) count() int64 {
	switch g.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return math.MaxInt64 / 4
	default:
		return g.r.Int64N(10000)
	}
}

func (g *gen) header() Header {
	return Header{Ts: g.ts(), Instance: g.name()}
}

func (g *gen) meta() *Meta {
	m := &Meta{Header: Header{Ts: g.ts()}, Title: g.text(), Description: g.text(), RecordedBy: g.text()}
	if g.r.IntN(2) == 0 {
		m.Instance = g.name()
	}
	if g.r.IntN(2) == 0 {
		m.Extra = map[string]json.RawMessage{}
		for range 1 + g.r.IntN(3) {
			v, _ := json.Marshal(map[string]any{"finding": g.text(), "n": g.r.IntN(100), "ok": true, "list": []int{1, 2}})
			m.Extra[fmt.Sprintf("x%d-%s", g.r.IntN(100), g.randString(3))] = v
		}
	}
	return m
}

func (g *gen) hello() *Hello {
	return &Hello{Header: g.header(), App: g.text(), Host: g.text(), Pid: g.count(), StartedAt: g.ts(),
		SDK: g.text(), BucketMs: 1 + g.r.Int64N(MaxBucketMs)}
}

func (g *gen) float(max float64) float64 {
	switch g.r.IntN(5) {
	case 0:
		return 0
	case 1:
		return max
	case 2:
		return 1e-9 * g.r.Float64()
	default:
		return g.r.Float64() * max
	}
}

func (g *gen) rules() *Rules {
	m := &Rules{Header: g.header()}
	for range g.r.IntN(5) {
		r := core.BreakerRule{
			Resource: g.name(), Strategy: core.Strategy(g.r.IntN(3)), RetryTimeoutMs: 1 + g.r.Uint32N(60000),
			MinRequestAmount: g.r.Uint64N(1 << 60), StatIntervalMs: 1 + g.r.Uint32N(60000),
			StatSlidingWindowBucketCount: g.r.Uint32N(10), MaxAllowedRtMs: g.r.Uint64N(1 << 62), ProbeNum: g.r.Uint64N(5),
		}
		if g.r.IntN(3) == 0 {
			r.ID = g.name()
		}
		if g.r.IntN(4) == 0 {
			r.Semantics = core.SemanticsJava
			r.LimitApp = g.limitApp()
		}
		if r.Strategy.IsRatio() {
			r.Threshold = g.float(1)
		} else {
			r.Threshold = math.Floor(g.float(1000))
		}
		m.Breakers = append(m.Breakers, r)
	}
	for range g.r.IntN(5) {
		r := core.FlowRule{
			Resource: g.name(), TokenCalculateStrategy: core.TokenCalculateStrategy(g.r.IntN(2)),
			ControlBehavior: core.ControlBehavior(g.r.IntN(2)), Threshold: g.float(1e6),
			MaxQueueingTimeMs: g.r.Uint32(), WarmUpPeriodSec: 1 + g.r.Uint32N(100), WarmUpColdFactor: 2 + g.r.Uint32N(5),
			StatIntervalInMs: g.r.Uint32(),
		}
		if g.r.IntN(3) == 0 {
			r.ID = g.name()
		}
		if g.r.IntN(3) == 0 {
			r.LimitApp = g.limitApp()
		}
		m.Flows = append(m.Flows, r)
	}
	for range g.r.IntN(4) {
		m.Params = append(m.Params, g.param())
	}
	m.Version = RulesVersion(m.Breakers, m.Flows, m.Params...)
	return m
}

func (g *gen) limitApp() string {
	switch g.r.IntN(3) {
	case 0:
		return "default"
	case 1:
		return "other"
	}
	return g.name()
}

// param makes a valid hot-parameter rule.
func (g *gen) param() core.HotParamRule {
	r := core.HotParamRule{
		Resource: g.name(), MetricType: core.HotParamMetric(g.r.IntN(2)),
		ControlBehavior: core.ControlBehavior(g.r.IntN(2)), ParamIndex: g.r.IntN(5) - 2,
		Threshold: g.count(), BurstCount: g.r.Int64N(100), MaxQueueingTimeMs: g.r.Int64N(1000),
		ParamsMaxCapacity: g.r.Int64N(30000) - 10,
	}
	if r.MetricType == core.HotParamQPS || g.r.IntN(4) == 0 {
		r.DurationInSec = 1 + g.r.Int64N(60)
	}
	if r.ParamIndex <= 0 && g.r.IntN(3) == 0 {
		r.ParamKey = g.name()
	}
	if g.r.IntN(3) == 0 {
		r.ID = g.name()
	}
	if n := g.r.IntN(4); n > 0 {
		r.SpecificItems = make(map[string]int64, n)
		for range n {
			r.SpecificItems[g.text()] = g.count()
		}
	}
	return r
}

func (g *gen) item(bucketMs int64) BucketItem {
	it := BucketItem{
		Resource: g.name(),
		Start:    (g.ts() / bucketMs) * bucketMs,
		Metrics:  core.Metrics{Pass: g.count(), Block: g.count(), Concurrency: g.count()},
	}
	if g.r.IntN(4) > 0 {
		it.Complete = 1 + g.r.Int64N(10000)
		it.Error = g.r.Int64N(it.Complete + 1)
		it.Slow = g.r.Int64N(it.Complete + 1)
		it.RtMin = g.r.Int64N(1000)
		it.RtMax = it.RtMin + g.r.Int64N(30000)
		it.RtSum = it.RtMax + g.r.Int64N(1e9)
	}
	if g.r.IntN(3) > 0 {
		var h [core.HistogramSlots]int64
		for i := range h {
			h[i] = g.r.Int64N(1000)
		}
		it.Hist, it.HasHist = h, true
	}
	if g.r.IntN(3) == 0 {
		n := 1 + g.r.IntN(MaxHotValues)
		for range n {
			it.Hot = append(it.Hot, HotItem{Param: int64(g.r.IntN(4) - 1), Value: CutHotValue(g.name()), Pass: g.count(), Block: g.count()})
		}
		if g.r.IntN(2) == 0 {
			it.Hot = append(it.Hot, HotItem{Value: HotOther, Pass: g.count(), Block: g.count()})
		}
	}
	return it
}

func (g *gen) buckets() *Buckets {
	m := &Buckets{Header: g.header(), BucketMs: []int64{1, 500, 1000, 3, MaxBucketMs}[g.r.IntN(5)]}
	n := g.r.IntN(20)
	if g.r.IntN(10) == 0 {
		n = 0 // heartbeat
	}
	for range n {
		m.Items = append(m.Items, g.item(m.BucketMs))
	}
	if g.r.IntN(4) == 0 {
		m.Dropped = g.count()
	}
	return m
}

func (g *gen) state() *State {
	trans := [][2]core.State{{core.Closed, core.Open}, {core.Open, core.HalfOpen}, {core.HalfOpen, core.Open}, {core.HalfOpen, core.Closed}}
	t := trans[g.r.IntN(len(trans))]
	m := &State{Header: g.header(), Resource: g.name(), Strategy: core.Strategy(g.r.IntN(3)), From: t[0], To: t[1],
		Threshold: g.float(100), RetryTimeoutMs: g.r.Int64N(math.MaxUint32 + 1)}
	if g.r.IntN(3) == 0 {
		m.RuleID = g.name()
	}
	if t[0] == core.Closed || g.r.IntN(5) == 0 {
		m.Snapshot = &Snapshot{Total: g.count(), Slow: g.count(), Error: g.count(), Value: g.float(1)}
	}
	if t[0] == core.HalfOpen || g.r.IntN(5) == 0 {
		m.Probe = &Probe{RtMs: g.count(), Error: g.r.IntN(2) == 0}
	}
	m.Inferred = g.r.IntN(4) == 0
	return m
}

func (g *gen) bye() *Bye {
	return &Bye{Header: g.header(), Reason: g.text()}
}

func (g *gen) message() Message {
	switch g.r.IntN(8) {
	case 0:
		return g.meta()
	case 1:
		return g.hello()
	case 2:
		return g.rules()
	case 3:
		return g.state()
	case 4:
		return g.bye()
	default:
		return g.buckets()
	}
}

// normalize makes empty and nil slices and maps alike, as JSON cannot tell
// them apart.
func normalize(m Message) Message {
	if m == nil {
		return nil
	}
	m = Clone(m)
	switch m := m.(type) {
	case *Buckets:
		if len(m.Items) == 0 {
			m.Items = nil
		}
	case *Rules:
		if len(m.Breakers) == 0 {
			m.Breakers = nil
		}
		if len(m.Flows) == 0 {
			m.Flows = nil
		}
		if len(m.Params) == 0 {
			m.Params = nil
		}
		for i := range m.Params {
			if len(m.Params[i].SpecificItems) == 0 {
				m.Params[i].SpecificItems = nil
			}
		}
	case *Meta:
		if len(m.Extra) == 0 {
			m.Extra = nil
		}
	}
	return m
}
