package collector

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Warning is a typed fact a snapshot warns of: something its data may
// show wrong, or cannot show. It is one of ClockSkew, CollectorClock,
// TargetNote, UnreceivedData, Notice and UnjudgedTrips; views read its fields, and
// WarningText words it, the same for every view. Names in it come from
// the input and are not sanitized.
type Warning interface {
	warning()
}

// ClockSkew: an instance's clock is off by more than its bucket length
// (and the fleet does not say that the collector is the one off).
type ClockSkew struct {
	Instance string
	// OffsetMs is the instance's clock offset, the least arrival minus ts
	// of its recent buckets messages: > 0 they arrive after their
	// timestamps (its clock is behind the collector's), < 0 before (ahead).
	OffsetMs int64
}

// CollectorClock: at least 3 instances, and three quarters of those
// measured, are off the same way: the collector is the odd one out (its
// clock is wrong, or it reads late), and their clocks are not blamed.
type CollectorClock struct {
	// Late is set when their messages arrive after their timestamps: the
	// collector reads late (starved of CPU, behind a backlog) or its clock
	// is ahead. Unset, they arrive before: the collector's clock is behind.
	Late bool
	// Instances counts the instances off that way, of Measured (those with
	// a clock offset).
	Instances, Measured int
	// MinMs, MedianMs and MaxMs are the sizes of their offsets.
	MinMs, MedianMs, MaxMs int64
}

// TargetNote: Targets dialed targets have the same standing remark
// (TargetStatus.Note).
type TargetNote struct {
	Note    TargetRemark
	Targets int
}

// UnreceivedData: data known never to have arrived (Snapshot.Unreceived).
type UnreceivedData struct {
	// Gaps are the instances' gaps, the largest first (at most 64);
	// Others counts the instances not listed, at least that many when
	// OthersAtLeast is set (past 1,024 they are not told apart).
	Gaps          []DataGap
	Others        int
	OthersAtLeast bool
	// TotalMs is the time of all of them.
	TotalMs int64
}

// UnjudgedTrips: trips of one app and resource that a finding kind could
// not judge from the input (triage.Unjudged: low-confidence-trip's Java
// trips whose window's calls are not known). More counts the resources
// not listed after it (past MaxUnjudgedWarnings).
type UnjudgedTrips struct {
	triage.Unjudged
	More int
}

// CoarseInput: the input's counts and transitions are known to a step
// coarser than a breaker's dynamics (Options.Resolution: the Prometheus
// source), so Kinds (triage.NeedExact) cannot be judged and are not
// published; Withheld counts the findings of theirs left out. NoRules:
// no instance told its rules (Prometheus holds none), so the kinds that
// judge rules cannot be judged either. NoCompletions: entries passed but
// none completed (sentinel-golang's exporter counts passes and blocks
// alone): completions, errors and response times are not known, and
// their zeros are not measured.
type CoarseInput struct {
	StepMs        int64
	Kinds         []triage.Kind
	Withheld      int
	NoRules       bool
	NoCompletions bool
}

// MaxUnjudgedWarnings bounds the UnjudgedTrips warnings of a snapshot.
const MaxUnjudgedWarnings = 16

func (ClockSkew) warning()      {}
func (UnjudgedTrips) warning()  {}
func (CoarseInput) warning()    {}
func (CollectorClock) warning() {}
func (TargetNote) warning()     {}
func (UnreceivedData) warning() {}
func (Notice) warning()         {}

