package bench

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// procSample is the process's CPU time and memory at one instant.
type procSample struct {
	at       time.Time
	cpu      time.Duration // user + system, all threads
	sys      time.Duration // of cpu, the system time (the kernel's work for the process)
	faults   int64         // page faults taken so far
	rss      int64         // bytes; 0 when unknown
	rssPeak  int64         // the most RSS ever
	heap     uint64        // Go heap in use
	heapSys  uint64
	cpuKnown bool
}

func sampleProc() procSample {
	s := procSample{at: time.Now()}
	s.cpu, s.sys, s.faults, s.cpuKnown = procCPU()
	s.rss, s.rssPeak = procStatusBytes("VmRSS:"), procStatusBytes("VmHWM:")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heap, s.heapSys = ms.HeapInuse, ms.HeapSys
	return s
}

// heapReader reads the heap in use (runtime.MemStats.HeapInuse) as the
// runtime's metrics give it: without stopping the world, reading /proc or
// allocating, so that sampling it within the measured window costs the
// collector's process next to nothing (sampleProc did all three).
type heapReader struct{ s []metrics.Sample }

func newHeapReader() *heapReader {
	return &heapReader{s: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}}
}

// read is the bytes of the heap's spans in use: its objects and the
// unused room in their spans, 0 where the runtime has no such metric.
func (h *heapReader) read() uint64 {
	metrics.Read(h.s)
	var n uint64
	for _, s := range h.s {
		if s.Value.Kind() == metrics.KindUint64 {
			n += s.Value.Uint64()
		}
	}
	return n
}

// procNice is a process's niceness, from /proc/PID/stat (Linux).
func procNice(pid int) (int, bool) {
	// nice is the 19th field, the 17th after the command's ")".
	f, ok := pidStat(strconv.Itoa(pid), 17)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(f[16])
	return n, err == nil
}

// pidStat is the fields of /proc/PID/stat after the command's ")" (the
// 3rd on), when there are at least n of them.
func pidStat(pid string, n int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(string(b[i+1:]))
	return f, len(f) >= n
}

// procStatusBytes reads a "kB" line of /proc/self/status (Linux).
func procStatusBytes(key string) int64 { return pidStatusBytes("self", key) }

// openFilesLimit is the soft limit on open files (Linux), 0 when unknown.
// Go raises it to the hard limit at start-up.
func openFilesLimit() int64 {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// hugePageMode is the kernel's transparent huge page mode: "always",
// "madvise" or "never" (the bracketed word of "always [madvise] never");
// "" where there is none. At "always" the collector's heap has huge pages,
// at "madvise" none (what that costs: docs/BENCHMARKS.md, "Huge pages").
func hugePageMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	return chosenMode(string(b))
}

// chosenMode is the bracketed word of a mode file's text.
func chosenMode(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

// procHugeBytes is how much of the process's memory is in transparent
// huge pages (AnonHugePages of /proc/self/smaps_rollup); false when
// unknown.
func procHugeBytes() (int64, bool) { return procKB("/proc/self/smaps_rollup", "AnonHugePages:") }
