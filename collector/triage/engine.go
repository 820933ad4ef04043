package triage

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/sentinel-top/sentinel-top/core"
)

// Thresholds of spec/findings-v1.md.
const (
	// SawtoothRun is the shortest run of failed probes that is a sawtooth.
	SawtoothRun = 3
	// HerdSize is the fewest instances entering HALF_OPEN together that make
	// a recovery flood; HerdWindowMs how close together they must be; and
	// HerdOccasions how often it must happen.
	HerdSize      = 3
	HerdWindowMs  = 1000
	HerdOccasions = 2
	// AdviceMinRequests is the fewest requests a statistic window should
	// hold, and AdviceRtFactor how far maxAllowedRtMs should sit above p99.
	AdviceMinRequests = 20
	AdviceRtFactor    = 2
)

// Defaults of Config.
const (
	DefaultStaleMs = 10_000
	DefaultGraceMs = 5_000
)

// Bounds of the state kept per breaker and per series.
const (
	timelineLen  = 64     // transitions kept per breaker
	spacingLen   = 32     // OPEN->OPEN spacings kept per breaker
	maxGapFillMs = 60_000 // silence between buckets still counted as idle traffic
	maxInterned  = 1 << 16
)

// Config tunes an Engine. The zero value gives the defaults.
type Config struct {
	// StaleMs is how long after its last evidence a condition still counts
	// as lasting to the end of the input, and how long an instance that said
	// bye keeps its place among its app's instances. 0 means DefaultStaleMs.
	StaleMs int64
	// GraceMs is how long rule drift or unprotected traffic must last
	// before it is reported, so that a rule push reaching the instances a
	// moment apart is not a finding. 0 means DefaultGraceMs.
	GraceMs int64
}

// BucketStat is one completed bucket of one resource on one instance (an
// item of a wire v1 "buckets" message).
type BucketStat struct {
	Resource string
	// Start is the bucket's start and BucketMs its length (<= 0 means
	// core.ResourceBucketMs).
	Start, BucketMs int64
	Pass, Block     int64
	Complete, Error int64
	Slow            int64
	RtSum, RtMax    int64
	// RtHist counts completions by response time (core.HistogramBounds);
	// it is read only when HasHist is set.
	RtHist  [core.HistogramSlots]int64
	HasHist bool
}

// Counts summarises what the engine has seen.
type Counts struct {
	Apps, Instances, Resources int
	// From and To are the earliest and latest time seen, Unix ms.
	From, To int64
}

// Engine turns wire-level facts, fed in time order, into findings. It keeps
// a bounded state per instance and resource and answers Findings from it
// without rescanning history. It is safe for concurrent use.
type Engine struct {
	mu  sync.Mutex
	cfg Config

	seen        bool
	first, last int64

	seq       int
	insts     map[string]*instState // current instance of each name
	instList  []*instState          // every instance ever, in creation order
	instNames map[string]struct{}
	apps      map[string]*appState
	appNames  map[string]struct{}
	res       map[string]*resState
	resNames  map[string]struct{}
	ars       map[arKey]*appRes
	keys      map[string]string // interned rule contents: equal contents, one string

	sawtooth []*breaker  // breakers that had a run of SawtoothRun failed probes
	herds    []*appRes   // app x resource with a counted recovery flood
	lows     []*appRes   // ... with a low-confidence trip
	drifts   []*appRes   // ... that had rule drift
	unprot   []*series   // series with unprotected traffic lasting GraceMs
	shared   []*resState // resources reported by two or more apps
	misalign []*appRes   // app x resource with a misaligned breaker window
}

type instState struct {
	name      string
	seq       int
	app       *appState
	startedAt int64
	helloSeen bool

	gone     bool
	goneAt   int64
	attached bool // counted among its app's instances (rule counts, drift, reporters)

	hasRules bool
	version  string
	rules    map[string]*resRules
	slow     []slowRef // slow-ratio breakers, by resource

	series     map[string]*series
	seriesList []*series
}

// alive reports whether the instance still counts as present at now: not
// gone, or gone no longer than StaleMs ago.
func (e *Engine) alive(in *instState, now int64) bool {
	return !in.gone || now-in.goneAt <= e.cfg.StaleMs
}

// end is when the instance's evidence stops: now, or when it said bye.
func (in *instState) end(now int64) int64 {
	if in.gone && in.goneAt < now {
		return in.goneAt
	}
	return now
}

