package downtime

import (
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
)

// The stated defaults, used when nothing was measured. The figures are
// docs/benchmarks.md's moves (issue 30).
const (
	// CopiedOverhead is the stop and start of a switch that sends the
	// final delta of local disks (zfs-local). On first moves, by their
	// workloads, a process runtime on ZFS measured 110 to 201 ms down in
	// all (its final send about 50 ms; the target starts it before the
	// checksum and the commit), a QEMU hand-over 153 to 189 ms with its
	// checksum in the pause. The middle of that range, so that a first
	// move of either is predicted within 50 ms; 200 ms put a process's
	// first moves up to 82 ms over.
	CopiedOverhead = 155 * time.Millisecond
	// SharedOverhead is a live switch of shared storage (QEMU's pause,
	// its last memory pass and the resume on the target): 84 to 180 ms
	// by its guest's writes on first moves (as far apart between two
	// moves of one run), 18 to 115 ms between QEMU's own events. The
	// middle of the guest's range, as above.
	SharedOverhead = 130 * time.Millisecond
	// ChecksumBytesPerSecond is how fast the switch's check reads the
	// final delta on each node: one core hashing.
	ChecksumBytesPerSecond = 200 << 20
)

// Parts are what a prediction is built from.
type Parts struct {
	// Overhead is the switch's fixed cost: stop and start.
	Overhead time.Duration
	// DeltaBytes is the final delta, sent while the instance is down.
	DeltaBytes int64
	// LinkBytesPerSecond is the rate the delta is sent at; 0 or less is
	// read as planner.DefaultLinkBytesPerSecond's 100 MiB/s.
	LinkBytesPerSecond int64
	// ChecksumBytesPerSecond is how fast the delta is checked; 0 means
	// the move checks nothing (shared storage sends no delta).
	ChecksumBytesPerSecond int64
}

// Prediction is a predicted downtime and its parts.
type Prediction struct {
	Overhead, Transfer, Checksum time.Duration
	Parts                        Parts
}

// defaultLink is planner.DefaultLinkBytesPerSecond, which this package
// does not import: the planner library imports nothing of Drove's, and
// this package imports events.
const defaultLink = 100 << 20

// Predict builds the downtime from its parts.
func Predict(p Parts) Prediction {
	if p.LinkBytesPerSecond <= 0 {
		p.LinkBytesPerSecond = defaultLink
	}
	out := Prediction{Overhead: p.Overhead, Parts: p}
	delta := max(p.DeltaBytes, 0)
	out.Transfer = per(delta, p.LinkBytesPerSecond)
	if p.ChecksumBytesPerSecond > 0 {
		out.Checksum = per(delta, p.ChecksumBytesPerSecond)
	}
	return out
}

func per(bytes, rate int64) time.Duration {
	return time.Duration(float64(bytes) / float64(rate) * float64(time.Second))
}

// Total is the predicted downtime.
func (p Prediction) Total() time.Duration { return p.Overhead + p.Transfer + p.Checksum }

// String says how the figure was built, for estimates and records.
func (p Prediction) String() string {
	s := fmt.Sprintf("%s = %s stop and start", ms(p.Total()), ms(p.Overhead))
	if p.Parts.DeltaBytes <= 0 {
		return s + ", no final delta"
	}
	s += fmt.Sprintf(" + %s final delta of %s at %s/s", ms(p.Transfer), events.FormatBytes(p.Parts.DeltaBytes),
		events.FormatBytes(p.Parts.LinkBytesPerSecond))
	if p.Parts.ChecksumBytesPerSecond > 0 {
		s += fmt.Sprintf(" + %s checksum of it at %s/s", ms(p.Checksum), events.FormatBytes(p.Parts.ChecksumBytesPerSecond))
	}
	return s
}

// ms renders a duration in whole milliseconds, as budgets are given.
func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// DefaultOverhead is the stated overhead of an instance of kind k in run
// state rs when no switch was measured, and what it assumes. A stopped
// instance has nothing to stop or start. The runtime is the executor's
// to know, not the log's, so the storage kind stands for it: copied
// disks are switched offline or handed over, shared ones moved live.
func DefaultOverhead(k events.StorageKind, rs events.RunState) (time.Duration, string) {
	switch {
	case rs != events.RunRunning:
		return 0, fmt.Sprintf("the instance is %s: nothing to stop or start", rs)
	case k.CopiedOnMove():
		return CopiedOverhead, fmt.Sprintf("no switch measured yet: %s assumed to stop and start (a process runtime on ZFS measured 110 to 201 ms down on first moves, a QEMU hand-over 153 to 189 ms)", ms(CopiedOverhead))
	}
	return SharedOverhead, fmt.Sprintf("no switch measured yet: %s assumed for a live switch (QEMU on shared storage measured 84 to 180 ms down by its guest on first moves)", ms(SharedOverhead))
}

// ChecksumRate is the checksum rate of kind k's switch: copied disks
// are checked on both nodes in the switch's pause; shared ones not.
func ChecksumRate(k events.StorageKind) int64 {
	if k.CopiedOnMove() {
		return ChecksumBytesPerSecond
	}
	return 0
}

// Fits reports whether p is within budget; a budget of 0 is none.
func Fits(p Prediction, budget time.Duration) bool {
	return budget <= 0 || p.Total() <= budget
}
