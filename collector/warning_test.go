package collector

import (
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// warningTexts words warnings as the views do.
func warningTexts(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = WarningText(w)
	}
	return out
}

// warningsOf are the warnings of one kind.
func warningsOf[T Warning](ws []Warning) []T {
	var out []T
	for _, w := range ws {
		if x, ok := w.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// TestWarningText: each kind of warning in its one line of words.
func TestWarningText(t *testing.T) {
	const t0 = int64(1764460800000)
	gap := func(name string, ms int64) DataGap { return DataGap{Instance: name, FromMs: t0, Ms: ms, Gaps: 1} }
	for _, tc := range []struct {
		w    Warning
		want string
	}{
		{ClockSkew{Instance: "gw-1", OffsetMs: 2000}, "clock of gw-1 is 2.0 s behind the collector's"},
		{ClockSkew{Instance: "gw-2", OffsetMs: -5049}, "clock of gw-2 is 5.0 s ahead of the collector's"},
		{CollectorClock{Late: true, Instances: 1980, Measured: 2000, MinMs: 2100, MedianMs: 3000, MaxMs: 4000},
			"the collector reads late or its clock is ahead: messages of 1980 of 2000 instances arrive 2.1-4.0 s after their timestamps (median 3.0 s)"},
		{CollectorClock{Instances: 4, Measured: 4, MinMs: 2000, MedianMs: 2600, MaxMs: 9000},
			"the collector's clock is behind: messages of 4 of 4 instances arrive 2.0-9.0 s before their timestamps (median 2.6 s)"},
		{CollectorClock{Instances: 1, Measured: 1, MinMs: 2000, MedianMs: 2000, MaxMs: 2000},
			"the collector's clock is behind: messages of 1 of 1 instance arrive 2.0-2.0 s before their timestamps (median 2.0 s)"},
		{TargetNote{Note: TargetRemark{StatesInferred: true}, Targets: 1},
			"1 target: breaker states not exposed by Java Sentinel: inferred from counts where a resource has only degrade rules"},
		{TargetNote{Note: TargetRemark{StatesInferred: true, RulesError: "GET /getRules: 404"}, Targets: 3},
			"3 targets: breaker states not exposed by Java Sentinel: inferred from counts where a resource has only degrade rules; rules unavailable: GET /getRules: 404"},
		{TargetNote{Note: TargetRemark{RulesError: "e"}, Targets: 2}, "2 targets: rules unavailable: e"},
		{UnreceivedData{Gaps: []DataGap{gap("gw-1", 120_000)}, TotalMs: 120_000},
			"no data received from gw-1 for 2m0s from 2025-11-30 00:00:00 UTC: lost while out of reach " +
				"(a reconnect brings back an agent's last 60 s, Java Sentinel's 10 min); unknown, not idle"},
		{UnreceivedData{Gaps: []DataGap{gap("a", 3000), gap("b", 2000)}, TotalMs: 5000},
			"no data received from 2 instances for 5s in all (a 3s from 2025-11-30 00:00:00 UTC, b 2s from 2025-11-30 00:00:00 UTC): " +
				"lost while out of reach (a reconnect brings back an agent's last 60 s, Java Sentinel's 10 min); unknown, not idle"},
		{UnreceivedData{Gaps: []DataGap{gap("a", 4000), gap("b", 3000), gap("c", 2000), gap("d", 1000)}, Others: 1024, OthersAtLeast: true, TotalMs: 1_000_000},
			"no data received from 1028 instances for 16m40s in all (a 4s from 2025-11-30 00:00:00 UTC, b 3s from 2025-11-30 00:00:00 UTC, " +
				"c 2s from 2025-11-30 00:00:00 UTC, at least 1025 more): " +
				"lost while out of reach (a reconnect brings back an agent's last 60 s, Java Sentinel's 10 min); unknown, not idle"},
		{Notice{Kind: NoticeNameCollision, Instance: "price-1", Resource: "a_b", At: t0, Count: 1},
			`price-1: lines of one second named "a_b" were summed (Java writes "|" as "_", so two resources share the name): 1 second from 2025-11-30 00:00:00 UTC`},
		{Notice{Kind: NoticeNameCollision, Instance: "price-1", Resource: "a_b", At: t0 + 1000, Count: 15},
			`price-1: lines of one second named "a_b" were summed (Java writes "|" as "_", so two resources share the name): 15 seconds from 2025-11-30 00:00:01 UTC`},
		{UnjudgedTrips{Unjudged: triage.Unjudged{Kind: triage.KindLowConfidenceTrip, App: "price", Resource: "queryPrice",
			Trips: 1, Why: triage.UnjudgedMissing}},
			"1 trip of price queryPrice not judged for low-confidence-trip: the per-second counts of the window's seconds never arrived, or lie before the data begins"},
		{UnjudgedTrips{Unjudged: triage.Unjudged{Kind: triage.KindLowConfidenceTrip, App: "price", Resource: "checkStock",
			Trips: 4, ClosedAtFirstProbe: 3, Why: triage.UnjudgedResolution}, More: 2},
			"4 trips of price checkStock not judged for low-confidence-trip (3 closed at the first probe): the window is not made of whole seconds, " +
				"and the seconds around it completed 20 calls or more; and trips of 2 more resources"},
	} {
		if got := WarningText(tc.w); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.w, got, tc.want)
		}
	}
}

// TestProblemText: each kind of a target's failure in words, with what to
// do where the cause is known; the zero Problem says nothing.
func TestProblemText(t *testing.T) {
	for _, tc := range []struct {
		p    feed.Problem
		want string
	}{
		{feed.Problem{}, ""},
		{feed.Problem{Kind: feed.ProblemClosed}, "closed by the peer"},
		{feed.Problem{Kind: feed.ProblemRefused, Where: "10.0.0.4:8719"}, "refused: nothing listens on 10.0.0.4:8719 (connection refused)"},
		{feed.Problem{Kind: feed.ProblemRefused}, "refused: nothing listens there (connection refused)"},
		{feed.Problem{Kind: feed.ProblemNoHost, Where: "gw-9"}, "DNS: no such host gw-9"},
		{feed.Problem{Kind: feed.ProblemNotTLS}, "TLS: the target does not speak TLS (ws:// instead of wss://?)"},
		{feed.Problem{Kind: feed.ProblemHTTP, Status: 401}, "HTTP 401 Unauthorized: the target wants a token (--token or SENTINEL_TOP_TOKEN), or this one is wrong"},
		{feed.Problem{Kind: feed.ProblemHTTP, Status: 502}, "not a sentinel-top stream: HTTP 502 Bad Gateway: the server, or a proxy before it, failed"},
		{feed.Problem{Kind: feed.ProblemHTTP, Status: 404}, "plain HTTP server, not a sentinel-top stream: HTTP 404 Not Found (agents serve it at /sentinel/stream)"},
		{feed.Problem{Kind: feed.ProblemOther, Detail: "stalled: nothing received for 45s"}, "stalled: nothing received for 45s"},
	} {
		if got := ProblemText(tc.p); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}