type appState struct {
	name  string
	insts map[string]*instState // attached instances
	ars   map[string]*appRes    // by resource
}

type arKey struct{ app, resource string }

// appRes is the state of one resource within one app.
type appRes struct {
	app       *appState
	resource  string
	reporters map[*instState]struct{} // attached instances that sent buckets or transitions
	ruleCount int                     // attached instances with a rule for the resource
	ruledTo   int64                   // when ruleCount last fell to 0

	herd  herd
	low   lowConf
	drift drift
	mis   misaligned
}

type resState struct {
	name   string
	apps   map[string]struct{}
	insts  []*instState
	since  int64 // when a second app reported it
	last   int64
	listed bool
}

type resRules struct {
	breakers []core.BreakerRule
	flows    []core.FlowRule
	key      string // canonical content, for comparing instances
}

type slowRef struct {
	resource string
	rule     core.BreakerRule
}

// series is one resource on one instance.
type series struct {
	inst     *instState
	resource string
	ar       *appRes
	res      *resState

	hasBucket      bool
	lastStart      int64
	bucketMs       int64
	traffic        bool // some bucket passed entries
	firstAt, endAt int64
	pass           passHist
	rt             [core.HistogramSlots]int64
	rtMax          int64
	hasHist        bool

	up unprot

	breakers []*breaker
}

// open reports whether any breaker of the series is not CLOSED.
func (s *series) open() bool {
	for _, b := range s.breakers {
		if b.state != core.Closed {
			return true
		}
	}
	return false
}

type step struct {
	at       int64
	from, to core.State
}

// breaker follows one breaker (one resource and rule id on one instance).
type breaker struct {
	s      *series
	ruleID string
	state  core.State

	// The current run of failed probes.
	run      int64
	runStart int64 // first OPEN of the run, 0 if not seen
	lastOpen int64 // latest OPEN of the run, 0 if not seen
	pending  [SawtoothRun]int64
	npending int

	// Qualifying runs (>= SawtoothRun failed probes).
	listed      bool
	qualFrom    int64
	qualTo      int64
	maxRun      int64
	maxRunDur   int64
	maxRunRetry uint32
	retry       uint32
	spacings    [spacingLen]int64
	nspacing    int
	spacingHead int

	ring     [timelineLen]step
	nring    int
	ringHead int
}

type herd struct {
	active     bool
	counted    bool
	cMin, cMax int64
	members    []*instState

	occasions int64
	spread    int64
	maxSize   int
	from, to  int64
	last      []*instState
	ever      map[*instState]struct{}
	retry     uint32 // the retry timeout of the last counted occasion
	// clusterRetry is the retry timeout seen in the cluster being formed;
	// it becomes retry only if the cluster counts as an occasion.
	clusterRetry uint32
}

type lowConf struct {
	count       int64
	worst       Evidence
	worstMargin float64
	worstThr    float64
	from, to    int64
	insts       map[*instState]struct{}
}

type drift struct {
	listed    bool
	active    bool
	since     int64
	groups    []RuleGroup // while active
	peak      []RuleGroup // the groups holding the most instances in the episode
	reported  bool
	from, to  int64
	repGroups []RuleGroup
}

type misaligned struct {
	listed   bool
	rule     core.BreakerRule
	from, to int64
	ever     map[*instState]struct{}
	cur      map[*instState]struct{}
}

type unprot struct {
	on      bool // the latest bucket with traffic passed without a rule
	epStart int64
	passed  int64
	seen    bool
	from    int64
	to      int64
	maxSpan int64
	listed  bool
}

// New returns an engine; see Config for the zero value.
func New(cfg Config) *Engine {
	if cfg.StaleMs <= 0 {
		cfg.StaleMs = DefaultStaleMs
	}
	if cfg.GraceMs <= 0 {
		cfg.GraceMs = DefaultGraceMs
	}
	return &Engine{
		cfg:       cfg,
		insts:     map[string]*instState{},
		instNames: map[string]struct{}{},
		apps:      map[string]*appState{},
		appNames:  map[string]struct{}{},
		res:       map[string]*resState{},
		resNames:  map[string]struct{}{},
		ars:       map[arKey]*appRes{},
		keys:      map[string]string{},
	}
}

