package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/internal/english"
	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

// result is what one run measured.
type result struct {
	cfg Config
	// floor: the store took no buckets (Config.Floor); floorItems and
	// floorMessages are what the sources decoded and handed over instead,
	// from the start to the count.
	floor                     bool
	floorItems, floorMessages int64
	processes                 int
	// niceness is the least niceness the agents' processes have, as
	// /proc/PID/stat tells it (-1: not known here).
	niceness int
	connect  time.Duration
	// Read by the collector over the measured window: messages, bytes, and
	// the items of its buckets messages (its µs per item divides by them).
	messages, bytes, read int64
	// lagStart and lagEnd are the items the agents had written and the
	// collector not read yet, at the window's start and end.
	lagStart, lagEnd int64
	// seriesStart is the series the collector had as the window began, of
	// the fleet's series (agents x resources).
	seriesStart int
	// Written by the agents over the measured window, counted on the wire.
	written, bucketsWritten, items int64
	window                         time.Duration
	calls, counted                 int64
	short                          []seriesShort
	worstTarget                    string  // how the target of the series most short ended
	cpu, agentsCPU                 float64 // cores
	sys                            float64 // of cpu, the system time's cores
	faults                         float64 // the collector's page faults a second
	cpuKnown                       bool
	rss, rssPeak, agentsRSS        int64
	huge                           hugePages // at the end of the window
	reads                          string    // how the pollers read (readPath), "" off Linux
	heap, heapSys, heapPeak, live  uint64
	traffic                        trafficWindow
	reconnects, dropped            int64
	unreceivedMs                   int64 // sender time the collector knows it never received
	downAtEnd                      int   // targets not up when the counting ended
	rejected, overflow             int64
	overflows                      []collector.RejectCount
	filesLimit                     int64
	lat                            *latency
	agents                         childStats  // summed over the children, at the end
	prom                           *promResult // with Config.Prometheus
	ref                            reference   // measured once the agents stopped
	refErr                         error       // why ref was not measured
}

// health takes from the collector's last snapshot the reconnects, drops,
// rejects and overflows, which series came up short on targets that
// reconnected, and how the target of the series most short ended.
func (res *result) health(snap *collector.Snapshot) {
	reconnected := map[string]bool{}
	var worst seriesShort
	for i := range res.short {
		if s := res.short[i]; s.made-s.counted > worst.made-worst.counted {
			worst = s
		}
	}
	for _, t := range snap.Targets {
		res.reconnects += t.Reconnects
		if t.Reconnects > 0 {
			reconnected[t.Instance] = true
		}
		if worst.instance != "" && t.Instance == worst.instance {
			res.worstTarget = fmt.Sprintf("%s's target: %s for %.1f s, %s messages, the last %.1f s before the count ended, %d reconnects",
				t.Instance, t.State, float64(snap.At-t.Since)/1000, thousands(t.Messages), float64(snap.At-t.LastMessageAt)/1000, t.Reconnects)
		}
	}
	for i := range res.short {
		res.short[i].reconnected = reconnected[res.short[i].instance]
	}
	res.dropped, res.rejected, res.unreceivedMs = snap.Dropped, snap.Rejected, snap.UnreceivedMs
	for _, o := range snap.Overflow {
		res.overflow += o.Count
	}
	res.overflows = snap.Overflow
}

// seriesShort is an instance x resource whose calls the collector did not
// all count.
type seriesShort struct {
	instance, resource string
	made, counted      int64
	reconnected        bool // its target reconnected during the run
}

// print writes the results, a section a heading.
func (r *result) print(w io.Writer) {
	r.printIngest(w)
	r.printAccounted(w)
	r.lat.print(w, r.window)
	if r.agents.LostEvents > 0 {
		fmt.Fprintf(w, "            %s transitions not reported by the agents' processes (their pipe was full)\n", thousands(r.agents.LostEvents))
	}
	r.printResources(w)
	r.printPrometheus(w)
	r.printHealth(w)
}

