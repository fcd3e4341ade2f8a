package qemu

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// clockRun simulates a writing guest's timeline: a chunk every interval
// of its HPET, which stands still in each pause; the RTC's seconds on
// host time, phase after the host's, each edge seen late by late(its
// host time) while the VM runs, or at the resume if it fell in a pause.
// Host time h is time.Unix(0, 0) plus h.
type clockRun struct {
	start, interval time.Duration // host time of the first chunk; HPET time between chunks
	phase           time.Duration // when in the host's second the RTC's seconds change
	pauses          []span        // in order, apart
	chunks          int
	late            func(host time.Duration) time.Duration
}

// span is a pause: when it begins on host time, and its length.
type span struct{ at, len time.Duration }

// guestTime is the HPET's time at host time h.
func (c clockRun) guestTime(h time.Duration) time.Duration {
	g := h
	for _, p := range c.pauses {
		g -= min(max(h-p.at, 0), p.len)
	}
	return g
}

// edges are the guest's edges: the HPET's time it saw each at, and
// the RTC's seconds then.
func (c clockRun) edges(until time.Duration) (hpet []time.Duration, secs []int) {
	for s := c.start.Truncate(time.Second) + time.Second; s+c.phase < until; s += time.Second {
		at := s + c.phase
		for _, p := range c.pauses {
			if at > p.at && at < p.at+p.len {
				at = p.at + p.len
			}
		}
		hpet, secs = append(hpet, c.guestTime(at+c.late(at))), append(secs, int(s/time.Second)%60)
	}
	return hpet, secs
}

// paused is the pauses' length in all.
func (c clockRun) paused() (d time.Duration) {
	for _, p := range c.pauses {
		d += p.len
	}
	return d
}

// end is the host time of the last chunk.
func (c clockRun) end() time.Duration {
	return c.start + time.Duration(c.chunks-1)*c.interval + c.paused()
}

// host is host time h as a time.
func host(h time.Duration) time.Time { return time.Unix(0, 0).Add(h) }

// gap is the longest gap across a pause between the host's times from
// and to in the timeline written at path, read at the last chunk.
func (c clockRun) gap(path string, from, to time.Duration) (time.Duration, error) {
	return gapBetween(path, host(from), host(to), host(c.end()))
}