func (e *Engine) observe(ts int64) {
	if !e.seen {
		e.seen, e.first, e.last = true, ts, ts
		return
	}
	e.first = min(e.first, ts)
	e.last = max(e.last, ts)
}

// Hello records an instance's hello: which app it belongs to and when its
// process started. A later startedAt means the process restarted: its
// breakers start CLOSED again. A different app makes it a new instance of
// that app (the old one leaves its app at once).
func (e *Engine) Hello(instance, app string, ts, startedAt int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observe(ts)
	if app != "" {
		e.appNames[app] = struct{}{}
	}
	in := e.insts[instance]
	if in != nil && in.app.name != app {
		if in.helloSeen {
			// Another process under the same name: the old one leaves.
			e.detach(in, ts)
			in.gone, in.goneAt = true, ts
			in = nil
		} else {
			e.moveApp(in, app, ts) // data came before the hello
		}
	}
	if in == nil {
		in = e.newInstance(instance, app)
	}
	in.gone = false
	if !in.attached {
		e.attach(in, ts)
	}
	if in.helloSeen && startedAt > in.startedAt {
		for _, s := range in.seriesList {
			for _, b := range s.breakers {
				b.restart()
			}
		}
	}
	in.helloSeen = true
	in.startedAt = max(in.startedAt, startedAt)
}

// Bye records that an instance is gone at ts: it said bye, or the
// collector's fleet model found it silent past its stale period (one rule for
// every view). It leaves the comparisons of rule drift, unprotected traffic
// and recovery floods at once; conditions it was part of still count as
// lasting when it left at the very end of the input, so a fleet that stops
// at the end of a recording keeps its last findings' severities. Its next
// message brings it back.
func (e *Engine) Bye(instance string, ts int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observe(ts)
	in := e.insts[instance]
	if in == nil || in.gone {
		return
	}
	in.gone, in.goneAt = true, ts
	e.detach(in, ts)
}

func (e *Engine) appFor(name string) *appState {
	a := e.apps[name]
	if a == nil {
		a = &appState{name: strings.Clone(name), insts: map[string]*instState{}, ars: map[string]*appRes{}}
		e.apps[a.name] = a
	}
	return a
}

// moveApp moves an instance that had no hello yet into its app.
func (e *Engine) moveApp(in *instState, appName string, ts int64) {
	e.detach(in, ts)
	in.app = e.appFor(appName)
	for _, s := range in.seriesList {
		s.ar = e.appRes(in.app, s.resource)
		e.registerApp(s.res, in.app.name, ts)
	}
	if in.hasRules {
		for r := range in.rules {
			e.appRes(in.app, r)
		}
		e.updateMisaligned(in, ts)
	}
}

func (e *Engine) newInstance(name, appName string) *instState {
	name = strings.Clone(name)
	a := e.appFor(appName)
	e.seq++
	in := &instState{name: name, seq: e.seq, app: a, series: map[string]*series{}}
	e.insts[name] = in
	e.instList = append(e.instList, in)
	e.instNames[name] = struct{}{}
	e.attach(in, 0)
	return in
}

// instance returns the current instance of that name, creating one of no
// app for an instance that sends data before its hello. An instance gone
// (see Bye) comes back with any message.
func (e *Engine) instance(name string, ts int64) *instState {
	in := e.insts[name]
	if in == nil {
		return e.newInstance(name, "")
	}
	if in.gone {
		in.gone = false
		e.attach(in, ts)
	}
	return in
}

// attach counts the instance among its app's instances.
func (e *Engine) attach(in *instState, ts int64) {
	if in.attached {
		return
	}
	in.attached = true
	a := in.app
	a.insts[in.name] = in
	for _, s := range in.seriesList {
		s.ar.reporters[in] = struct{}{}
	}
	if in.hasRules {
		for r := range in.rules {
			e.appRes(a, r).ruleCount++
		}
		e.recomputeDrift(a, ts, in, nil)
	}
}

// detach removes the instance from its app's instances at time ts.
func (e *Engine) detach(in *instState, ts int64) {
	if !in.attached {
		return
	}
	in.attached = false
	a := in.app
	if a.insts[in.name] == in {
		delete(a.insts, in.name)
	}
	for _, s := range in.seriesList {
		delete(s.ar.reporters, in)
	}
	if in.hasRules {
		for r := range in.rules {
			e.appRes(a, r).dropRule(ts)
		}
		e.recomputeDrift(a, ts, nil, nil) // leaving can end drift, not start it
	}
}