// printIngest writes the connected and ingest sections: the fleet, and
// what the agents wrote and the collector read over the window.
func (r *result) printIngest(w io.Writer) {
	secs := r.window.Seconds()
	niceness := ""
	if r.niceness > 0 {
		niceness = fmt.Sprintf(" at niceness %d", r.niceness)
	}
	fmt.Fprintf(w, "connected:  %d targets in %.1f s, served by %d agents' %s%s (open files limit %d)\n",
		r.cfg.Agents, r.connect.Seconds(), r.processes, english.Plural(r.processes, "process", "processes"), niceness, r.filesLimit)
	fmt.Fprintf(w, "ingest:     %s items/s, %s messages/s, %.1f MB/s of websocket payload, over %.1f s\n",
		thousands(int64(float64(r.read)/secs)), thousands(int64(float64(r.messages)/secs)),
		float64(r.bytes)/secs/(1<<20), secs)
	fmt.Fprintf(w, "            %s items in %s buckets messages written by the agents (%s messages in all); %s items in %s messages read by the collector\n",
		thousands(r.items), thousands(r.bucketsWritten), thousands(r.written), thousands(r.read), thousands(r.messages))
	if line := r.fill(); line != "" {
		fmt.Fprintf(w, "            %s\n", line)
	}
	held := fmt.Sprintf("with %s of the %s series", thousands(int64(r.seriesStart)), thousands(int64(r.cfg.Agents*r.cfg.Resources)))
	if r.floor {
		held = "no series held: --floor"
	}
	fmt.Fprintf(w, "            the collector %s items behind the agents as the window began (%s), %s as it ended\n",
		thousands(r.lagStart), held, thousands(r.lagEnd))
}

// printAccounted writes the accounted section: the calls made and
// counted, and the series that differ.
func (r *result) printAccounted(w io.Writer) {
	if r.floor {
		fmt.Fprintf(w, "accounted:  %s calls made, not counted: --floor leaves the collector's store out of the buckets\n", thousands(r.calls))
		fmt.Fprintf(w, "            the sources decoded %s items in %s buckets messages from the start, and handed them to no store: the cpu below is the floor under its work\n",
			thousands(r.floorItems), thousands(r.floorMessages))
		return
	}
	exact := "exact"
	switch {
	case r.counted < r.calls:
		exact = "MISSING " + thousands(r.calls-r.counted)
	case r.counted > r.calls:
		exact = "OVER BY " + thousands(r.counted-r.calls)
	}
	fmt.Fprintf(w, "accounted:  %s calls made, %s counted by the collector (%s)\n", thousands(r.calls), thousands(r.counted), exact)
	if len(r.short) > 0 {
		r.printShort(w)
	}
	if r.agents.Refused > 0 {
		fmt.Fprintf(w, "            %s calls refused by the agents' guards (not counted as made)\n", thousands(r.agents.Refused))
	}
}

// printShort writes the series whose counts differ from the calls made:
// the first ten, and the calls missing on targets that reconnected and on
// the others.
func (r *result) printShort(w io.Writer) {
	worst := int64(0)
	for _, s := range r.short {
		worst = max(worst, s.made-s.counted, s.counted-s.made)
	}
	calls := "calls"
	if worst == 1 {
		calls = "call"
	}
	fmt.Fprintf(w, "            %d instance x resource series of %s differ, by up to %s %s:\n", len(r.short),
		thousands(int64(r.cfg.Agents*r.cfg.Resources)), thousands(worst), calls)
	for _, s := range r.short[:min(len(r.short), 10)] {
		fmt.Fprintf(w, "            %s %s: %s made, %s counted\n", s.instance, s.resource, thousands(s.made), thousands(s.counted))
	}
	if len(r.short) > 10 {
		fmt.Fprintf(w, "            and %d more\n", len(r.short)-10)
	}
	var on, off [2]int64 // series, calls missing: on targets that reconnected, on the others
	for _, s := range r.short {
		p := &off
		if s.reconnected {
			p = &on
		}
		p[0]++
		p[1] += s.made - s.counted
	}
	fmt.Fprintf(w, "            of them, %s (%s calls) on targets that reconnected during the run, %s (%s calls) on targets that never did\n",
		thousands(on[0]), thousands(on[1]), thousands(off[0]), thousands(off[1]))
	if r.worstTarget != "" {
		fmt.Fprintf(w, "            %s\n", r.worstTarget)
	}
}

// printResources writes the cpu and memory sections, the collector's and
// the agents'.
func (r *result) printResources(w io.Writer) {
	if r.cpuKnown {
		fmt.Fprintf(w, "cpu:        collector %.2f cores (this process), %.2f µs per item; agents %.2f cores (%d %s)\n",
			r.cpu, r.nsPerItem()/1e3, r.agentsCPU, r.processes, english.Plural(r.processes, "process", "processes"))
		if r.cpu > 0 {
			fmt.Fprintf(w, "            of the collector's, %.0f %% system time: the kernel's work for it (its reads of the sockets, page faults, the scheduler's sleeps and wakes); %s page faults a second (memory touched the first time: BenchmarkHostPageFault prices one on this host)\n",
				100*r.sys/r.cpu, thousands(int64(r.faults+0.5)))
		}
		if r.reads != "" {
			fmt.Fprintf(w, "            the sockets' reads: %s\n", r.reads)
		}
	} else {
		fmt.Fprintln(w, "cpu:        unknown on this system (getrusage)")
	}
	r.printReference(w)
	fmt.Fprintf(w, "memory:     collector heap in use %s (peak %s), %s live after a collection, heap reserved %s; RSS %s (peak %s)\n",
		megabytes(int64(r.heap)), megabytes(int64(r.heapPeak)), megabytes(int64(r.live)), megabytes(int64(r.heapSys)),
		megabytes(r.rss), megabytes(r.rssPeak))
	if line := r.traffic.String(); line != "" {
		fmt.Fprintf(w, "            %s\n", line)
	}
	fmt.Fprintf(w, "            agents' processes: RSS %s\n", megabytes(r.agentsRSS))
	if line := r.huge.String(); line != "" {
		fmt.Fprintf(w, "            huge pages: %s\n", line)
	}
}

