package qemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// The writing guest's clock stamps (guestboot/boot.S): with each chunk
// the guest notes the HPET counter, the counter when it last saw the
// RTC's seconds change (an edge) and those seconds, in the chunk's first
// sector and in its timeline, which keeps the last 16,368 of them
// whatever the ring of chunks holds. The two clocks differ in what a
// pause does to them, and that is the measurement:
//
//   - the HPET runs on QEMU's virtual clock, which stands still while the
//     VM is paused and travels with it in a migration (the source's
//     count goes on on the target), so it counts the guest's running
//     time only;
//   - the RTC (mc146818) runs on the host's clock (-rtc clock=host, which
//     Driver.args sets), and its time travels in a migration as a base
//     on that clock, so on the target it reads the host's time: it moves
//     on across a pause.
//
// So the RTC's time less the HPET's is a constant that steps up by each
// pause. Every edge the guest saw gives that difference, late by as long
// as the guest took to look (it polls the RTC, and waits for a core
// beside load): never too high. The highest of the edges before a pause
// and of a few after it are the difference either side, and their step
// the pause, on host time, read from the guest's own data.

// ErrNoGuestClock says a disk holds no clock stamps to measure a pause
// by: no writing guest, it has not written long enough since, or its
// stamps of the pause are gone.
var ErrNoGuestClock = errors.New("qemu: no guest clock stamps")

const timelineMagic = 0x4c545244 // "DRTL"

// guestStamp is one chunk's clock stamp, its HPET readings unwrapped
// (the guest's 32 bits of the counter wrap every 43 s).
type guestStamp struct {
	seq, round uint32
	hpet       int64 // the HPET counter at the chunk
	edge       int64 // the counter at the edge before it; -1: none seen yet
	sec        int   // the RTC's seconds at that edge, 0-59
}

// readGuestStamps reads the clock stamps of the guest's timeline on the
// disk image at path, in chunk order: the newest run of consecutive
// chunks of one boot (a guest booted again starts its HPET and rounds
// afresh, so earlier stamps do not compare).
func readGuestStamps(path string) ([]guestStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, (headerLBA-timelineLBA)*512)
	if _, err := f.ReadAt(b, timelineLBA*512); err != nil {
		return nil, err
	}
	type raw struct{ seq, hpet, edge, sec, round uint32 }
	var rs []raw
	for k := range uint32(timelineSectors) {
		for j := range uint32(16) {
			e := b[k*512+j*32:]
			r := raw{u32(e, 0), u32(e, 4), u32(e, 8), u32(e, 12), u32(e, 16)}
			if u32(e, 28) == timelineMagic && r.seq%16 == j && r.seq/16%timelineSectors == k {
				rs = append(rs, r)
			}
		}
	}
	slices.SortFunc(rs, func(a, b raw) int { return int(int64(a.seq) - int64(b.seq)) })
	first := 0
	for i := 1; i < len(rs); i++ {
		if rs[i].seq != rs[i-1].seq+1 || rs[i].round < rs[i-1].round {
			first = i
		}
	}
	var out []guestStamp
	var hpet int64
	for i, r := range rs[first:] {
		if i == 0 {
			hpet = int64(r.hpet)
		} else {
			hpet += int64(r.hpet - rs[first+i-1].hpet)
		}
		sec, ok := fromBCD(r.sec)
		if !ok {
			return nil, fmt.Errorf("%w: chunk %d's stamp in %s has seconds %#x", ErrNoGuestClock, r.seq, path, r.sec)
		}
		s := guestStamp{seq: r.seq, round: r.round, hpet: hpet, edge: -1, sec: sec}
		if r.edge != 0 {
			s.edge = hpet - int64(r.hpet-r.edge)
		}
		out = append(out, s)
	}
	return out, nil
}

func fromBCD(v uint32) (int, bool) {
	hi, lo := int(v>>4&0xf), int(v&0xf)
	if v > 0xff || hi > 5 || lo > 9 {
		return 0, false
	}
	return hi*10 + lo, true
}

// guestEdge is an edge the guest saw: the HPET counter then, the RTC's
// time less the HPET's (the RTC's seconds counted from the first edge),
// low by the guest's delay in seeing it, and the host's whole second of
// the RTC's seconds then. The RTC's seconds need not change on the
// host's whole seconds (edges 0.01 s and at least 0.69 s into the host's
// second were seen, on two VMs): the edge fell within the second after
// at.
type guestEdge struct {
	hpet int64
	off  time.Duration
	at   time.Time
}