// WarningText is a warning in one line, as every view shows it: the words
// are made here and nowhere else. Names from the input are in it as they
// came: a view sanitizes the line as it prints it. The cause comes first,
// because a status line shows as much of a warning as fits.
func WarningText(w Warning) string {
	switch w := w.(type) {
	case ClockSkew:
		dir, off := "behind", w.OffsetMs
		if off < 0 {
			dir, off = "ahead of", -off
		}
		return fmt.Sprintf("clock of %s is %.1f s %s the collector's", w.Instance, secs(off), dir)
	case CollectorClock:
		cause, words := "the collector's clock is behind", "before"
		if w.Late {
			cause, words = "the collector reads late or its clock is ahead", "after"
		}
		return fmt.Sprintf("%s: messages of %d of %d %s arrive %.1f-%.1f s %s their timestamps (median %.1f s)",
			cause, w.Instances, w.Measured, plural(w.Measured, "instance", "instances"), secs(w.MinMs), secs(w.MaxMs), words, secs(w.MedianMs))
	case TargetNote:
		return fmt.Sprintf("%d %s: %s", w.Targets, plural(w.Targets, "target", "targets"), RemarkText(w.Note))
	case UnreceivedData:
		return unreceivedText(w)
	case Notice:
		return noticeText(w)
	case UnjudgedTrips:
		return unjudgedText(w)
	case CoarseInput:
		return coarseText(w)
	}
	return fmt.Sprintf("warning %T", w)
}

// RemarkText is a target's standing remark in words, as every view shows
// it ("" for none).
func RemarkText(r TargetRemark) string {
	var parts []string
	if r.StatesInferred {
		parts = append(parts, "breaker states not exposed by Java Sentinel: inferred from counts where a resource has only degrade rules")
	}
	if r.RulesError != "" {
		parts = append(parts, "rules unavailable: "+r.RulesError)
	}
	return strings.Join(parts, "; ")
}

// ProblemText is why a target is down, in words, as every view shows it
// ("" for none): one line, with what to do where the cause is known.
// Detail and the names in it are the peer's: sanitize before printing.
func ProblemText(p feed.Problem) string {
	switch p.Kind {
	case feed.ProblemNone:
		return ""
	case feed.ProblemClosed:
		return "closed by the peer"
	case feed.ProblemRefused:
		where := "there"
		if p.Where != "" {
			where = "on " + p.Where
		}
		return "refused: nothing listens " + where + " (connection refused)"
	case feed.ProblemNoHost:
		return "DNS: no such host " + p.Where
	case feed.ProblemDNS:
		return "DNS: cannot resolve " + p.Where + ": " + p.Detail
	case feed.ProblemNotTLS:
		return "TLS: the target does not speak TLS (ws:// instead of wss://?)"
	case feed.ProblemTLSHost:
		return "TLS: the certificate is not for this host: " + p.Detail
	case feed.ProblemTLSTrust:
		return "TLS: the certificate is not trusted (--ca names the CA that signed it): " + p.Detail
	case feed.ProblemReset:
		return "reset by the peer: " + p.Detail
	case feed.ProblemNotStream:
		return "not a websocket: " + p.Detail
	case feed.ProblemTimeout:
		return "timed out: " + p.Detail
	case feed.ProblemHTTP:
		status := fmt.Sprintf("HTTP %d %s", p.Status, http.StatusText(p.Status))
		switch {
		case p.Status == http.StatusUnauthorized:
			return status + ": the target wants a token (--token or SENTINEL_TOP_TOKEN), or this one is wrong"
		case p.Status == http.StatusForbidden:
			return status + ": the target refuses this host name (the agent's AllowHosts, serve's --allow-host) or this token"
		case p.Status >= 500:
			return "not a sentinel-top stream: " + status + ": the server, or a proxy before it, failed"
		}
		return "plain HTTP server, not a sentinel-top stream: " + status + " (agents serve it at " + wire.StreamPath + ")"
	}
	return p.Detail
}

// unreceivedText says which instances' data never arrived, the largest
// gaps first, at most 3 named.
func unreceivedText(w UnreceivedData) string {
	const named = 3
	var b strings.Builder
	n := len(w.Gaps) + w.Others
	if n == 1 && len(w.Gaps) == 1 {
		g := w.Gaps[0]
		fmt.Fprintf(&b, "no data received from %s for %s from %s", g.Instance, gapSpan(g.Ms), gapTime(g.FromMs))
	} else {
		fmt.Fprintf(&b, "no data received from %d %s for %s in all (", n, plural(n, "instance", "instances"), gapSpan(w.TotalMs))
		for i, g := range w.Gaps[:min(len(w.Gaps), named)] {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s from %s", g.Instance, gapSpan(g.Ms), gapTime(g.FromMs))
		}
		if more := n - min(len(w.Gaps), named); more > 0 {
			atLeast := ""
			if w.OthersAtLeast {
				atLeast = "at least "
			}
			fmt.Fprintf(&b, ", %s%d more", atLeast, more)
		}
		b.WriteString(")")
	}
	b.WriteString(": lost while out of reach (a reconnect brings back an agent's last 60 s, Java Sentinel's 10 min); unknown, not idle")
	return b.String()
}

