package ui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestReplayCallsOnlyFromCommands: Update never calls the replay; the
// commands it returns do, one at a time, in key order.
func TestReplayCallsOnlyFromCommands(t *testing.T) {
	src := goldenSource()
	src.set(replaySnapshot(false))
	rp := &fakeReplay{}
	src.replay = rp
	m := newTestModel(src, 120, 40)
	var cmds []tea.Cmd
	for _, k := range keys("><p[]p") {
		if _, cmd := m.Update(k); cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	if got := rp.log(); got != "" {
		t.Fatalf("Update called the replay: %s", got)
	}
	// the first key's command goes out; the others wait for it.
	if len(cmds) != 1 {
		t.Fatalf("%d commands for keys pressed before the first was done, want 1", len(cmds))
	}
	msg := cmds[0]()
	if got := rp.log(); got != "speed ×8" {
		t.Fatalf("the first command made %q", got)
	}
	_, next := m.Update(msg)
	if next == nil {
		t.Fatal("no command for the keys queued")
	}
	if got := rp.log(); got != "speed ×8" {
		t.Fatalf("Update called the replay: %s", got)
	}
	msg = next()
	if _, cmd := m.Update(msg); cmd != nil {
		t.Error("a command with nothing left to call")
	}
	if got, want := rp.log(), "speed ×8,speed ×4,pause,seek -10000,seek 10000,resume"; got != want {
		t.Errorf("replay calls: got %s, want %s", got, want)
	}
	// idle again: the next key's command goes out at once.
	if _, cmd := m.Update(keys(">")[0]); cmd == nil {
		t.Error("no command for a key pressed while idle")
	}
}

// TestReplayKeysWithoutReplay: with no control the replay keys do nothing.
func TestReplayKeysWithoutReplay(t *testing.T) {
	src := goldenSource()
	src.set(replaySnapshot(false))
	m := newTestModel(src, 120, 40)
	for _, k := range keys("><p[]") {
		if _, cmd := m.Update(k); cmd != nil {
			t.Errorf("%v: a command without a replay to steer", k)
		}
	}
}