// dropRule counts one attached instance fewer with a rule for the resource.
func (ar *appRes) dropRule(ts int64) {
	ar.ruleCount--
	if ar.ruleCount == 0 {
		ar.ruledTo = ts
	}
}

// ruled reports whether some instance of the app has a rule for the
// resource at now (the last ones may have left at now, at the very end of
// the input).
func (ar *appRes) ruled(now int64) bool {
	return ar.ruleCount > 0 || (ar.ruledTo > 0 && ar.ruledTo >= now)
}

func (e *Engine) appRes(a *appState, resource string) *appRes {
	if ar := a.ars[resource]; ar != nil {
		return ar
	}
	ar := &appRes{app: a, resource: strings.Clone(resource), reporters: map[*instState]struct{}{}}
	a.ars[ar.resource] = ar
	e.ars[arKey{a.name, ar.resource}] = ar
	e.resNames[ar.resource] = struct{}{}
	return ar
}

// seriesFor returns the instance's series of a resource, creating it; a new
// series makes the instance a reporter of the resource.
func (e *Engine) seriesFor(in *instState, resource string, ts int64) *series {
	if s := in.series[resource]; s != nil {
		return s
	}
	ar := e.appRes(in.app, resource)
	r := e.res[ar.resource]
	if r == nil {
		r = &resState{name: ar.resource, apps: map[string]struct{}{}}
		e.res[r.name] = r
	}
	s := &series{inst: in, resource: ar.resource, ar: ar, res: r}
	in.series[s.resource] = s
	in.seriesList = append(in.seriesList, s)
	if in.attached {
		ar.reporters[in] = struct{}{}
	}
	r.insts = append(r.insts, in)
	e.registerApp(r, in.app.name, ts)
	return s
}

// registerApp records that an app reports a resource.
func (e *Engine) registerApp(r *resState, appName string, ts int64) {
	if _, ok := r.apps[appName]; ok || appName == "" {
		return
	}
	r.apps[appName] = struct{}{}
	if len(r.apps) == 2 && !r.listed {
		r.listed, r.since = true, ts
		e.shared = append(e.shared, r)
	}
}

// Rules records an instance's complete rule set (a wire v1 "rules"
// message). The slices are copied.
func (e *Engine) Rules(instance string, ts int64, version string, breakers []core.BreakerRule, flows []core.FlowRule) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observe(ts)
	in := e.instance(instance, ts)
	a := in.app

	rules := map[string]*resRules{}
	get := func(res string) *resRules {
		rr := rules[res]
		if rr == nil {
			rr = &resRules{}
			rules[strings.Clone(res)] = rr
		}
		return rr
	}
	for _, b := range breakers {
		b.Resource = strings.Clone(b.Resource)
		b.ID = strings.Clone(b.ID)
		rr := get(b.Resource)
		rr.breakers = append(rr.breakers, b)
	}
	for _, f := range flows {
		f.Resource = strings.Clone(f.Resource)
		f.ID = strings.Clone(f.ID)
		rr := get(f.Resource)
		rr.flows = append(rr.flows, f)
	}
	var slow []slowRef
	for res, rr := range rules {
		rr.canonicalize()
		if k, ok := e.keys[rr.key]; ok {
			rr.key = k
		} else {
			if len(e.keys) >= maxInterned {
				clear(e.keys) // interning only saves time: start over
			}
			e.keys[rr.key] = rr.key
		}
		e.resNames[res] = struct{}{}
		e.appRes(a, res) // drift compares every resource with rules
		best := -1
		for i, b := range rr.breakers {
			if b.Strategy == core.SlowRequestRatio && (best < 0 || b.MaxAllowedRtMs < rr.breakers[best].MaxAllowedRtMs) {
				best = i
			}
		}
		if best >= 0 {
			slow = append(slow, slowRef{resource: res, rule: rr.breakers[best]})
		}
	}
	slices.SortFunc(slow, func(x, y slowRef) int { return strings.Compare(x.resource, y.resource) })

	var changed map[string]struct{} // resources whose comparison may change; nil: all
	if in.hasRules && in.attached {
		changed = map[string]struct{}{}
		for r := range in.rules {
			changed[r] = struct{}{}
		}
		for r := range rules {
			changed[r] = struct{}{}
		}
	}
	if in.attached {
		if in.hasRules {
			for r := range in.rules {
				if _, ok := rules[r]; !ok {
					e.appRes(a, r).dropRule(ts)
				}
			}
		}
		for r := range rules {
			if _, ok := in.rules[r]; !ok || !in.hasRules {
				e.appRes(a, r).ruleCount++
			}
		}
	}
	in.rules, in.hasRules, in.version, in.slow = rules, true, strings.Clone(version), slow

	// Traffic of a resource that now has a rule is protected from here on.
	for r := range rules {
		if s := in.series[r]; s != nil {
			s.up.on = false
		}
	}
	e.updateMisaligned(in, ts)
	if in.attached {
		e.recomputeDrift(a, ts, in, changed)
	}
}

