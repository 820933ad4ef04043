package source

import (
	"cmp"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// MaxReplayMessages bounds the messages NewReplayMessages takes (they are
// in memory already); a recording replayed with NewReplay is streamed and
// has no such bound.
const MaxReplayMessages = 5_000_000

// DefaultMaxReplayBytes is ReplayOptions.MaxBytes when it is zero.
const DefaultMaxReplayBytes = 512 << 20

// ReplayOptions configures a replay. Every field is optional.
type ReplayOptions struct {
	// Limits bound every message (wire.Limits; zero fields take its
	// defaults).
	Limits wire.Limits
	// MaxBytes bounds the input a replay reads in one pass, decompressed,
	// and what it copies of an input that cannot be read twice (a pipe):
	// a gzip bomb or /dev/zero ends with an error. It does not bound
	// memory: a replay streams its input, one message at a time. Default
	// DefaultMaxReplayBytes (512 MiB).
	MaxBytes int64
	// WallClock paces the replay's speed in real time. Default:
	// core.NewRealClock().
	WallClock core.Clock
	// MaxReorderBytes bounds what a pass holds to feed the messages in
	// the order of their time (replayorder.go): past it, a message may be
	// fed after a later one, counted and shown. Default
	// DefaultMaxReorderBytes (64 MiB).
	MaxReorderBytes int64
	// MaxEarlyHellos bounds the instances whose lines come before their
	// hello in the input and whose hello (and rules) the replay keeps, to
	// feed them first, as MaxReorderBytes bounds the bytes they take; past
	// either, such lines are fed without them (as an instance of no app),
	// counted and shown. Default DefaultMaxEarlyHellos (4,096).
	MaxEarlyHellos int
}

// Replay feeds a recorded fixture into a sink on a virtual clock, at a
// chosen speed, with pause and seek. Create it with NewReplay (or
// NewReplayMessages), give it the sink to feed with Start (a store whose
// clock is the replay's Clock), and run it with Run.
type Replay struct {
	sink  feed.ReplaySink
	clock *core.VirtualClock
	wall  core.Clock
	name  string

	// What the first pass learnt: messages (the meta line included), the
	// meta line, the bad lines (how many, the first) and the range.
	count int
	meta  *wire.Meta
	rejN  int
	rej1  lineReject
	from  int64
	to    int64
	// rejects are the bad parts of converted input, counted at the start
	// (NewReplayMessages); a recording's are counted as a pass meets them.
	rejects []lineReject
	// order is what the first pass learnt of the input's order, and
	// maxReorder the bound of what a pass holds to feed by time.
	order      *scanOrder
	maxReorder int64
	// told is what the sink was told of the order: the most any pass met.
	told feed.ReplayOrder

	// The pass in progress; only Run's goroutine moves it.
	open  replayOpener
	pass  replayPass
	ord   *reorder    // the pass's reorder stage
	done1 func()      // ends the pass
	next  *replayItem // the next message to feed; nil at the end
	err   error       // why the pass failed

	mu     sync.Mutex // guards what the controls set and the status
	speed  float64
	paused bool
	done   bool
	fed    int // messages fed, to look at ctx now and then
	seekTo *int64
	gen    uint64 // statuses told to the sink
	stay   bool   // Run stays after the end, for the controls
	wake   chan struct{}
}

type lineReject struct {
	place string
	err   error
}

// replayStep is how often a replay at a finite speed moves its clock while
// waiting for the next message, so the UI's clock keeps running.
const replayStep = 50 * time.Millisecond

// NewReplay reads the recording src (named name in messages) through once,
// for its range, and returns a replay at speed (0: as fast as possible),
// its clock at the recording's start. The replay streams it (see
// replaysource.go): what it holds does not grow with the recording, and
// each pass reads at most ReplayOptions.MaxBytes, decompressed. Lines that
// cannot be used are counted as rejected, with their file:line, as the
// replay meets them.
func NewReplay(name string, src io.Reader, speed float64, opts ReplayOptions) (*Replay, error) {
	open, first, spool, err := fileOpener(name, src, opts)
	if err != nil {
		return nil, err
	}
	r := &Replay{name: name, open: open, order: newScanOrder(opts)}
	closeWhenUnused(r, spool)
	rd := wire.NewReaderLimits(first, name, opts.Limits)
	rd.LimitInput(replayBound(opts))
	if err := r.scan(linePass(rd, name, replayBound(opts))); err != nil {
		return nil, err
	}
	return r.start(speed, opts)
}

// NewReplayMessages replays messages converted from another format (a
// Sentinel metric log, say). rejects are the input's unusable parts: a
// *wire.LineError is counted with its file:line, anything else with name.
// Messages are named by their index in places.
func NewReplayMessages(name string, msgs []wire.Message, rejects []error, speed float64, opts ReplayOptions) (*Replay, error) {
	if len(msgs) > MaxReplayMessages {
		return nil, errors.New(name + ": more than 5,000,000 messages; split the input")
	}
	r := &Replay{name: name, open: messagesOpener(name, msgs), order: newScanOrder(opts)}
	for _, err := range rejects {
		place := name
		var le *wire.LineError
		if errors.As(err, &le) {
			place, err = le.Pos.String(), le.Err
		}
		r.rejects = append(r.rejects, lineReject{place, err})
	}
	pass, _, _ := r.open()
	if err := r.scan(pass); err != nil {
		return nil, err
	}
	if len(r.rejects) > 0 {
		r.rejN, r.rej1 = len(r.rejects), r.rejects[0]
	}
	return r.start(speed, opts)
}

// start sets the replay's clock at the start of its range.
func (r *Replay) start(speed float64, opts ReplayOptions) (*Replay, error) {
	r.speed, r.wake = max(speed, 0), make(chan struct{}, 1)
	r.maxReorder = cmp.Or(opts.MaxReorderBytes, DefaultMaxReorderBytes)
	r.clock = core.NewVirtualClock(time.UnixMilli(r.from))
	r.wall = opts.WallClock
	if r.wall == nil {
		r.wall = core.NewRealClock()
	}
	return r, nil
}

// Start gives the replay the sink it feeds (a store on the replay's Clock)
// and opens the first pass: the sink is told the replay's status, and
// what the input holds before its first message that cannot be used is
// counted. Call it once, before Run.
func (r *Replay) Start(sink feed.ReplaySink) error {
	r.sink = sink
	r.tell()
	if o := r.order; o.unnamed > 0 {
		r.told.Unnamed, r.told.UnnamedInstances, r.told.UnnamedAt = o.unnamed, o.unnamedInst, o.unnamedAt
		sink.ReplayOrdered(r.told)
	}
	return r.rewind()
}

// rewind starts a new pass from the beginning: the rejects of converted
// input are counted again, and the first message is read.
func (r *Replay) rewind() error {
	if r.done1 != nil {
		r.done1()
	}
	r.pass, r.done1, r.next = nil, nil, nil
	pass, done, err := r.open()
	if err != nil {
		return err
	}
	r.pass, r.done1 = pass, done
	r.ord = newReorder(pass, r.order, r.maxReorder)
	for _, rj := range r.rejects {
		r.sink.Reject(rj.place, rj.err)
	}
	r.advance()
	return r.err
}

// advance reads the pass's next message into next, counting the bad lines
// on the way; at the end (or when the input fails, err) next is nil.
func (r *Replay) advance() {
	r.next = nil
	for r.pass != nil {
		it, ok, err := r.ord.next()
		if err != nil || !ok {
			r.err = cmp.Or(r.err, err)
			r.done1()
			r.pass, r.done1 = nil, nil
			return
		}
		if it.err != nil {
			r.sink.Reject(it.place, it.err)
			continue
		}
		r.next = &it
		if r.ord.late > r.told.Late {
			r.told.Late, r.told.LateAt = r.ord.late, r.ord.lateAt
			r.sink.ReplayOrdered(r.told)
		}
		return
	}
}

// Messages counts the messages of the input, meta lines left out: 0 means
// there is nothing to replay.
func (r *Replay) Messages() int {
	n := r.count
	if r.meta != nil {
		n--
	}
	return n
}

// Rejects counts the input's unusable parts and returns the first, with
// its place (file:line).
func (r *Replay) Rejects() (n int, place string, err error) {
	return r.rejN, r.rej1.place, r.rej1.err
}

// Name is the input's name, as given to NewReplay.
func (r *Replay) Name() string { return r.name }

// Clock is the replay's virtual clock.
func (r *Replay) Clock() *core.VirtualClock { return r.clock }

// Range is the fixture's time range, Unix ms.
func (r *Replay) Range() (from, to int64) { return r.from, r.to }

// Meta is the fixture's meta line, if it has one.
func (r *Replay) Meta() *wire.Meta { return r.meta }

func (r *Replay) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Stay makes Run stay after the end until its context ends, even at speed
// 0, so that a user can still seek back (a dashboard); without it, Run at
// speed 0 returns once everything was fed (a report).
func (r *Replay) Stay() { r.control(func() { r.stay = true }) }

// Pause stops feeding until Resume.
func (r *Replay) Pause() { r.control(func() { r.paused = true }) }

// Resume continues after Pause.
func (r *Replay) Resume() { r.control(func() { r.paused = false }) }

// SetSpeed sets the speed: 1 is real time, 0 as fast as possible.
func (r *Replay) SetSpeed(x float64) { r.control(func() { r.speed = max(x, 0) }) }

// SeekBy moves the position by deltaMs; backwards starts over from the
// beginning and feeds up to the new position at full speed.
func (r *Replay) SeekBy(deltaMs int64) {
	r.control(func() {
		target := r.clock.UnixMilli() + deltaMs
		target = min(max(target, r.from), r.to)
		r.seekTo = &target
	})
}

// control applies a user's change under the replay's lock, tells the
// sink the new status, and wakes the feeding goroutine.
func (r *Replay) control(f func()) {
	r.mu.Lock()
	f()
	r.mu.Unlock()
	r.tell()
	r.poke()
}

// tell hands the sink the replay's status (before Start, Start tells it).
// It is called with no lock held: the sink never calls back into the
// replay, and the replay never holds its lock while it calls the sink, so
// neither can wait on the other. Statuses carry a generation, so one told
// late never replaces a newer one.
func (r *Replay) tell() {
	r.mu.Lock()
	r.gen++
	st := feed.ReplayStatus{Active: true, Paused: r.paused, Speed: r.speed, From: r.from, To: r.to, Done: r.done}
	gen, sink := r.gen, r.sink
	r.mu.Unlock()
	if sink != nil {
		sink.SetReplay(st, gen)
	}
}

// setDone records whether every message has been fed, and tells the
// sink when that changed.
func (r *Replay) setDone(done bool) {
	r.mu.Lock()
	changed := r.done != done
	r.done = done
	r.mu.Unlock()
	if changed {
		r.tell()
	}
}

// Done reports whether every message has been fed.
func (r *Replay) Done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

// Run feeds the fixture until ctx ends. At speed 0, with nothing paused and
// without Stay, it returns as soon as everything has been fed; otherwise it
// stays until ctx ends, so the user can seek back.
//
// Only Run's goroutine moves the position and feeds the sink, and it
// does so holding no lock of the replay's: the controls only set what Run
// reads next.
func (r *Replay) Run(ctx context.Context) error {
	for {
		r.mu.Lock()
		seek := r.seekTo
		r.seekTo = nil
		paused, speed := r.paused, r.speed
		r.mu.Unlock()
		if seek != nil {
			target := *seek
			if target < r.clock.UnixMilli() {
				r.setDone(false)
				r.sink.Reset()
				r.clock.Set(time.UnixMilli(r.from))
				if err := r.rewind(); err != nil {
					return err
				}
			}
			for r.next != nil && r.ts() <= target {
				r.feedOne()
			}
			r.clock.Set(time.UnixMilli(target))
			r.setDone(r.next == nil)
			continue
		}
		if r.err != nil {
			return r.err
		}
		if r.next == nil {
			r.setDone(true)
			r.mu.Lock()
			stay := r.stay
			r.mu.Unlock()
			if speed == 0 && !paused && !stay {
				return nil
			}
			if !r.sleep(ctx, time.Hour) {
				return ctx.Err()
			}
			continue
		}
		if paused {
			if !r.sleep(ctx, time.Hour) {
				return ctx.Err()
			}
			continue
		}
		ts := r.ts()
		now := r.clock.UnixMilli()
		if speed == 0 || ts <= now {
			r.feedOne()
			if r.fed++; speed == 0 && r.fed%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		// Wait in steps, moving the clock with real time.
		step := min(time.Duration(float64(ts-now)/speed*float64(time.Millisecond)), replayStep)
		wall := r.wall
		start := wall.Now()
		if !r.sleep(ctx, step) {
			return ctx.Err()
		}
		r.mu.Lock()
		speed = r.speed
		r.mu.Unlock()
		adv := time.Duration(float64(wall.Now().Sub(start)) * speed)
		if next := r.clock.Now().Add(adv); next.UnixMilli() > ts {
			r.clock.Set(time.UnixMilli(ts))
		} else {
			r.clock.Set(next)
		}
	}
}

// ts is the time of the next message (a meta line takes the clock's).
func (r *Replay) ts() int64 {
	if _, ok := r.next.m.(*wire.Meta); ok {
		return r.clock.UnixMilli()
	}
	return r.next.m.Head().Ts
}

// feedOne ingests the next message and reads the one after; only Run's
// goroutine calls it.
func (r *Replay) feedOne() {
	if ts := r.ts(); ts > r.clock.UnixMilli() {
		r.clock.Set(time.UnixMilli(ts))
	}
	// The hello and rules that name the message's instance go first, at
	// its time (replayorder.go).
	for _, it := range r.ord.ahead(*r.next) {
		r.ingest(it)
	}
	r.ingest(*r.next)
	r.advance()
}

// ingest hands one message to the sink.
func (r *Replay) ingest(it replayItem) {
	if h, ok := it.m.(*wire.Hello); ok {
		r.sink.Hello(it.place, h, OriginOf(h.SDK)) // a recording of a Java target is still Java's
	} else {
		r.sink.Ingest(it.place, it.m)
	}
}

// sleep waits d, or until poked; false when ctx ended.
func (r *Replay) sleep(ctx context.Context, d time.Duration) bool {
	fired := make(chan struct{})
	t := r.wall.AfterFunc(d, func() { close(fired) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-r.wake:
	case <-fired:
	}
	return true
}