// noticeText is a notice in one line.
func noticeText(n Notice) string {
	switch n.Kind {
	case NoticeNameCollision:
		seconds := "seconds"
		if n.Count == 1 {
			seconds = "second"
		}
		return fmt.Sprintf("%s: lines of one second named %q were summed (Java writes \"|\" as \"_\", so two resources share the name): %d %s from %s",
			n.Instance, n.Resource, n.Count, seconds, time.UnixMilli(n.At).UTC().Format("2006-01-02 15:04:05 UTC"))
	case NoticeInstanceConflict:
		return fmt.Sprintf("targets %s and %s both announce instance %q: kept apart as two instances, %s's shown as %s (one may be impersonating the other)",
			n.Holder, n.Target, n.Resource, n.Target, n.Instance)
	case NoticeReplayLate:
		return fmt.Sprintf("replay: %d %s fed after later ones, the first from %s: too many held to put them in the order of their time",
			n.Count, plural(int(min(n.Count, 2)), "message", "messages"), time.UnixMilli(n.At).UTC().Format("2006-01-02 15:04:05 UTC"))
	case NoticeBeforeHello:
		return fmt.Sprintf("replay: %d %s of %d %s before their hello, from %s, fed without it (as instances of no app): over the %s",
			n.Count, plural(int(min(n.Count, 2)), "line", "lines"), n.Instances, plural(int(min(n.Instances, 2)), "instance", "instances"),
			time.UnixMilli(n.At).UTC().Format("2006-01-02 15:04:05 UTC"), "instances whose hello a replay keeps to feed first")
	}
	return fmt.Sprintf("%s: notice %d about %q", n.Instance, n.Kind, n.Resource)
}

// gapSpan is a gap's time ("2m10.5s"): a whole number of bucket periods
// (the most a Duration holds, 292 years, for a peer's absurd times).
func gapSpan(ms int64) string {
	return (time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond).String()
}

// gapTime is when a gap began, on the sender's clock.
func gapTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 UTC")
}

func secs(ms int64) float64 { return float64(ms) / 1000 }

// unjudgedText says how many trips of a resource a kind could not judge,
// and why.
func unjudgedText(w UnjudgedTrips) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s of %s %s not judged for %s", w.Trips, plural(int(w.Trips), "trip", "trips"), w.App, w.Resource, w.Kind)
	if w.ClosedAtFirstProbe > 0 {
		fmt.Fprintf(&b, " (%d closed at the first probe)", w.ClosedAtFirstProbe)
	}
	b.WriteString(": " + w.Why.Text())
	if w.More > 0 {
		fmt.Fprintf(&b, "; and trips of %d more %s", w.More, plural(w.More, "resource", "resources"))
	}
	return b.String()
}

// coarseText words a CoarseInput warning.
func coarseText(w CoarseInput) string {
	kinds := make([]string, len(w.Kinds))
	for i, k := range w.Kinds {
		kinds[i] = string(k)
	}
	s := fmt.Sprintf("counts and inferred transitions at %s steps: %s cannot be judged at this resolution (they need exact transitions or response times)",
		time.Duration(w.StepMs)*time.Millisecond, strings.Join(kinds, ", "))
	if w.Withheld > 0 {
		s += fmt.Sprintf(", %d %s of theirs not shown", w.Withheld, plural(w.Withheld, "finding", "findings"))
	}
	if w.NoRules {
		s += "; no instance told its rules, so the kinds that judge rules cannot be judged either"
	}
	if w.NoCompletions {
		s += "; the input counts passes and blocks, no completion: completions, errors and response times are unknown, not 0"
	}
	return s
}