// guestEdges are the edges of the stamps st, in order, dated by read,
// the host's time when st was read from a running guest's disk: its
// newest edge is the latest whole second with its RTC seconds up to a
// second after read (the reader's clock may be a little behind that of
// the guest's host). Two edges more than a minute apart on the host (a
// pause of a minute) would count as one minute less: the RTC's seconds
// do not tell.
func guestEdges(st []guestStamp, read time.Time) []guestEdge {
	var es []guestEdge
	var hosts []time.Duration // each edge's seconds since the first
	var host time.Duration
	prev := 0
	for _, s := range st {
		if s.edge < 0 || (len(es) > 0 && es[len(es)-1].hpet == s.edge) {
			continue
		}
		if len(es) > 0 {
			d := (s.sec - prev + 60) % 60
			if d == 0 {
				d = 60
			}
			host += time.Duration(d) * time.Second
		}
		prev = s.sec
		es = append(es, guestEdge{hpet: s.edge, off: host - ticks(s.edge)})
		hosts = append(hosts, host)
	}
	newest := read.UTC().Add(time.Second).Truncate(time.Second)
	for newest.Second() != prev {
		newest = newest.Add(-time.Second)
	}
	for i := range es {
		es[i].at = newest.Add(hosts[i] - host)
	}
	return es
}

// edgesAfter is how many edges after a pause its step is measured over:
// the highest offset of a few is the guest's most prompt look. Before a
// pause every edge counts: the offset only ever steps up, so the highest
// of all of them is the level just before the pause, from the most
// prompt look even if the looks were slow just before it (a pre-copy
// holds QEMU's lock the guest's port reads wait on: 100 ms late seen).
const edgesAfter = 3

// top is the highest offset of es.
func top(es []guestEdge) time.Duration {
	return slices.MaxFunc(es, func(a, b guestEdge) int { return int(a.off - b.off) }).off
}

// step is the pause just before edge i: the highest offset of up to
// edgesAfter edges from i less the highest of every edge before it.
func step(es []guestEdge, i int) time.Duration {
	return top(es[i:min(i+edgesAfter, len(es))]) - top(es[:i])
}

// guestPause finds the longest pause of the guest's VM between the
// host's times from and to, to a second or two: the first edge after it
// may be later than from, the last before it is earlier than to (an
// edge fell within the second after its at). The window is what keeps
// an earlier, longer pause (a reader's, a snapshot's) from being taken
// for the one asked about, and from adding itself to it: a split's step
// counts the edgesAfter edges after it, which can hold a later pause.
// The pause must have two edges seen before it and edgesAfter after it
// (so that every reader of the stamps, once they hold that many,
// measures it alike); a window that reaches back before the guest's
// third edge has no figure: the pause may lie where it cannot be
// measured, and the best split after it would say none. With the pause,
// the chunks' usual HPET gap (the median) where it fell: the guest's gap
// in writes across the pause, from its last write before to its first
// after, on host time, is their sum (the HPET does not tell which two
// chunks the pause fell between, only between which two edges). ok is
// false when there is no such pause.
func guestPause(st []guestStamp, es []guestEdge, from, to time.Time) (pause, gap time.Duration, ok bool) {
	if len(es) < 2 || es[1].at.Add(time.Second).After(from) {
		return 0, 0, false
	}
	in := func(i int) bool {
		return i >= 2 && i+edgesAfter <= len(es) && es[i].at.Add(time.Second).After(from) && es[i-1].at.Before(to)
	}
	k := -1
	for i := range es {
		if in(i) && (k < 0 || step(es, i) > step(es, k)) {
			k = i
		}
	}
	if k < 0 {
		return 0, 0, false
	}
	k = firstRise(es, k, in)
	a, b := es[k-1].hpet, es[k].hpet
	var gaps []time.Duration
	for i := 1; i < len(st); i++ {
		if x, y := st[i-1], st[i]; y.hpet >= a && x.hpet <= b {
			gaps = append(gaps, ticks(y.hpet-x.hpet))
		}
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		gap = gaps[len(gaps)/2]
	}
	// Not step(es, k): the edge before k may be one seen at the resume
	// (firstRise), so the level before the pause leaves it out.
	return max(top(es[k:k+edgesAfter])-top(es[:k-1]), 0), gap, true
}

// riseOver is how far above every edge before it an edge's offset must
// be to be after a pause: the offset of an edge without a pause before it
// is that high only if every edge before it was seen later than it by
// as much.
const riseOver = 5 * time.Millisecond

