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
	// while it runs there): 2.2-3.9 s / 5.5 and 12.9 s when the checksums
	// were still inside it.
	zfsOfflineDowntimeBound = 30 * time.Second
	// zfsLiveDowntimeBound bounds a live hand-over of a VM on ZFS (the
	// pause: the final delta and the checksums of both sides, the
	// switchover): 1.7-2.6 s / 7.1 s.
	zfsLiveDowntimeBound = 20 * time.Second
	// sharedLiveDowntimeBound bounds a live migration of a VM on shared
	// storage (the pause: the last dirty pages and the switchover):
	// 105-231 ms / 1.5 s.
	sharedLiveDowntimeBound = 5 * time.Second
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

// guestTolerance is the tolerance of a live move of the QEMU test
// guest: Drove reports QEMU's downtime (from the source's STOP to the
// switchover); the guest sees from its last chunk before the pause to
// its first after the resume (a chunk interval, 62.5 ms at 1 MiB/s, and
// a resume), its edges detected within a chunk's write. The guest's
// clock is its HPET, which runs on QEMU's virtual clock, and that stands
// still while the VM is paused: the guest's gap stays near one chunk
// interval whatever the pause (62 ms against Drove's 265 ms beside make
// test's load), so Drove's figure is the larger by up to the pause
// itself. A guest clock on host time would see the pause whole (issue
// 30's open point).
var guestTolerance = downtimeTolerance{below: 500 * time.Millisecond, above: 750 * time.Millisecond}

// checkDowntime holds a switched migration's record to the workload's
// gap read from the data on the target (gap): the record carries that
// figure, under bound, and Drove's own within tol of it.
func checkDowntime(t *testing.T, m wire.InstanceMigration, gap, bound time.Duration, tol downtimeTolerance) {
	t.Helper()
	workload := time.Duration(m.WorkloadDowntimeMS) * time.Millisecond
	drove := time.Duration(m.DowntimeMS) * time.Millisecond
	t.Logf("downtime: the workload's timeline on the target %s, the record %s (workload) and %s (Drove's)",
		gap.Round(time.Millisecond), workload, drove)
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
