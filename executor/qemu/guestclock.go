package qemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// The writing guest's clock stamps (guestboot/boot.S): each chunk's first
// sector holds the HPET counter at the chunk, the counter when the
// guest last saw the RTC's seconds change (an edge) and those seconds.
// The HPET stands still while the VM is paused, the RTC (the host's
// clock) does not: between two true edges the HPET counts one second,
// unless the VM was paused between them, and then the seconds the RTC
// moved on beyond what the HPET counted are the pause. So a live move's
// downtime, as the guest itself saw it, is read from its disk after the
// move, with no clock of Drove's.

// ErrNoGuestClock says a disk holds no clock stamps to measure a pause
// by: no writing guest, or it has not written long enough since.
var ErrNoGuestClock = errors.New("qemu: no guest clock stamps")

type guestStamp struct {
	seq, hpet, edge uint32
	sec             int // the RTC's seconds, 0-59
}

// readGuestStamps reads the clock stamps of the chunks in the ring of the
// disk image at path, in chunk order, and the header's chunk count; a
// slot that is torn or holds no stamp is left out.
func readGuestStamps(path string) (chunks uint32, out []guestStamp, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	slots := uint32((fi.Size() - ringLBA*512) / chunkBytes)
	h := make([]byte, 512)
	if _, err := f.ReadAt(h, headerLBA*512); err != nil {
		return 0, nil, err
	}
	if u32(h, 0) != headerMagic {
		return 0, nil, fmt.Errorf("%w: %s has no guest header", ErrNoGuestClock, path)
	}
	chunks = u32(h, 4) + 1
	s := make([]byte, 32)
	for k := uint32(0); k < slots; k++ {
		if _, err := f.ReadAt(s, int64(ringLBA+k*chunkSectors)*512); err != nil && !errors.Is(err, io.EOF) {
			return 0, nil, err
		}
		sec, ok := fromBCD(u32(s, 24))
		if u32(s, 0) != dataMagic || u32(s, 28) != stampMagic || u32(s, 20) == 0 || !ok {
			continue // never written, or not since the guest first saw an edge
		}
		out = append(out, guestStamp{seq: u32(s, 4), hpet: u32(s, 16), edge: u32(s, 20), sec: sec})
	}
	slices.SortFunc(out, func(a, b guestStamp) int { return int(int64(a.seq) - int64(b.seq)) })
	return chunks, out, nil
}

func fromBCD(v uint32) (int, bool) {
	hi, lo := int(v>>4&0xf), int(v&0xf)
	if v > 0xff || hi > 5 || lo > 9 {
		return 0, false
	}
	return hi*10 + lo, true
}

type guestEdge struct {
	hpet uint32
	sec  int
}

// trueEdges are the edges of stamps that are one HPET second from the
// edge before or after them, their seconds one apart: the guest saw the
// seconds change as they changed. The first change it sees after a boot
// or a pause is mid-second, and left out.
func trueEdges(st []guestStamp) []guestEdge {
	var es []guestEdge
	for _, s := range st {
		if len(es) == 0 || es[len(es)-1].hpet != s.edge {
			es = append(es, guestEdge{hpet: s.edge, sec: s.sec})
		}
	}
	const tol = hpetHz / 5 // how late the guest may see an edge
	oneApart := func(a, b guestEdge) bool {
		d := int64(b.hpet - a.hpet)
		return d > hpetHz-tol && d < hpetHz+tol && (b.sec-a.sec+60)%60 == 1
	}
	var out []guestEdge
	for i, e := range es {
		if (i > 0 && oneApart(es[i-1], e)) || (i+1 < len(es) && oneApart(e, es[i+1])) {
			out = append(out, e)
		}
	}
	return out
}

