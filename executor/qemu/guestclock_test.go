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
// of its HPET, which stands still in pause; the RTC's seconds on host
// time, each edge seen late by late(its host time) while the VM runs, or
// at the resume if it fell in the pause.
type clockRun struct {
	start, interval time.Duration // host time of the first chunk; HPET time between chunks
	pauseAt, pause  time.Duration // host time the pause begins; its length
	chunks          int
	late            func(host time.Duration) time.Duration
}

// guestTime is the HPET's time at host time h.
func (c clockRun) guestTime(h time.Duration) time.Duration {
	if h > c.pauseAt {
		return h - min(h-c.pauseAt, c.pause)
	}
	return h
}

// edges are the guest's edges: the HPET's time it saw each at, and
// the RTC's seconds then.
func (c clockRun) edges(until time.Duration) (hpet []time.Duration, secs []int) {
	for s := c.start.Truncate(time.Second) + time.Second; s < until; s += time.Second {
		at := s
		if at > c.pauseAt && at < c.pauseAt+c.pause {
			at = c.pauseAt + c.pause
		}
		hpet, secs = append(hpet, c.guestTime(at+c.late(at))), append(secs, int(s/time.Second)%60)
	}
	return hpet, secs
}

// write writes the timeline to a disk image at path, as boot.S does.
func (c clockRun) write(t *testing.T, path string) {
	t.Helper()
	b := make([]byte, ringLBA*512+2*chunkBytes)
	put := func(off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
	hpet, secs := c.edges(c.start + time.Duration(c.chunks)*c.interval + c.pause + time.Second)
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
			run := clockRun{start: c.start, interval: c.interval, pauseAt: c.pauseAt, pause: c.pause,
				chunks: int((c.pauseAt-c.start)/c.interval) + c.chunksAfterPause,
				late: func(h time.Duration) time.Duration {
					if h < c.pauseAt && h > c.pauseAt-2*time.Second {
						return c.lateBeforePause + time.Duration(r.Int64N(int64(20*time.Millisecond)))
					}
					return time.Duration(r.Int64N(int64(time.Millisecond)))
				}}
			disk := filepath.Join(t.TempDir(), "d.raw")
			run.write(t, disk)
			got, err := LongestGuestGap(disk)
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
	run := clockRun{start: 10 * time.Second, interval: 62500 * time.Microsecond, pauseAt: 14500 * time.Millisecond,
		pause: 250 * time.Millisecond, chunks: 80, late: func(time.Duration) time.Duration { return 0 }}
	disk := filepath.Join(t.TempDir(), "d.raw")
	run.write(t, disk)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if got, err := GuestDowntime(ctx, disk); !errors.Is(err, ErrNoGuestClock) {
		t.Errorf("with 0.25 s of chunks after the pause: %s, %v; want ErrNoGuestClock", got, err)
	}
}

// A pause is measured to within a few ms wherever it falls in a second,
// from 30 ms to 1.7 s long, at 13 and 62.5 ms a chunk, the looks before
// it up to 150 ms late and after it up to 3 ms.
func TestGuestPauseAnywhere(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for _, pause := range []time.Duration{30 * time.Millisecond, 260 * time.Millisecond, 900 * time.Millisecond, 1700 * time.Millisecond} {
		for at := 14 * time.Second; at < 15*time.Second; at += 37 * time.Millisecond {
			for _, iv := range []time.Duration{13 * time.Millisecond, 62500 * time.Microsecond} {
				run := clockRun{start: 10*time.Second + time.Duration(r.Int64N(int64(time.Second))), interval: iv, pauseAt: at, pause: pause,
					chunks: int((at-10*time.Second)/iv) + int(4*time.Second/iv),
					late: func(h time.Duration) time.Duration {
						if h < at && h > at-2*time.Second {
							return time.Duration(r.Int64N(int64(150 * time.Millisecond)))
						}
						return time.Duration(r.Int64N(int64(3 * time.Millisecond)))
					}}
				disk := filepath.Join(t.TempDir(), "d.raw")
				run.write(t, disk)
				got, err := LongestGuestGap(disk)
				if err != nil {
					t.Fatal(err)
				}
				if d := got - (pause + iv); d < -5*time.Millisecond || d > 5*time.Millisecond {
					t.Errorf("paused %s at %s, a chunk every %s: the guest's gap %s, want %s", pause, at, iv, got, pause+iv)
				}
			}
		}
	}
}
