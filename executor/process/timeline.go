package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// A workload's timeline: how a process the runtime runs tells, from its
// own data, when it ran. With each write the workload writes a record
// into the file TimelineFile of its data directory: its sequence number,
// a clock reading and whether it is the first write since the process
// started. Record seq goes to slot seq mod TimelineSlots, so the file
// never grows, and TimelineSlots writes of history are kept (82 s at the
// tests' 20 ms, 17 min at the demo's 250 ms). The numbers go on across
// stops and starts, wherever the data moved (the workload keeps its
// next number in its data), so after a move the target's data holds the
// last writes on the source and the first on the target: the gap
// between them is the move's downtime as the workload saw it, which no
// timer of Drove's can fake (deploy/allinone's Workload writes one).
const (
	TimelineFile = "timeline"
	// TimelineRecordBytes is one record: "%020d %020d %c\n", the
	// sequence number, the clock in Unix nanoseconds, and 'b' for the
	// first write after a start or 'w' for any other.
	TimelineRecordBytes = 44
	TimelineSlots       = 4096
)

// ErrNoTimeline says the data holds no timeline to measure by: the
// workload writes none, or has not written since the start asked about.
var ErrNoTimeline = errors.New("process: no workload timeline")

// TimelineWrite is one record of a workload's timeline.
type TimelineWrite struct {
	Seq   int64
	At    time.Time
	First bool // the first write after a start
}

// ReadTimeline reads the timeline in dir, in sequence order. A record
// that does not parse (a write the stop cut short, a slot never written)
// is left out.
func ReadTimeline(dir string) ([]TimelineWrite, error) {
	b, err := os.ReadFile(filepath.Join(dir, TimelineFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoTimeline, dir)
	}
	if err != nil {
		return nil, err
	}
	var ws []TimelineWrite
	for off := 0; off+TimelineRecordBytes <= len(b); off += TimelineRecordBytes {
		if w, ok := parseRecord(string(b[off : off+TimelineRecordBytes])); ok {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b TimelineWrite) int { return int(a.Seq - b.Seq) })
	return ws, nil
}

func parseRecord(r string) (TimelineWrite, bool) {
	if r[20] != ' ' || r[41] != ' ' || r[43] != '\n' || (r[42] != 'b' && r[42] != 'w') {
		return TimelineWrite{}, false
	}
	seq, err1 := strconv.ParseInt(r[:20], 10, 64)
	ns, err2 := strconv.ParseInt(r[21:41], 10, 64)
	if err1 != nil || err2 != nil {
		return TimelineWrite{}, false
	}
	return TimelineWrite{Seq: seq, At: time.Unix(0, ns), First: r[42] == 'b'}, true
}

// RestartGap is the gap in ws (in sequence order) at the latest start
// whose first write came at or after since: from the last write before
// it to that first write. ok is false when no such start is in ws, or no
// write before it is.
func RestartGap(ws []TimelineWrite, since time.Time) (gap time.Duration, ok bool) {
	for i := len(ws) - 1; i > 0; i-- {
		if ws[i].First && !ws[i].At.Before(since) {
			return ws[i].At.Sub(ws[i-1].At), true
		}
	}
	return 0, false
}

// WorkloadDowntime is the downtime the workload in dir saw at its start
// at or after since: it waits, polling, until the workload's first write
// after that start is in its timeline (or ctx ends), and returns the gap
// from the write before it.
func WorkloadDowntime(ctx context.Context, dir string, since time.Time) (time.Duration, error) {
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		ws, err := ReadTimeline(dir)
		if err != nil {
			return 0, err
		}
		if gap, ok := RestartGap(ws, since); ok {
			return gap, nil
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: no first write in %s since the start at %s: %v",
				ErrNoTimeline, dir, since.Format(time.RFC3339Nano), context.Cause(ctx))
		}
	}
}