// write writes the timeline to a disk image at path, as boot.S does.
func (c clockRun) write(t *testing.T, path string) {
	t.Helper()
	b := make([]byte, ringLBA*512+2*chunkBytes)
	put := func(off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
	hpet, secs := c.edges(c.end() + time.Second)
	for n := range c.chunks {
		g := c.start + time.Duration(n)*c.interval // the HPET's time of chunk n
		off := timelineLBA*512 + (n/16%timelineSectors)*512 + n%16*32
		put(off, uint32(n))
		put(off+4, uint32(g/10))
		for i := range hpet {
			if hpet[i] <= g {
				put(off+8, uint32(hpet[i]/10))
				put(off+12, uint32(secs[i]/10<<4|secs[i]%10))
			}
		}
		put(off+16, 1)
		put(off+28, timelineMagic)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The gap across a pause is the pause and one chunk interval, on host
// time, however late the guest saw the edges just before the pause (a
// pre-copy's lock) as long as it saw some promptly earlier on, and
// whether the pause spans a second's edge or not; the HPET's wrap of its
// 32 bits (every 43 s) is no matter.
func TestGuestPauseFromTheTimeline(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name             string
		start, pauseAt   time.Duration
		pause, interval  time.Duration
		lateBeforePause  time.Duration
		wantWithin       time.Duration
		chunksAfterPause int
	}{
		{"within a second", 10 * time.Second, 14200 * time.Millisecond, 250 * time.Millisecond, 62500 * time.Microsecond, 0, time.Millisecond, 64},
		{"across an edge", 10 * time.Second, 14900 * time.Millisecond, 260 * time.Millisecond, 62500 * time.Microsecond, 0, time.Millisecond, 64},
		{"late looks in the pre-copy", 10 * time.Second, 14500 * time.Millisecond, 300 * time.Millisecond, 13 * time.Millisecond, 120 * time.Millisecond, 3 * time.Millisecond, 300},
		{"seconds long, over the HPET's wrap", 40 * time.Second, 44300 * time.Millisecond, 2600 * time.Millisecond, 62500 * time.Microsecond, 0, time.Millisecond, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := clockRun{start: c.start, interval: c.interval, pauses: []span{{c.pauseAt, c.pause}},
				chunks: int((c.pauseAt-c.start)/c.interval) + c.chunksAfterPause,
				late: func(h time.Duration) time.Duration {
					if h < c.pauseAt && h > c.pauseAt-2*time.Second {
						return c.lateBeforePause + time.Duration(r.Int64N(int64(20*time.Millisecond)))
					}
					return time.Duration(r.Int64N(int64(time.Millisecond)))
				}}
			disk := filepath.Join(t.TempDir(), "d.raw")
			run.write(t, disk)
			got, err := run.gap(disk, c.pauseAt-time.Second, c.pauseAt+c.pause+time.Second)
			if err != nil {
				t.Fatal(err)
			}
			want := c.pause + c.interval
			if d := got - want; d < -c.wantWithin || d > c.wantWithin {
				t.Errorf("the guest's gap %s, want %s (paused %s, chunks every %s)", got, want, c.pause, c.interval)
			}
		})
	}
}

// Without four edges seen after the chunk newest at the call there is
// no figure, not a wrong one.
func TestGuestPauseNeedsEdgesAfter(t *testing.T) {
	run := clockRun{start: 10 * time.Second, interval: 62500 * time.Microsecond, pauses: []span{{14500 * time.Millisecond, 250 * time.Millisecond}},
		chunks: 80, late: func(time.Duration) time.Duration { return 0 }}
	disk := filepath.Join(t.TempDir(), "d.raw")
	run.write(t, disk)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if got, err := GuestDowntime(ctx, disk, time.Time{}); !errors.Is(err, ErrNoGuestClock) {
		t.Errorf("with 0.25 s of chunks after the pause: %s, %v; want ErrNoGuestClock", got, err)
	}
}

// A pause is measured to within 3 ms wherever it falls in a second,
// from 30 ms to 1.7 s long, at 13 and 62.5 ms a chunk, the looks before
// it up to 150 ms late and after it up to 3 ms.
func TestGuestPauseAnywhere(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for _, pause := range []time.Duration{30 * time.Millisecond, 260 * time.Millisecond, 900 * time.Millisecond, 1700 * time.Millisecond} {
		for at := 14 * time.Second; at < 15*time.Second; at += 37 * time.Millisecond {
			for _, iv := range []time.Duration{13 * time.Millisecond, 62500 * time.Microsecond} {
				run := clockRun{start: 10*time.Second + time.Duration(r.Int64N(int64(time.Second))), interval: iv, pauses: []span{{at, pause}},
					chunks: int((at-10*time.Second)/iv) + int(4*time.Second/iv),
					late: func(h time.Duration) time.Duration {
						if h < at && h > at-2*time.Second {
							return time.Duration(r.Int64N(int64(150 * time.Millisecond)))
						}
						return time.Duration(r.Int64N(int64(3 * time.Millisecond)))
					}}
				disk := filepath.Join(t.TempDir(), "d.raw")
				run.write(t, disk)
				got, err := run.gap(disk, at-time.Second, at+pause+time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if d := got - (pause + iv); d < -3*time.Millisecond || d > 3*time.Millisecond {
					t.Errorf("paused %s at %s, a chunk every %s: the guest's gap %s, want %s", pause, at, iv, got, pause+iv)
				}
			}
		}
	}
}

// A reader's pauses just before the switch, longer than the switch's
// own: the e2e tests pause the guest to read its disk, under the race
// detector for 330-360 ms each, three within a second, and the switch
// paused it for 149 ms two seconds later (the RTC's seconds 0.3 s into
// the host's). Over the whole timeline the
// longest split took a reader's pause and the switch's with it, the
// switch in its edges after (640 ms seen); within the switch's window
// the switch's pause is measured alone, by a test's reader and by
// GuestDowntime's.
func TestGuestPauseWithinItsWindow(t *testing.T) {
	const ms = time.Millisecond
	r := rand.New(rand.NewPCG(3, 4))
	sw := span{55450 * ms, 149 * ms}
	run := clockRun{start: 40 * time.Second, interval: 62500 * time.Microsecond, phase: 300 * ms,
		pauses: []span{{52285 * ms, 357 * ms}, {52654 * ms, 326 * ms}, {53004 * ms, 355 * ms}, sw},
		late:   func(time.Duration) time.Duration { return time.Duration(r.Int64N(int64(20 * ms))) }}
	call := sw.at + sw.len + 250*ms // when the executor asks, just after the resume
	newest := int((run.guestTime(call) - run.start) / run.interval)
	run.chunks = newest + int(5*time.Second/run.interval)
	disk := filepath.Join(t.TempDir(), "d.raw")
	run.write(t, disk)
	// Two edges between the readers' pauses and the switch's, each seen
	// up to 20 ms late, set the level before it: within 20 ms.
	want, within := sw.len+run.interval, 20*ms
	since := sw.at - 250*ms // the incoming VM's start
	got, err := run.gap(disk, since, call)
	if err != nil {
		t.Fatal(err)
	}
	if d := got - want; d < -within || d > within {
		t.Errorf("a reader's gap around the switch %s, want %s", got, want)
	}
	got, ok, err := pauseSince(disk, uint32(newest), host(since), host(call), host(run.end()))
	if err != nil || !ok {
		t.Fatalf("GuestDowntime's reading: %v, measured %v", err, ok)
	}
	if d := got - want; d < -within || d > within {
		t.Errorf("GuestDowntime's gap %s, want %s", got, want)
	}
	whole, err := run.gap(disk, 0, run.end())
	t.Logf("the switch's gap %s; over the whole timeline the longest %s (%v)", got, whole, err)
}

// A pause before the guest's third edge (a VM moved two seconds after
// its boot; the RTC's seconds 0.8 s into the host's) cannot be measured:
// there is no figure, where the best split after it said the guest was
// not paused at all (63 ms, one chunk interval, seen for 170 ms).
func TestGuestPauseTooEarlyHasNoFigure(t *testing.T) {
	const ms = time.Millisecond
	run := clockRun{start: 10*time.Second + 500*ms, interval: 62500 * time.Microsecond, phase: 800 * ms, pauses: []span{{12519 * ms, 170 * ms}},
		late: func(time.Duration) time.Duration { return 0 }}
	run.chunks = int(6 * time.Second / run.interval)
	disk := filepath.Join(t.TempDir(), "d.raw")
	run.write(t, disk)
	if got, err := run.gap(disk, 12400*ms, 12800*ms); !errors.Is(err, ErrNoGuestClock) {
		t.Errorf("a pause 2 s after the first chunk: %s, %v; want ErrNoGuestClock", got, err)
	}
}

// Every reader measures a pause alike, whatever its window around it:
// the executor's, from the switch's start to just after the resume, and
// a test's, from before its request to long after. A pause that began
// a few ms before a second's edge has the edge seen at the resume, its
// rise only those few ms: within the executor's window that edge was
// once taken for the last before the pause (the figure low by its
// rise), within the test's the edge before it (CI saw the two readings
// 1-2 ms apart).
func TestGuestPauseAlikeInEveryWindow(t *testing.T) {
	const ms = time.Millisecond
	r := rand.New(rand.NewPCG(5, 6))
	for _, before := range []time.Duration{500 * time.Microsecond, 2 * ms, 3 * ms, 4 * ms, 6 * ms, 8 * ms, 40 * ms, 300 * ms} {
		for _, lead := range []time.Duration{20 * ms, 50 * ms, 150 * ms, 300 * ms, 600 * ms, 900 * ms} {
			phase := time.Duration(r.Int64N(int64(time.Second)))
			sw := span{15*time.Second + phase - before, 409 * ms}
			run := clockRun{start: 5 * time.Second, interval: 9 * ms, phase: phase,
				pauses: []span{sw},
				late:   func(time.Duration) time.Duration { return time.Duration(r.Int64N(int64(ms))) }}
			call := sw.at + sw.len + 20*ms
			newest := int((run.guestTime(call) - run.start) / run.interval)
			run.chunks = newest + int(8*time.Second/run.interval)
			disk := filepath.Join(t.TempDir(), "d.raw")
			run.write(t, disk)
			since := sw.at - lead
			exec, ok, err := pauseSince(disk, uint32(newest), host(since), host(call), host(run.end()))
			if err != nil || !ok {
				t.Fatalf("the executor's reading: %v, measured %v", err, ok)
			}
			test, err := run.gap(disk, since-1500*ms, call+3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			want := sw.len + run.interval
			if d := exec - test; d < -ms/2 || d > ms/2 || (exec-want).Abs() > 2*ms {
				t.Errorf("paused %s, %s before an edge, the switch %s before: the executor's reading %s, a test's %s; want both %s",
					sw.len, before, lead, exec, test, want)
			}
		}
	}
}
