package e2e

import (
	"testing"
	"time"

	"github.com/drovehq/drove/gateway/wire"
)

// Downtime as the workload sees it (issue 30). Every workload of these
// tests keeps a timeline of its own writes in its data (the process
// runtime's writer: executor/process's timeline; the QEMU test guest:
// qemu.ReadGuestWrites), so a move's downtime is read from the data on
// the target after the move — the gap from the last write on the source
// to the first on the target — and held to a bound, and Drove's own
// figure to a stated tolerance of it.

// The bounds hold on a 2-core machine beside two busy loops (the tests'
// load rule) and other engineers' tests, under the race detector, with
// zfs-fuse: they are what a tenant may be promised here, not the goal of
// a quiet machine (figures: the workload's, quiet / beside load).
const (
	// zfsOfflineDowntimeBound bounds a ZFS switch of a process (stop, final
	// delta, start on the target; the checksums and the commit follow
	// while it runs there): 413 and 493 ms beside two busy loops (it was
	// 5.5 and 12.9 s there while the checksums were inside it).
	zfsOfflineDowntimeBound = 10 * time.Second
	// zfsLiveDowntimeBound bounds a live hand-over of a VM on ZFS (the
	// pause: the final delta and the checksums of both sides, the
	// switchover; then one chunk interval of the guest's): 174-335 ms /
	// 276-463 ms, 400 ms under the race detector. Beside make test's
	// heavier load a pause of 7.1 s was seen when the hand-over took ten
	// times as long quiet.
	zfsLiveDowntimeBound = 10 * time.Second
	// sharedLiveDowntimeBound bounds a live migration of a VM on shared
	// storage (the pause: the last dirty pages, planned within QEMU's
	// 300 ms downtime limit, and the switchover; then one chunk
	// interval): 101-339 ms / 96-346 ms, 107-143 ms under the race
	// detector; 1.5 s was seen beside make test's load. With the sync
	// capped so that it holds (TestLiveMigrationShared): 77-90 ms /
	// 95-106 ms, 80-89 ms under the race detector.
	sharedLiveDowntimeBound = 3 * time.Second
)

// downtimeTolerance is how far Drove's figure may be from the
// workload's. Drove times from the stop it asks for to the start it
// hears of; the workload's gap runs from its last write before the stop
// (up to one interval earlier, plus the write) to its first after the
// start (the shell's start and one write, partly within the start's
// settling time). So the workload's figure is the larger, by at most an
// interval and a process start, and may be smaller by at most the
// settling time. Beside the load every fork of the workload's loop and
// every reply between the executors can take a few hundred ms more.
type downtimeTolerance struct {
	below, above time.Duration // workload - Drove within [-below, +above]
}

// zfsProcessTolerance is the tolerance of a ZFS move of the tests'
// process workload (20 ms interval, 20 ms settle).
// Measured: the workload's figure 20–34 ms below Drove's.
var zfsProcessTolerance = downtimeTolerance{below: 250 * time.Millisecond, above: 750 * time.Millisecond}

// guestChunkInterval is how often the QEMU test guest writes a chunk of
// 64 KiB at 1 MiB/s (liveWriteRate, zfsLiveWriteRate), by its clock.
const guestChunkInterval = 62500 * time.Microsecond

// guestTolerance is the tolerance of a live move of the QEMU test
// guest: Drove reports the pause it timed (from the source's STOP to the
// switchover's completion); the guest's gap, on host time (its RTC
// against its HPET, qemu.GuestDowntime), runs from its last chunk before
// the pause to its first after the resume on the target: the pause,
// which holds Drove's span and the target's resume after it, and one
// chunk interval. So the guest's figure is the larger, by the interval
// and the resume, and smaller only if Drove heard of the completion
// late (beside load) or by the error of the guest's edges (a few ms).
// Measured: the guest's 64-77 ms above Drove's quiet, 64-78 ms beside
// two busy loops, 65-69 ms under the race detector (where the guest's
// figure was 530 ms to 1.1 s until it was read within a window around
// the switch: it had taken the test's own longer pauses to read the
// guest's disk just before).
var guestTolerance = downtimeTolerance{below: 100 * time.Millisecond, above: guestChunkInterval + 250*time.Millisecond}

// checkDowntime holds a switched migration's record to the workload's
// gap read from the data on the target (gap): the record carries that
// figure, under bound, and Drove's own within tol of it.
func checkDowntime(t *testing.T, m wire.InstanceMigration, gap, bound time.Duration, tol downtimeTolerance) {
	t.Helper()
	workload := time.Duration(m.WorkloadDowntimeMS) * time.Millisecond
	drove := time.Duration(m.DowntimeMS) * time.Millisecond
	t.Logf("downtime: the workload's timeline on the target %s, the record %s (workload) and %s (Drove's)",
		gap.Round(time.Millisecond), workload, drove)
	if workload <= 0 {
		t.Errorf("the record has no workload downtime; the workload's timeline on the target shows %s", gap)
	}
	if d := workload - gap; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("the record says the workload was down %s; its timeline on the target shows %s", workload, gap)
	}
	if gap <= 0 || gap > bound {
		t.Errorf("the workload was down %s, want at most %s", gap, bound)
	}
	if d := gap - drove; d < -tol.below || d > tol.above {
		t.Errorf("Drove reports %s down, the workload saw %s: want the workload's within [-%s, +%s] of Drove's",
			drove, gap, tol.below, tol.above)
	}
}