// canonicalize sorts the rules by content, so that equal rule sets compare
// equal whatever their order, and computes the comparison key.
func (rr *resRules) canonicalize() {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil { // NaN or Inf: keep them distinguishable all the same
			return "!"
		}
		return string(b)
	}
	// retryTimeoutMs is left out of the comparison: jittering it per
	// instance is the fix for synchronized half-open probes, not drift.
	bk := make([]string, len(rr.breakers))
	for i := range rr.breakers {
		r := rr.breakers[i]
		r.RetryTimeoutMs = 0
		bk[i] = enc(r)
	}
	fk := make([]string, len(rr.flows))
	for i := range rr.flows {
		fk[i] = enc(rr.flows[i])
	}
	sortBy(rr.breakers, bk)
	sortBy(rr.flows, fk)
	var buf bytes.Buffer
	for _, k := range bk {
		buf.WriteString(k)
		buf.WriteByte(0)
	}
	buf.WriteByte(1)
	for _, k := range fk {
		buf.WriteString(k)
		buf.WriteByte(0)
	}
	rr.key = buf.String()
}

// sortBy sorts xs and keys together by keys.
func sortBy[T any](xs []T, keys []string) {
	if len(xs) < 2 {
		return
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	xs2 := make([]T, len(xs))
	ks2 := make([]string, len(xs))
	for i, j := range idx {
		xs2[i], ks2[i] = xs[j], keys[j]
	}
	copy(xs, xs2)
	copy(keys, ks2)
}

func (e *Engine) updateMisaligned(in *instState, ts int64) {
	a := in.app
	// Resources whose misaligned rule this instance dropped.
	for _, ar := range a.ars {
		m := &ar.mis
		if _, ok := m.cur[in]; !ok {
			continue
		}
		still := false
		if rr := in.rules[ar.resource]; rr != nil {
			for i := range rr.breakers {
				still = still || rr.breakers[i].WindowMisaligned()
			}
		}
		if !still {
			delete(m.cur, in)
			m.to = max(m.to, ts)
		}
	}
	for res, rr := range in.rules {
		for i := range rr.breakers {
			b := &rr.breakers[i]
			if !b.WindowMisaligned() {
				continue
			}
			ar := e.appRes(a, res)
			m := &ar.mis
			if !m.listed {
				m.listed, m.rule, m.from = true, *b, ts
				m.ever, m.cur = map[*instState]struct{}{}, map[*instState]struct{}{}
				e.misalign = append(e.misalign, ar)
			}
			m.from = min(m.from, ts)
			m.to = max(m.to, ts)
			m.ever[in] = struct{}{}
			m.cur[in] = struct{}{}
			break
		}
	}
}

// recomputeDrift compares the rules of the app's instances at time ts after
// instance x (nil: none) joined or changed its rules for the resources in
// only (nil: all). Resources drifting are regrouped (their groups carry
// versions). The others were agreed on by every instance but x, so x is
// compared with one of them.
func (e *Engine) recomputeDrift(a *appState, ts int64, x *instState, only map[string]struct{}) {
	var insts []*instState
	for _, in := range a.insts {
		if in.hasRules {
			insts = append(insts, in)
		}
	}
	slices.SortFunc(insts, func(x, y *instState) int { return strings.Compare(x.name, y.name) })
	var ref *instState // an instance other than x
	for _, in := range insts {
		if in != x {
			ref = in
			break
		}
	}
	for _, ar := range a.ars {
		d := &ar.drift
		if !d.active {
			if x == nil || ref == nil || ar.ruleCount == 0 {
				continue
			}
			if _, ok := only[ar.resource]; only != nil && !ok {
				continue
			}
			if ruleKey(x, ar.resource) == ruleKey(ref, ar.resource) {
				continue
			}
		}
		groups, contents := groupRules(insts, ar.resource)
		if contents >= 2 {
			if !d.active {
				d.active, d.since = true, ts
				if !d.listed {
					d.listed = true
					e.drifts = append(e.drifts, ar)
				}
			}
			d.groups = groups
			if groupedInstances(groups) >= groupedInstances(d.peak) {
				d.peak = groups
			}
			continue
		}
		if d.active {
			d.active = false
			if ts-d.since >= e.cfg.GraceMs {
				if !d.reported {
					d.reported, d.from, d.to = true, d.since, ts
				}
				d.from, d.to = min(d.from, d.since), max(d.to, ts)
				// Instances leaving can end an episode: report it as it
				// stood at its widest, not as the last one left saw it.
				d.repGroups = d.peak
			}
			d.groups, d.peak = nil, nil
		}
	}
}

// groupedInstances counts the instances in groups.
func groupedInstances(groups []RuleGroup) int {
	n := 0
	for _, g := range groups {
		n += len(g.Instances)
	}
	return n
}

// ruleKey is the content of an instance's rules for a resource ("" for
// none). Contents are interned, so comparing equal ones is cheap.
func ruleKey(in *instState, resource string) string {
	if rr := in.rules[resource]; rr != nil {
		return rr.key
	}
	return ""
}

// groupRules groups instances (sorted by name) by rule version and content
// for one resource, largest group first, and counts the distinct contents.
func groupRules(insts []*instState, resource string) ([]RuleGroup, int) {
	type group struct {
		key string
		g   RuleGroup
	}
	var groups []*group
	contents := map[string]struct{}{}
	for _, in := range insts {
		content := ""
		rr := in.rules[resource]
		if rr != nil {
			content = rr.key
		}
		contents[content] = struct{}{}
		key := in.version + "\x00" + content
		i := slices.IndexFunc(groups, func(g *group) bool { return g.key == key })
		if i < 0 {
			g := &group{key: key, g: RuleGroup{Version: in.version}}
			if rr != nil {
				g.g.Rule = RuleSet{Breakers: slices.Clone(rr.breakers), Flows: slices.Clone(rr.flows)}
			}
			groups = append(groups, g)
			i = len(groups) - 1
		}
		groups[i].g.Instances = append(groups[i].g.Instances, in.name)
	}
	slices.SortStableFunc(groups, func(x, y *group) int {
		if len(x.g.Instances) != len(y.g.Instances) {
			return len(y.g.Instances) - len(x.g.Instances)
		}
		if c := strings.Compare(x.g.Version, y.g.Version); c != 0 {
			return c
		}
		return strings.Compare(x.key, y.key)
	})
	out := make([]RuleGroup, len(groups))
	for i, g := range groups {
		out[i] = g.g
	}
	return out, len(contents)
}

// Bucket records one completed bucket. A bucket that does not start after
// the series' previous one is a duplicate (or a replay) and is ignored. In
// steady state it does not allocate.
func (e *Engine) Bucket(instance string, b BucketStat) {
	e.mu.Lock()
	defer e.mu.Unlock()
	bm := b.BucketMs
	if bm <= 0 {
		bm = core.ResourceBucketMs
	}
	end := b.Start + bm
	e.observe(end)
	in := e.instance(instance, end)
	s := e.seriesFor(in, b.Resource, end)
	if s.hasBucket && b.Start <= s.lastStart {
		return
	}
	pass := max(b.Pass, 0)
	// The load a statistic window sees is what the resource was offered:
	// while a breaker is open its requests are blocked, not absent.
	offered := pass + max(b.Block, 0)
	switch {
	case s.bucketMs != bm:
		s.pass = passHist{} // a new bucket length: rates start over
		s.bucketMs = bm
	case s.hasBucket:
		// Buckets are sent only for active resources: a short silence is idle
		// traffic, a long one an instance that was away.
		if gap := b.Start - s.lastStart; gap > bm && gap <= maxGapFillMs {
			s.pass.add(0, uint64(gap/bm-1))
		}
	}
	s.hasBucket, s.lastStart = true, b.Start
	s.pass.add(offered, 1)
	if b.HasHist {
		s.hasHist = true
		for i, c := range b.RtHist {
			s.rt[i] += max(c, 0)
		}
	}
	s.rtMax = max(s.rtMax, b.RtMax)
	s.res.last = max(s.res.last, end)
	if pass == 0 {
		return
	}
	if !s.traffic {
		s.traffic, s.firstAt = true, b.Start
	}
	s.endAt = max(s.endAt, end)
	e.unprotectedBucket(s, b.Start, end, pass)
}

func (e *Engine) unprotectedBucket(s *series, start, end, pass int64) {
	in := s.inst
	if !in.hasRules {
		return // rules not known yet: nothing to judge
	}
	u := &s.up
	if _, has := in.rules[s.resource]; has || s.ar.ruleCount == 0 || !in.attached {
		u.on = false
		return
	}
	if !u.on {
		u.on, u.epStart = true, start
	}
	if !u.seen {
		u.seen, u.from = true, start
	}
	u.passed += pass
	u.to = max(u.to, end)
	u.maxSpan = max(u.maxSpan, end-u.epStart)
	if !u.listed && u.maxSpan >= e.cfg.GraceMs {
		u.listed = true
		e.unprot = append(e.unprot, s)
	}
}

// Transition records one breaker state change. In steady state it does not
// allocate.
func (e *Engine) Transition(instance string, t core.Transition) {
	if !validState(t.From) || !validState(t.To) || t.From == t.To {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observe(t.AtMs)
	in := e.instance(instance, t.AtMs)
	s := e.seriesFor(in, t.Resource, t.AtMs)
	s.res.last = max(s.res.last, t.AtMs)
	b := s.breaker(t.RuleID)
	b.state = t.To
	b.record(t.AtMs, t.From, t.To)
	if t.RetryTimeoutMs > 0 {
		b.retry = t.RetryTimeoutMs
	}
	switch {
	case t.To == core.Open && t.From == core.Closed:
		b.run, b.runStart, b.lastOpen, b.npending = 0, t.AtMs, t.AtMs, 0
		if t.Strategy.IsRatio() {
			e.lowConfidence(s, t)
		}
	case t.To == core.Open && t.From == core.HalfOpen:
		e.failedProbe(b, t.AtMs)
	case t.To == core.Closed:
		b.run, b.runStart, b.lastOpen, b.npending = 0, 0, 0, 0
	case t.To == core.HalfOpen:
		e.halfOpen(s.ar, in, t.AtMs, b.retry)
	}
}

func validState(s core.State) bool { return s == core.Closed || s == core.Open || s == core.HalfOpen }

func (s *series) breaker(ruleID string) *breaker {
	for _, b := range s.breakers {
		if b.ruleID == ruleID {
			return b
		}
	}
	b := &breaker{s: s, ruleID: strings.Clone(ruleID)}
	s.breakers = append(s.breakers, b)
	return b
}

func (b *breaker) record(at int64, from, to core.State) {
	b.ring[b.ringHead] = step{at: at, from: from, to: to}
	b.ringHead = (b.ringHead + 1) % timelineLen
	b.nring = min(b.nring+1, timelineLen)
}

// steps calls f for the transitions held, oldest first.
func (b *breaker) steps(f func(step)) {
	start := (b.ringHead - b.nring + timelineLen) % timelineLen
	for i := range b.nring {
		f(b.ring[(start+i)%timelineLen])
	}
}

// restart is a process restart: the breaker is new, and CLOSED.
func (b *breaker) restart() {
	b.state = core.Closed
	b.run, b.runStart, b.lastOpen, b.npending = 0, 0, 0, 0
}

func (b *breaker) addSpacing(d int64) {
	b.spacings[b.spacingHead] = d
	b.spacingHead = (b.spacingHead + 1) % spacingLen
	b.nspacing = min(b.nspacing+1, spacingLen)
}

func (e *Engine) failedProbe(b *breaker, at int64) {
	b.run++
	if b.runStart == 0 {
		b.runStart = at // joined mid-run: the run starts with this probe
	}
	spacing := int64(-1)
	if b.lastOpen != 0 && at >= b.lastOpen {
		spacing = at - b.lastOpen
	}
	b.lastOpen = at
	switch {
	case b.run < SawtoothRun:
		if spacing >= 0 {
			b.pending[b.npending] = spacing
			b.npending++
		}
		return
	case b.run == SawtoothRun:
		for _, d := range b.pending[:b.npending] {
			b.addSpacing(d)
		}
		b.npending = 0
		if !b.listed {
			b.listed, b.qualFrom = true, b.runStart
			e.sawtooth = append(e.sawtooth, b)
		}
		b.qualFrom = min(b.qualFrom, b.runStart)
	}
	if spacing >= 0 {
		b.addSpacing(spacing)
	}
	b.qualTo = max(b.qualTo, at)
	b.maxRun = max(b.maxRun, b.run)
	if d := at - b.runStart; d >= b.maxRunDur {
		b.maxRunDur, b.maxRunRetry = d, b.retry
	}
}

// ongoing reports whether the breaker is still in a qualifying run.
func (b *breaker) ongoing() bool { return b.run >= SawtoothRun && b.state != core.Closed }

func (e *Engine) halfOpen(ar *appRes, in *instState, at int64, retry uint32) {
	h := &ar.herd
	joined := false
	if h.active {
		lo, hi := min(h.cMin, at), max(h.cMax, at)
		switch {
		case hi-lo <= HerdWindowMs:
			if !slices.Contains(h.members, in) {
				h.members = append(h.members, in)
			}
			h.cMin, h.cMax = lo, hi
			joined = true
		case at < h.cMin:
			return // late, and too far behind the current cluster
		}
	}
	if !joined {
		h.active, h.counted = true, false
		h.cMin, h.cMax = at, at
		h.members = append(h.members[:0], in)
	}
	if !joined {
		h.clusterRetry = 0
	}
	if retry > 0 {
		h.clusterRetry = retry
	}
	if !h.counted {
		n := len(h.members)
		if n < HerdSize || 2*n < len(ar.reporters) {
			return
		}
		h.counted = true
		h.occasions++
		if h.occasions == 1 {
			h.from, h.to = h.cMin, h.cMax
			h.ever = map[*instState]struct{}{}
		}
		if h.occasions == HerdOccasions {
			e.herds = append(e.herds, ar)
		}
	}
	if h.clusterRetry > 0 {
		h.retry = h.clusterRetry
	}
	h.from = min(h.from, h.cMin)
	h.to = max(h.to, h.cMax)
	h.spread = max(h.spread, h.cMax-h.cMin)
	h.maxSize = max(h.maxSize, len(h.members))
	h.last = append(h.last[:0], h.members...)
	for _, m := range h.members {
		h.ever[m] = struct{}{}
	}
}

func (e *Engine) lowConfidence(s *series, t core.Transition) {
	n, k, thr := t.Snapshot.Total, t.Snapshot.Bad, t.Threshold
	if n <= 0 || k < 0 || k > n || math.IsNaN(thr) || thr < 0 || thr > 1 {
		return
	}
	lower := WilsonLower(k, n)
	if lower > thr {
		return
	}
	l := &s.ar.low
	margin := lower - thr
	if l.count == 0 {
		l.from, l.to = t.AtMs, t.AtMs
		l.insts = map[*instState]struct{}{}
		e.lows = append(e.lows, s.ar)
	}
	if l.count == 0 || margin < l.worstMargin || (margin == l.worstMargin && n < l.worst.N) {
		l.worst = Evidence{K: k, N: n, Lower: round(lower, 2)}
		l.worstMargin, l.worstThr = margin, thr
	}
	l.count++
	l.from, l.to = min(l.from, t.AtMs), max(l.to, t.AtMs)
	l.insts[s.inst] = struct{}{}
}

// Counts reports how many apps (named in a hello), instances and resources
// the engine has seen, and the time range of its input.
func (e *Engine) Counts() Counts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Counts{
		Apps:      len(e.appNames),
		Instances: len(e.instNames),
		Resources: len(e.resNames),
		From:      e.first,
		To:        e.last,
	}
}

// RuleContent is the canonical content of one resource's rules, as rule
// drift compares them: independent of order, and without retryTimeoutMs
// (jittering it per instance is the fix for synchronized probes, not
// drift). Equal contents, equal strings.
func RuleContent(breakers []core.BreakerRule, flows []core.FlowRule) string {
	rr := resRules{breakers: slices.Clone(breakers), flows: slices.Clone(flows)}
	rr.canonicalize()
	return rr.key
}