// trafficLog is what the collector's traffic log for plans held, and its
// bound (Snapshot.MemoryTraffic, MemoryTrafficBound).
type trafficLog struct{ held, bound int64 }

// trafficWindow is the traffic log at the window's start and end.
type trafficWindow [2]trafficLog

// String says what the log held over the window, and whether it was still
// filling ("" when none is kept); full is within 1/64 of its bound (its
// chunks are up to 4 KiB).
func (t trafficWindow) String() string {
	if t[1].bound <= 0 {
		return ""
	}
	line := fmt.Sprintf("traffic kept to replay plans %s at the window's start, %s at its end, of its bound %s",
		megabytes(t[0].held), megabytes(t[1].held), megabytes(t[1].bound))
	if t[1].held < t[1].bound-t[1].bound/64 {
		line += ": filling, and the heap with it (--after: a window once it is full)"
	}
	return line
}

// megabytes is n bytes in whole MB (MiB), as the results print memory.
func megabytes(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/(1<<20)) }

// trafficKept is snap's traffic log (none before the first snapshot).
func trafficKept(snap *collector.Snapshot) trafficLog {
	if snap == nil {
		return trafficLog{}
	}
	return trafficLog{snap.MemoryTraffic, snap.MemoryTrafficBound}
}

// hugePages is what the collector's process had of transparent huge pages
// (hugePageMode): the kernel's mode, and how much of the process was in
// them (known says it could be read).
type hugePages struct {
	mode  string
	bytes int64
	known bool
}

func (h hugePages) String() string {
	if h.mode == "" {
		return ""
	}
	line := "the kernel's mode is " + h.mode
	if h.known {
		line += fmt.Sprintf("; %.0f MB of this process in them", float64(h.bytes)/(1<<20))
	}
	return line
}

// printHealth writes the health section: reconnects, drops, rejects and
// limits, on the collector's side and the agents', and why targets went
// down.
func (r *result) printHealth(w io.Writer) {
	fmt.Fprintf(w, "health:     %d reconnects, %d messages dropped by agents, %d rejected, %d over limits\n",
		r.reconnects, r.dropped, r.rejected, r.overflow)
	if r.downAtEnd > 0 {
		fmt.Fprintf(w, "            %d targets still not up when the counting ended\n", r.downAtEnd)
	}
	if r.unreceivedMs > 0 {
		fmt.Fprintf(w, "            %.1f s of targets' data never received: out of reach longer than their backlog\n", float64(r.unreceivedMs)/1000)
	}
	for _, o := range r.overflows {
		fmt.Fprintf(w, "            over %s: %s (the last: %s)\n", termtext.Sanitize(o.Reason, 40), thousands(o.Count), termtext.Sanitize(o.Last, 200))
	}
	a := r.agents
	if a.Dropped+a.Evicted+a.WriteTimeouts+a.ReadTimeouts+a.ConnErrors > 0 {
		fmt.Fprintf(w, "            agents' side: %d messages dropped for slow readers, %d readers evicted, %d writes timed out, %d reads timed out (no pong; %d of them the first ping's), %d other connection errors\n",
			a.Dropped, a.Evicted, a.WriteTimeouts, a.ReadTimeouts, a.FirstPong, a.ConnErrors)
	}
	if a.Skipped > 0 {
		fmt.Fprintf(w, "            agents' side: %s resource buckets never shipped: overwritten while their agents ran more than 10 s late (a machine too small for the fleet), and what they counted is lost\n",
			thousands(a.Skipped))
	}
	if a.Unrecorded > 0 {
		fmt.Fprintf(w, "            agents' side: %s passes, blocks and completions not recorded: their calls read the clock 10 s or more before counting (goroutines starved of CPU)\n",
			thousands(a.Unrecorded))
	}
	reasons := r.lat.downReasons()
	for i, d := range reasons {
		if i == 8 {
			fmt.Fprintf(w, "            and %d other reasons\n", len(reasons)-i)
			break
		}
		alike := ""
		if d.alike > 0 {
			alike = fmt.Sprintf(" (and %d alike, numbers aside)", d.alike)
		}
		fmt.Fprintf(w, "            down %d times: %s%s\n", d.n, termtext.Sanitize(d.why, 200), alike)
	}
}

