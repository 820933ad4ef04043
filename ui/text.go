package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

// maxNameRunes bounds how much of one untrusted string is sanitized; longer
// strings are cut first (they are elided to a column anyway).
const maxNameRunes = 512

// sanitize makes an untrusted string safe to print on a terminal, on one
// line, with the report's rules (termtext.Sanitize). A clean string is
// returned as it is, without allocating.
func sanitize(s string) string { return termtext.Sanitize(s, maxNameRunes) }

// width is the number of terminal cells s takes (wide characters count 2).
func width(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// elide fits a sanitized string into w cells by cutting its middle: the
// start and the end of a name tell most (an app prefix, a path's last part).
func elide(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := width(s)
	if sw <= w {
		return s
	}
	if w == 1 {
		return "…"
	}
	budget := w - 1 // for the ellipsis
	headW := (budget + 1) / 2
	tailW := budget - headW
	// head: whole graphemes up to headW cells.
	head, used := 0, 0
	for head < len(s) {
		g, gw := ansi.FirstGraphemeCluster(s[head:], ansi.GraphemeWidth)
		if used+gw > headW {
			break
		}
		used += gw
		head += len(g)
	}
	// a wide character that did not fit leaves a cell to the tail.
	tailW += headW - used
	// tail: whole graphemes from the end, found by walking forward.
	var ends []int // start offsets of graphemes and their widths
	var ws []int
	for i := head; i < len(s); {
		g, gw := ansi.FirstGraphemeCluster(s[i:], ansi.GraphemeWidth)
		ends = append(ends, i)
		ws = append(ws, gw)
		i += len(g)
	}
	tail, tw := len(s), 0
	for k := len(ends) - 1; k >= 0; k-- {
		if tw+ws[k] > tailW {
			break
		}
		tw += ws[k]
		tail = ends[k]
	}
	var b strings.Builder
	b.Grow(head + 3 + len(s) - tail + 1)
	b.WriteString(s[:head])
	b.WriteString("…")
	b.WriteString(s[tail:])
	// pad when wide characters left a cell unused.
	for n := used + 1 + tw; n < w; n++ {
		b.WriteByte(' ')
	}
	return b.String()
}

// safeName sanitizes and elides an untrusted name to w cells.
func safeName(s string, w int) string { return elide(sanitize(s), w) }

// resourceName sanitizes a resource name and fits it into w cells keeping
// what tells resources apart: for a URL, "GET:http://member-service/api/
// user/info", the host and the path after a mark where the method and the
// scheme were ("…member-service/api/user/info"), else the host and the
// tail of the path ("member-service…user/info"); for any
// other name, its two ends.
func resourceName(name string, w int) string {
	s := sanitize(name)
	if width(s) <= w {
		return s
	}
	rest := s
	if i := strings.Index(s, "://"); i >= 0 {
		rest = s[i+3:]
	}
	slash := strings.IndexByte(rest, '/')
	if rest == s || slash <= 0 {
		return elideKeepTail(s, w)
	}
	host, path := rest[:slash], rest[slash:]
	if width(rest) < w { // the method and scheme go, said by the mark
		return "…" + rest
	}
	if tailW := w - width(host) - 1; tailW >= min(5, width(path)) {
		return host + "…" + tailCells(path, tailW)
	}
	// a host too long to keep whole: its head, and the path's tail.
	// the path's last part whole when it leaves the host a cell.
	tailW := (w - 1) / 2
	if lp := lastPartW(path); lp <= w-2 {
		tailW = max(tailW, lp)
	}
	tail := tailCells(path, min(width(path), tailW))
	return ansi.Truncate(host, w-1-width(tail), "") + "…" + tail
}

// nameSeparators are where a name's parts meet: "gateway/priceService/
// queryPrice", "priceService:queryPrice", "com.shop.PriceService#query".
const nameSeparators = "/:.#"

// elideKeepTail fits a sanitized name into w cells keeping its last parts
// whole, since they tell a name from its neighbours: the longest tail that
// begins at a separator and leaves a third of w to the head
// ("gateway/…/queryPrice"), else the last part alone after what fits of the
// head ("pric…:queryPrice", "…:queryPrice"); a last part too long for w
// leaves the two ends (elide).
func elideKeepTail(s string, w int) string {
	if width(s) <= w {
		return s
	}
	long, short := -1, -1 // the tails: leaving a third to the head; the last part
	for i := len(s) - 2; i > 0; i-- {
		if strings.IndexByte(nameSeparators, s[i]) < 0 {
			continue
		}
		tw := width(s[i:])
		if tw > w-1 {
			break
		}
		if short < 0 {
			short = i
		}
		if tw <= w-1-w/3 {
			long = i
		}
	}
	tail := long
	if tail < 0 {
		tail = short
	}
	if tail < 0 {
		return elide(s, w)
	}
	return padCells(ansi.Truncate(s[:tail], w-1-width(s[tail:]), "")+"…"+s[tail:], w)
}

// padCells pads s with spaces to w cells: a wide character cut off leaves
// a cell.
func padCells(s string, w int) string {
	if n := w - width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// commonPrefix is the longest prefix the names share that ends at a
// separator and leaves each of them something: what a column of them can
// leave out, said once in its header. "" for fewer than two names.
func commonPrefix(names []string) string {
	if len(names) < 2 {
		return ""
	}
	p := names[0]
	for _, n := range names[1:] {
		i := 0
		for i < len(p) && i < len(n) && p[i] == n[i] {
			i++
		}
		p = p[:i]
	}
	for _, n := range names {
		if n == "" {
			return ""
		}
		if len(p) >= len(n) {
			p = p[:len(n)-1] // leave each name at least one byte
		}
	}
	for i := len(p) - 1; i >= 0; i-- {
		if strings.IndexByte(nameSeparators, p[i]) >= 0 {
			return p[:i+1]
		}
	}
	return ""
}

// targetName sanitizes a target's address and fits it into w cells
// keeping what tells targets apart, its host and port: the middle of the
// path goes first, then the scheme, then the rest of the path
// ("ws://127.0.0.1:8721…/stream", "127.0.0.1:8721…/stream",
// "127.0.0.1:8721"); a host and port longer than w keep their two ends.
func targetName(name string, w int) string {
	s := sanitize(name)
	if width(s) <= w {
		return s
	}
	scheme, rest := "", s
	if i := strings.Index(s, "://"); i >= 0 {
		scheme, rest = s[:i+3], s[i+3:]
	}
	auth, tail := rest, ""
	if j := strings.IndexAny(rest, "/?"); j >= 0 {
		auth, tail = rest[:j], rest[j:]
	}
	switch {
	case width(auth) >= w:
		return elide(auth, w)
	case tail == "":
		return auth
	}
	if room := w - width(scheme+auth) - 1; room >= min(6, width(tail)) {
		return scheme + auth + "…" + tailCells(tail, room)
	}
	if width(rest) <= w {
		return rest
	}
	if room := w - width(auth) - 1; room >= 4 {
		return auth + "…" + tailCells(tail, room)
	}
	return auth
}

// tailCells is the end of s in at most w cells, starting at a "/" when
// that loses no more than a few cells.
func tailCells(s string, w int) string {
	t := ansi.TruncateLeft(s, max(0, width(s)-w), "")
	if i := strings.IndexByte(t, '/'); i > 0 && i <= 3 && i < len(t)-1 {
		t = t[i:]
	}
	return t
}

// cut fits trusted text into w cells, ending it in "…" when it is longer.
func cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// padRight writes s and spaces up to w cells (s must fit).
func padRight(b *strings.Builder, s string, w int) {
	b.WriteString(s)
	for n := width(s); n < w; n++ {
		b.WriteByte(' ')
	}
}

// padLeft writes spaces and s, right-aligned in w cells (s must fit).
func padLeft(b *strings.Builder, s string, w int) {
	for n := width(s); n < w; n++ {
		b.WriteByte(' ')
	}
	b.WriteString(s)
}

// fitLine cuts a rendered line (which may hold styles) to w cells and pads
// it with spaces to exactly w.
func fitLine(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	if sw == w {
		return s
	}
	return s + strings.Repeat(" ", w-sw)
}

// fmtRate formats a per-second rate in at most 6 cells: 0, 3.2, 812, 12.3k.
func fmtRate(v float64) string {
	switch {
	case math.IsNaN(v) || v < 0:
		return "-"
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v < 1e6:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	default:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	}
}

// fmtPct formats a ratio (0..1) as a percentage in at most 5 cells.
func fmtPct(v float64) string {
	switch {
	case math.IsNaN(v) || v < 0:
		return "-"
	case v == 0:
		return "0%"
	case v < 0.1:
		return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
	default:
		return strconv.FormatFloat(v*100, 'f', 0, 64) + "%"
	}
}

// fmtMs formats milliseconds: 0ms, 240ms, 1.2s, 95s, 12m.
func fmtMs(ms int64) string {
	switch {
	case ms < 0:
		return "-"
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + "ms"
	case ms < 10_000 && ms%1000 != 0:
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + "s"
	case ms < 600_000:
		return strconv.FormatInt(ms/1000, 10) + "s"
	default:
		return strconv.FormatInt(ms/60_000, 10) + "m"
	}
}

// fmtSpanMs is fmtSpan of ms milliseconds, never negative (an end before
// its start is 0s) and bounded (a range of a thousand years would overflow
// a time.Duration).
func fmtSpanMs(ms int64) string {
	return fmtSpan(time.Duration(min(max(ms, 0), int64(time.Duration(1<<63-1)/time.Millisecond))) * time.Millisecond)
}

// fmtSpan formats a duration for people: 45s, 1m12s, 5m, 1h30m.
func fmtSpan(d time.Duration) string {
	if d < 0 {
		return "-" + fmtSpan(-d)
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		if s%60 == 0 {
			return strconv.FormatInt(s/60, 10) + "m"
		}
		return strconv.FormatInt(s/60, 10) + "m" + fmt.Sprintf("%02ds", s%60)
	default:
		h, m := s/3600, (s%3600)/60
		if m == 0 {
			return strconv.FormatInt(h, 10) + "h"
		}
		return strconv.FormatInt(h, 10) + "h" + fmt.Sprintf("%02dm", m)
	}
}

// fmtCount formats a count with thousands separators: 48,213.
func fmtCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// fmtSpeed formats a replay speed: ×4, ×0.5, ×max.
func fmtSpeed(x float64) string {
	if x <= 0 {
		return "×max"
	}
	return "×" + strconv.FormatFloat(x, 'g', 3, 64)
}

// fmtAge formats how long ago, or for how long, in ms: 0.3s, 2.5s, 45s,
// 1m12s.
func fmtAge(ms int64) string {
	switch {
	case ms < 0:
		ms = 0
	case ms >= 10_000:
		return fmtSpan(time.Duration(ms) * time.Millisecond)
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + "s"
}

// plural is one when n is 1, else many.
func plural[N ~int | ~int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