// guestPause finds the longest pause of the guest's VM whose end is at
// or after the HPET counter from, and the chunks' usual HPET gap (the
// median) around it: the guest's gap in writes across the pause is their
// sum, the pause falling between two chunks a usual gap apart (where in
// that gap the HPET does not tell). Between two true edges the RTC's seconds and the HPET's count
// differ by the pauses between them; jitter in seeing an edge cancels
// over a run of them, so the pause is measured over the pair of edges
// where it shows most and one edge either side (a first change seen
// after the resume can pass for a true edge, and split the pause
// between two pairs). ok is false when no two true edges follow from.
func guestPause(st []guestStamp, from uint32) (pause, gap time.Duration, ok bool) {
	es := trueEdges(st)
	drift := func(a, b guestEdge) time.Duration {
		return time.Duration((b.sec-a.sec+60)%60)*time.Second - ticks(b.hpet-a.hpet)
	}
	k := -1
	for i := 1; i < len(es); i++ {
		if int32(es[i].hpet-from) >= 0 && (k < 0 || drift(es[i-1], es[i]) > drift(es[k-1], es[k])) {
			k = i
		}
	}
	if k < 0 {
		return 0, 0, false
	}
	a, b := es[max(k-2, 0)], es[min(k+1, len(es)-1)]
	for i := max(k-2, 0) + 1; i <= min(k+1, len(es)-1); i++ {
		pause += drift(es[i-1], es[i]) // over each pair: the seconds of each under a minute
	}
	var gaps []time.Duration
	for i := 1; i < len(st); i++ {
		x, y := st[i-1], st[i]
		if y.seq == x.seq+1 && int32(x.hpet-a.hpet) >= 0 && int32(b.hpet-y.hpet) >= 0 {
			gaps = append(gaps, ticks(y.hpet-x.hpet))
		}
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		gap = gaps[len(gaps)/2]
	}
	return max(pause, 0), gap, true
}

// guestPauseWindow is how many seconds of the guest's clock before the
// newest chunk GuestDowntime looks for the pause in: the ring of chunks
// must hold them, and two and a half more (31 s at 1 MiB/s on a 32 MiB
// disk).
const guestPauseWindow = 6

func ticks(t uint32) time.Duration { return time.Duration(int64(t) * int64(time.Second) / hpetHz) }

// GuestDowntime is the pause a writing guest whose VM resumed just
// before the call saw, read from the clock stamps on its disk at path:
// the gap in its writes across the pause, as its own clocks (the RTC and
// the HPET) tell it. It waits, polling, until the guest has written for
// long enough after the resume to have seen two true edges (about two
// and a half seconds), or until ctx ends.
func GuestDowntime(ctx context.Context, path string) (time.Duration, error) {
	_, st, err := readGuestStamps(path)
	if err != nil {
		return 0, err
	}
	if len(st) == 0 {
		return 0, fmt.Errorf("%w in %s", ErrNoGuestClock, path)
	}
	// The pause is a little before the newest chunk now (the guest wrote
	// on while the switch committed), earlier moves' pauses further back.
	newest := st[len(st)-1].hpet
	from := newest - guestPauseWindow*hpetHz
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-poll.C:
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: no two true edges after the resume in %s: %v", ErrNoGuestClock, path, context.Cause(ctx))
		}
		_, now, err := readGuestStamps(path)
		if err != nil {
			return 0, err
		}
		if len(now) == 0 || int32(now[len(now)-1].hpet-newest) < 5*hpetHz/2 {
			continue // an edge, the next, and the one after to confirm
		}
		if pause, gap, ok := guestPause(now, from); ok {
			return pause + gap, nil
		}
	}
}

// LongestGuestGap is the longest gap in a writing guest's writes across a
// pause of its VM that the clock stamps on its disk at path still hold:
// after a live move, the move's downtime as the guest saw it, found by a
// reader that was not there when the guest resumed (a test's).
func LongestGuestGap(path string) (time.Duration, error) {
	_, st, err := readGuestStamps(path)
	if err != nil {
		return 0, err
	}
	if len(st) == 0 {
		return 0, fmt.Errorf("%w in %s", ErrNoGuestClock, path)
	}
	pause, gap, ok := guestPause(st, st[0].hpet)
	if !ok {
		return 0, fmt.Errorf("%w: no two true edges in %s", ErrNoGuestClock, path)
	}
	return pause + gap, nil
}
