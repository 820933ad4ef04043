// The replay keys: pause, speed and seek, sent to the ReplayControl from
// commands, in the order the keys were pressed.

package ui

import (
	"math"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
)

// speeds are the steps of < and >; 0 is as fast as possible, the fastest.
var speeds = []float64{0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 0}

// seekStep is how far [ and ] move a replay.
const seekStep = 10 * time.Second

// replayDoneMsg says a command has made its calls to the replay.
type replayDoneMsg struct{}

// replaySteer turns the replay keys into calls to the ReplayControl. Update
// only queues them: a command makes them, and the calls queued meanwhile
// wait for its replayDoneMsg to go out in the next one, so they reach the
// replay in key order though commands run concurrently. It also remembers
// what the replay was last told until a snapshot shows it.
type replaySteer struct {
	ctrl  ReplayControl // nil: no replay to steer
	queue []func(ReplayControl)
	busy  bool // a command is making calls

	speed        float64
	speedSet     bool
	pausePending *bool
}

// Key handles a replay key given the replay's last reported status; ok is
// false for any other key, or when there is no replay to steer.
func (r *replaySteer) Key(msg tea.KeyMsg, k *keyMap, st collector.ReplayStatus) (_ tea.Cmd, ok bool) {
	if r.ctrl == nil {
		return nil, false
	}
	switch {
	case key.Matches(msg, k.Pause):
		paused := st.Paused
		if r.pausePending != nil {
			paused = *r.pausePending
		}
		call := ReplayControl.Pause
		if paused {
			call = ReplayControl.Resume
		}
		paused = !paused
		r.pausePending = &paused
		return r.call(call), true
	case key.Matches(msg, k.Slower), key.Matches(msg, k.Faster):
		speed := st.Speed
		if r.speedSet {
			speed = r.speed
		}
		i := speedIndex(speed)
		if key.Matches(msg, k.Faster) {
			i = min(i+1, len(speeds)-1)
		} else {
			i = max(i-1, 0)
		}
		r.speed, r.speedSet = speeds[i], true
		return r.call(func(c ReplayControl) { c.SetSpeed(speeds[i]) }), true
	case key.Matches(msg, k.SeekBack):
		return r.seek(-seekStep), true
	case key.Matches(msg, k.SeekFwd):
		return r.seek(seekStep), true
	}
	return nil, false
}

// Seen is told that a new snapshot arrived: it shows the replay's state.
func (r *replaySteer) Seen() { r.pausePending = nil }

// Done handles the end of the command making calls: the calls queued
// since go out in the next one.
func (r *replaySteer) Done() tea.Cmd {
	r.busy = false
	return r.next()
}

func (r *replaySteer) seek(d time.Duration) tea.Cmd {
	ms := d.Milliseconds()
	return r.call(func(c ReplayControl) { c.SeekBy(ms) })
}

// call queues a call and returns the command that makes it, or nil while
// an earlier command is still making its calls.
func (r *replaySteer) call(f func(ReplayControl)) tea.Cmd {
	r.queue = append(r.queue, f)
	if r.busy {
		return nil
	}
	return r.next()
}

// next returns a command making the queued calls in order, nil when none
// is queued.
func (r *replaySteer) next() tea.Cmd {
	if len(r.queue) == 0 {
		return nil
	}
	calls, ctrl := r.queue, r.ctrl
	r.queue, r.busy = nil, true
	return func() tea.Msg {
		for _, f := range calls {
			f(ctrl)
		}
		return replayDoneMsg{}
	}
}

// speedIndex finds the step nearest to x.
func speedIndex(x float64) int {
	if x <= 0 {
		return len(speeds) - 1
	}
	best := 0
	for i, s := range speeds[:len(speeds)-1] {
		if math.Abs(s-x) < math.Abs(speeds[best]-x) {
			best = i
		}
	}
	return best
}