// firstRise is where the pause the best split k measured ends: the first
// edge, from the one before k to two after it, to rise above every edge
// before it. The pause's step is measured from there, against the edges
// before the one before it: that one may be the edge of a second that
// ended in the pause, seen at the resume, mid-second, its offset risen
// only by the part of the pause after it (under riseOver when the pause
// began just before the second's end). Readers whose windows differ
// (the executor's from the switch's start, a test's from before its
// request) take k one edge apart and so must arrive at the same edge:
// the range reaches two past k. Only the splits in (the caller's
// window) are looked at.
func firstRise(es []guestEdge, k int, in func(int) bool) int {
	for j := k - 1; j <= k+2; j++ {
		if in(j) && es[j].off > top(es[:j])+riseOver {
			return j
		}
	}
	return k
}

// unknownSince is how far before GuestDowntime's call a pause is looked
// for when its earliest start is not known: the switch's pause is a
// little before (the guest wrote on while the switch committed).
const unknownSince = 6 * time.Second

func ticks(t int64) time.Duration { return time.Duration(t) * (time.Second / hpetHz) }

// GuestDowntime is the pause a writing guest whose VM resumed just
// before the call saw, read from the clock stamps on its disk at path:
// the gap in its writes across the pause on host time. since is when
// the pause could begin at the earliest (the switch's start, or the
// start of the VM it resumed in): a pause before it is not this one;
// zero (a VM found running, its start unknown) is unknownSince before
// the call. It waits, polling, until the guest has seen four edges since
// the call (three to four seconds), or until ctx ends.
func GuestDowntime(ctx context.Context, path string, since time.Time) (time.Duration, error) {
	called := time.Now()
	if since.IsZero() {
		since = called.Add(-unknownSince)
	}
	st, err := readGuestStamps(path)
	if err != nil {
		return 0, err
	}
	if len(st) == 0 {
		return 0, fmt.Errorf("%w in %s", ErrNoGuestClock, path)
	}
	newest := st[len(st)-1].seq
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-poll.C:
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: no edges seen after the resume in %s: %v", ErrNoGuestClock, path, context.Cause(ctx))
		}
		if gap, ok, err := pauseSince(path, newest, since, called, time.Now()); err != nil || ok {
			return gap, err
		}
	}
}

// pauseSince measures the pause between since and called, about chunk
// newest, once the guest has seen one edge more than edgesAfter after
// it (the pause fell less than a chunk interval after it if at all, one
// edge at most); read is when the stamps are read.
func pauseSince(path string, newest uint32, since, called, read time.Time) (time.Duration, bool, error) {
	st, err := readGuestStamps(path)
	if err != nil {
		return 0, false, err
	}
	i, found := slices.BinarySearchFunc(st, newest, func(s guestStamp, seq uint32) int { return int(int64(s.seq) - int64(seq)) })
	if !found {
		return 0, false, fmt.Errorf("%w: chunk %d's stamp is gone from %s (the guest booted again?)", ErrNoGuestClock, newest, path)
	}
	at := st[i].hpet
	es := guestEdges(st, read)
	after := 0
	for _, e := range es {
		if e.hpet > at {
			after++
		}
	}
	if after <= edgesAfter {
		return 0, false, nil
	}
	pause, gap, ok := guestPause(st, es, since, called)
	if !ok {
		return 0, false, fmt.Errorf("%w: no pause since %s with two edges before it in %s (the guest ran under three seconds before it?)", ErrNoGuestClock, since.Format(time.TimeOnly), path)
	}
	return pause + gap, true, nil
}

// GuestGap is the longest gap in a writing guest's writes across a pause
// of its VM between the host's times from and to (to the second), as the
// clock stamps on its disk at path hold it: after a live move, with from
// and to around the switch, the move's downtime as the guest saw it,
// found by a reader that was not there when the guest resumed (a
// test's). The guest must run on: its newest stamps date the rest.
func GuestGap(path string, from, to time.Time) (time.Duration, error) {
	return gapBetween(path, from, to, time.Now())
}

func gapBetween(path string, from, to, read time.Time) (time.Duration, error) {
	st, err := readGuestStamps(path)
	if err != nil {
		return 0, err
	}
	pause, gap, ok := guestPause(st, guestEdges(st, read), from, to)
	if !ok {
		return 0, fmt.Errorf("%w: no pause between %s and %s with two edges before and %d after in %s",
			ErrNoGuestClock, from.Format(time.TimeOnly), to.Format(time.TimeOnly), edgesAfter, path)
	}
	return pause + gap, nil
}