// thousands formats n with thousands separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fill tells how full the agents' buckets messages were: at --rate 2 or
// more every resource is due a call in every 500 ms bucket, and a message
// holding fewer items than the resources means the agents ran late and
// their calls bunched. µs per item then spreads each message's cost over
// fewer items than the fleet was to send. "" before any message.
func (r *result) fill() string {
	if r.bucketsWritten <= 0 {
		return ""
	}
	per := float64(r.items) / float64(r.bucketsWritten)
	line := fmt.Sprintf("%.1f items a buckets message, of %d due", per, r.cfg.Resources)
	if r.cfg.Rate >= 2 && per < 0.9*float64(r.cfg.Resources) {
		line += fmt.Sprintf(" (%.0f %%): the agents ran late and their calls bunched, so the collector's cost a message is spread over fewer items than the fleet was to send (a machine too small for the fleet)",
			100*per/float64(r.cfg.Resources))
	}
	return line
}

// printPrometheus writes, with Config.Prometheus, what the Prometheus
// scraping the same agents cost over the same window, and both costs per
// series.
func (r *result) printPrometheus(w io.Writer) {
	p := r.prom
	if p == nil {
		return
	}
	mb := func(n float64) string { return fmt.Sprintf("%.0f MB", n/(1<<20)) }
	series := float64(r.cfg.Agents * r.cfg.Resources)
	fmt.Fprintf(w, "prometheus: scraping %.0f of %d agents' metrics every %v: %s series in its head, %s samples a round of scrapes, the slowest scrape %.0f ms\n",
		p.targetsUp, r.cfg.Agents, promScrapeInterval, thousands(int64(p.headSeries)), thousands(int64(p.samplesPerScrape)), p.scrapeMax*1000)
	if p.cpuKnown {
		fmt.Fprintf(w, "            cpu %.2f cores; ", p.cpu)
	} else {
		fmt.Fprint(w, "            cpu unknown on this system (/proc); ")
	}
	fmt.Fprintf(w, "RSS %s (peak %s)\n", mb(float64(p.rss)), mb(float64(p.rssPeak)))
	counted := "MISSING " + thousands(r.calls-int64(p.counted))
	if p.countedOK {
		counted = "exact"
	}
	fmt.Fprintf(w, "            %s of %s scrapes of the agents failed over the window (a page not served within the 1 s timeout)\n",
		thousands(int64(p.failed)), thousands(int64(p.scrapes)))
	fmt.Fprintf(w, "            the passes it stored sum %s calls of the %s made (%s)\n", thousands(int64(p.counted)), thousands(r.calls), counted)
	fmt.Fprintf(w, "            a global view's query, %s over the window at a 1 s step: %d ms, %s series read, %s returned\n",
		globalQuery, p.queryTook.Milliseconds(), thousands(int64(p.queryRead)), thousands(int64(p.queryOut)))
	if r.cpuKnown && p.cpuKnown && p.headSeries > 0 {
		fmt.Fprintf(w, "per series: %s instance x resource series; collector %.2f µs/s of CPU and %.1f KB RSS each; prometheus %.2f µs/s and %.1f KB each (%.2f µs/s and %.1f KB per head series)\n",
			thousands(int64(series)), r.cpu*1e6/series, float64(r.rss)/series/1024,
			p.cpu*1e6/series, float64(p.rss)/series/1024, p.cpu*1e6/p.headSeries, float64(p.rss)/p.headSeries/1024)
	}
}

// printReference writes the reference line: what decoding the agents'
// messages costs on this machine, and the collector's µs per item as a
// multiple of encoding/json's decoding alone.
func (r *result) printReference(w io.Writer) {
	if r.refErr != nil {
		fmt.Fprintf(w, "reference:  not measured: %v\n", r.refErr)
		return
	}
	if r.ref.items == 0 {
		return
	}
	fmt.Fprintf(w, "reference:  encoding/json decodes the agents' buckets messages at %.2f µs an item on this machine, the collector's decoder at %.2f µs (the fastest of %d rounds over %d messages, the agents stopped; json.Unmarshal into a reused struct, nothing checked)\n",
		r.ref.jsonNs/1e3, r.ref.wireNs/1e3, referenceRounds, r.ref.frames)
	if r.cpuKnown && r.read > 0 {
		fmt.Fprintf(w, "            the collector's %.2f µs an item end to end are %.2f times encoding/json's decoding alone\n", r.nsPerItem()/1e3, r.nsPerItem()/r.ref.jsonNs)
	}
}

// nsPerItem is the collector's CPU over the window an item it read, in ns.
func (r *result) nsPerItem() float64 {
	return r.cpu * r.window.Seconds() * 1e9 / max(float64(r.read), 1)
}
