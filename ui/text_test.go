package ui

import "testing"

// TestTargetNameKeepsHostAndPort: a target's address cut to fit keeps its
// host and port, the part that tells the targets of one fleet apart.
func TestTargetNameKeepsHostAndPort(t *testing.T) {
	for _, c := range []struct {
		name string
		w    int
		want string
	}{
		{"ws://127.0.0.1:8721/sentinel/stream", 40, "ws://127.0.0.1:8721/sentinel/stream"},
		{"ws://127.0.0.1:8721/sentinel/stream", 30, "ws://127.0.0.1:8721…/stream"},
		{"ws://127.0.0.1:8721/sentinel/stream", 25, "127.0.0.1:8721…/stream"},
		{"ws://127.0.0.1:8721/sentinel/stream", 27, "ws://127.0.0.1:8721…/stream"},
		{"ws://127.0.0.1:8721/sentinel/stream", 20, "127.0.0.1:8721…tream"},
		{"ws://127.0.0.1:8721/sentinel/stream", 14, "127.0.0.1:8721"},
		{"sentinel://10.0.0.3:8719?app=payment", 30, "10.0.0.3:8719?app=payment"},
		{"sentinel://10.0.0.3:8719?app=payment", 20, "10.0.0.3:8719…ayment"},
		{"ws://a-very-long-host-name.example.internal:8721/s", 16, elide("a-very-long-host-name.example.internal:8721", 16)},
		{"10.0.0.4:8719", 30, "10.0.0.4:8719"},
		{"ws://evil\x1b[2J:1/x", 40, "ws://evil" + sanitize("\x1b[2J") + ":1/x"},
	} {
		got := targetName(c.name, c.w)
		if got != c.want || width(got) > c.w {
			t.Errorf("targetName(%q, %d) = %q (%d cells), want %q", c.name, c.w, got, width(got), c.want)
		}
	}
}

// TestResourceNameMarksWhatItLeavesOut: a URL's method and scheme left out
// for want of width leave a mark, so that GET and POST of one path never
// read as one name without a sign that something is missing.
func TestResourceNameMarksWhatItLeavesOut(t *testing.T) {
	for _, c := range []struct {
		name string
		w    int
		want string
	}{
		{"GET:http://member-service/api/user/info", 40, "GET:http://member-service/api/user/info"},
		{"GET:http://member-service/api/user/info", 29, "…member-service/api/user/info"},
		{"POST:http://member-service/api/user/info", 29, "…member-service/api/user/info"},
		{"GET:http://member-service/api/user/info", 28, "member-service…/user/info"},
	} {
		if got := resourceName(c.name, c.w); got != c.want {
			t.Errorf("resourceName(%q, %d) = %q, want %q", c.name, c.w, got, c.want)
		}
	}
}
