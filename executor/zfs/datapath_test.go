package zfs_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/zfsenv"
)

// Faults on the data path of a migration: each ends with the source's
// copy intact and its instance running there, and no second copy running.

// sourceIntact checks that instance runs on the source, whose file base
// reads as want, and runs nowhere else.
func sourceIntact(t *testing.T, poolA string, rtA, rtB *zfs.MemRuntime, instance, want string) {
	t.Helper()
	if !rtA.IsRunning(instance) {
		t.Errorf("%s does not run on the source", instance)
	}
	if rtB.IsRunning(instance) {
		t.Errorf("%s runs on the target too", instance)
	}
	if got := fileSum(t, filepath.Join("/"+poolA, instance, "base")); got != want {
		t.Errorf("the source's content changed: %s, want %s", got, want)
	}
}

// TestSwitchRefusesACorruptedTarget: the target's copy is damaged after
// the final delta and before the switch's checksum (bytes of a block the
// delta carried); the switch is refused with a checksum mismatch naming
// the file and block, the source runs on over its own data, and an abort
// clears the target. The instance ran on the target during that checksum
// (started as soon as the final delta was in) and never on both nodes.
func TestSwitchRefusesACorruptedTarget(t *testing.T) {
	const size = 4 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 128), zfsenv.Pool(t, "b", 128)
	w := newWorld(t, []string{"na", "nb"}, instance("vm8", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm8")
	fill(t, "/"+poolA+"/vm8", size)
	rtA, rtB := zfs.NewMemRuntime("vm8"), zfs.NewMemRuntime()
	w.node("na", poolA, rtA, nil)
	nb := w.node("nb", poolB, rtB, nil)
	// The switch sums the final snapshot in a clone of it, the instance
	// running on the target: each of its sums (a partial one, then a
	// whole one after the mismatch) reads a clone of its own, and each is
	// damaged. The sum ahead of the switch is of another snapshot.
	var ahead atomic.Int64
	var startedEarly atomic.Bool
	corrupted := make(chan error, 4)
	nb.driver.BeforeTargetSum(func(ctx context.Context, root string, n, prev int) {
		if ahead.CompareAndSwap(0, int64(n)) || ahead.Load() == int64(n) {
			return
		}
		startedEarly.Store(rtB.IsRunning("vm8"))
		corrupted <- corrupt(root)
	})
	running, most := oneWriter(rtA, rtB)
	running.Store(1) // on the source

	m := w.migration("m8", "vm8", "na", "nb")
	m.must(events.PhaseBegin)
	m.must(events.PhaseSync)
	// The instance writes block 0 after the last sync: the final delta
	// carries it, so the switch's checksum reads it again on both sides.
	writeAt(t, "/"+poolA+"/vm8/base", 0, []byte(strings.Repeat("written after the last sync\n", 100)))
	want := fileSum(t, "/"+poolA+"/vm8/base")
	e := m.ended(m.dispatch(events.PhaseSwitch))
	select {
	case err := <-corrupted:
		if err != nil {
			t.Fatalf("corrupting the target: %v", err)
		}
	default:
		t.Fatal("the switch's checksum never ran on the target")
	}
	t.Logf("switch ended %s: %s", e.Status, e.Error)
	if !startedEarly.Load() {
		t.Error("the instance did not run on the target during the switch's checksum")
	}
	if e.Status != events.JobError || !strings.Contains(e.Error, zfs.ErrChecksum.Error()) || !strings.Contains(e.Error, "base (blocks 0") {
		t.Fatalf("switch ended %s: %s; want a checksum mismatch naming base's block 0", e.Status, e.Error)
	}
	sourceIntact(t, poolA, rtA, rtB, "vm8", want)
	notCommitted(t, poolB+"/vm8", "m8")
	m.must("abort")
	if left := datasets(t, poolB, "vm8"); len(left) > 0 {
		t.Fatalf("left on the target after the abort: %v", left)
	}
	sourceIntact(t, poolA, rtA, rtB, "vm8", want)
	if n := most.Load(); n > 1 {
		t.Errorf("the instance ran on %d nodes at once", n)
	}
}

// oneWriter counts the nodes that run the instance (rts' starts and
// stops) and the most that ever did at once.
func oneWriter(rts ...*zfs.MemRuntime) (running, most *atomic.Int32) {
	running, most = new(atomic.Int32), new(atomic.Int32)
	for _, rt := range rts {
		rt.OnStart = func(zfs.Instance) {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		}
		rt.OnStop = func(zfs.Instance) { running.Add(-1) }
	}
	return running, most
}

// notCommitted fails t if dataset ds exists and is marked committed by
// migration id (a target rolled back on a fatal fault is gone).
func notCommitted(t *testing.T, ds, id string) {
	t.Helper()
	c, err := zfsOut(t.Context(), "get", "-H", "-o", "value", "drove:committed", ds)
	if err != nil && !errors.Is(err, errNoDataset) {
		t.Fatal(err)
	}
	if strings.Contains(c, id) {
		t.Fatalf("the target's copy is marked committed: %s", c)
	}
}

// corrupt flips bytes in block 0 of the file base in dataset ds, through
// its mount, as a failing disk or a stray writer on the target would.
func corrupt(root string) error {
	f, err := os.OpenFile(filepath.Join(root, "base"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte("CORRUPTED"), 100); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTargetPoolFillsDuringAReceive: the target's pool has room for half
// the sync's stream (another writer took the rest before the move); the
// receive fills it and fails for want of space, the source runs on,
// intact, and an abort leaves nothing of the move on the target. (The
// room is made before the sync, not by a writer racing a capped send: on
// a loaded machine the send won that race.)
func TestTargetPoolFillsDuringAReceive(t *testing.T) {
	const size = 32 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 256), zfsenv.Pool(t, "b", 128)
	w := newWorld(t, []string{"na", "nb"}, instance("vm9", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm9")
	fill(t, "/"+poolA+"/vm9", size)
	want := fileSum(t, "/"+poolA+"/vm9/base")
	rtA, rtB := zfs.NewMemRuntime("vm9"), zfs.NewMemRuntime()
	// A retried sync meets the same full pool: two attempts are enough.
	w.tweakExecutor("na", func(c *executor.Config) { c.Retry.Attempts = 2 })
	w.node("na", poolA, rtA, nil)
	w.node("nb", poolB, rtB, nil)

	m := w.migration("m9", "vm9", "na", "nb")
	m.must(events.PhaseBegin)
	zfsenv.Run(t, "zfs", "create", poolB+"/other")
	filled := fillUp(t, "/"+poolB+"/other/filler", available(t, poolB)-size/2)
	e := m.ended(m.dispatch(events.PhaseSync))
	t.Logf("another writer took %d bytes, leaving some %d; sync ended %s: %s", filled, size/2, e.Status, e.Error)
	if e.Status != events.JobError || !strings.Contains(e.Error, "space") {
		t.Fatalf("sync ended %s: %s; want a failure for want of space", e.Status, e.Error)
	}
	sourceIntact(t, poolA, rtA, rtB, "vm9", want)
	notCommitted(t, poolB+"/vm9", "m9")
	zfsenv.Destroy(t, poolB+"/other")
	m.must("abort")
	if left := datasets(t, poolB, "vm9"); len(left) > 0 {
		t.Fatalf("left on the target after the abort: %v", left)
	}
	sourceIntact(t, poolA, rtA, rtB, "vm9", want)
}

// available is what dataset's pool has room for, in bytes, as zfs says.
func available(t *testing.T, dataset string) int64 {
	t.Helper()
	out := strings.TrimSpace(zfsenv.Run(t, "zfs", "get", "-Hp", "-o", "value", "available", dataset))
	n, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("zfs get available %s: %q: %v", dataset, out, err)
	}
	return n
}

// fillUp writes up to limit bytes of incompressible data to path, less if
// its file system fills first, and returns how much it wrote, on disk.
func fillUp(t *testing.T, path string, limit int64) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	r := rand.NewChaCha8([32]byte{9})
	for n < limit {
		_, _ = r.Read(buf)
		k, err := f.Write(buf[:min(int64(len(buf)), limit-n)])
		n += int64(k)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			break
		}
		if err != nil {
			t.Fatalf("filling %s: %v", path, err)
		}
	}
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v", path, err)
	}
	return n
}

// TestTargetLosesItsDisk: the target's pool is exported (its disk gone)
// once the migration has begun, and the sync is dispatched to it; the sync
// fails, the source runs on intact and nothing runs on the target. Once
// the disk is back (the pool imported), an abort clears what the move
// left there. (Not during the receive itself: zfs-fuse refuses to export
// a pool a receive is writing, "pool is busy", even with -f.)
func TestTargetLosesItsDisk(t *testing.T) {
	const size = 8 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 128), zfsenv.Pool(t, "b", 128)
	w := newWorld(t, []string{"na", "nb"}, instance("vm10", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm10")
	fill(t, "/"+poolA+"/vm10", size)
	want := fileSum(t, "/"+poolA+"/vm10/base")
	rtA, rtB := zfs.NewMemRuntime("vm10"), zfs.NewMemRuntime()
	w.tweakExecutor("na", func(c *executor.Config) { c.Retry.Attempts = 2 })
	w.node("na", poolA, rtA, nil)
	w.node("nb", poolB, rtB, nil)

	m := w.migration("m10", "vm10", "na", "nb")
	m.must(events.PhaseBegin)
	zfsenv.Run(t, "zpool", "export", "-f", poolB)
	e := m.ended(m.dispatch(events.PhaseSync))
	t.Logf("sync ended %s: %s", e.Status, e.Error)
	if e.Status != events.JobError {
		t.Fatalf("sync ended %s with the target's pool gone", e.Status)
	}
	sourceIntact(t, poolA, rtA, rtB, "vm10", want)
	// Imported from a directory holding its image alone: a scan of the
	// shared one would open every other pool's image too.
	only := t.TempDir()
	if err := os.Symlink(zfsenv.ImageFile(poolB), filepath.Join(only, poolB+".img")); err != nil {
		t.Fatal(err)
	}
	zfsenv.Run(t, "zpool", "import", "-d", only, poolB)
	notCommitted(t, poolB+"/vm10", "m10")
	m.must("abort")
	if left := datasets(t, poolB, "vm10"); len(left) > 0 {
		t.Fatalf("left on the target after the abort: %v", left)
	}
	sourceIntact(t, poolA, rtA, rtB, "vm10", want)
}

// TestSwitchAfterAnEarlyStartCutShort: an attempt of the switch started
// the instance on the target and died before its commit (the source
// stopped, the target running over the final snapshot and writing after
// it). The next attempt stops the target first and drops what it wrote
// there, then switches: the instance ends on the target only, over the
// source's data, and never ran on both nodes.
func TestSwitchAfterAnEarlyStartCutShort(t *testing.T) {
	const size = 4 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 128), zfsenv.Pool(t, "b", 128)
	w := newWorld(t, []string{"na", "nb"}, instance("vm9", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm9")
	fill(t, "/"+poolA+"/vm9", size)
	rtA, rtB := zfs.NewMemRuntime("vm9"), zfs.NewMemRuntime()
	w.node("na", poolA, rtA, nil)
	w.node("nb", poolB, rtB, nil)
	m := w.migration("m9", "vm9", "na", "nb")
	m.must(events.PhaseBegin)
	m.must(events.PhaseSync)

	// What the attempt cut short left: stopped here, started there, and
	// written to there after the snapshot it received.
	in := zfs.Instance{Name: "vm9", Dataset: poolB + "/vm9", Mountpoint: "/" + poolB + "/vm9"}
	if err := rtA.Stop(t.Context(), zfs.Instance{Name: "vm9"}); err != nil {
		t.Fatal(err)
	}
	if err := rtB.Start(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/"+poolB+"/vm9/written-on-the-target", []byte("uncommitted"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fileSum(t, filepath.Join("/"+poolA, "vm9", "base"))
	running, most := oneWriter(rtA, rtB)
	running.Store(1) // on the target
	var stoppedOnB atomic.Int32
	count := rtB.OnStop
	rtB.OnStop = func(in zfs.Instance) { stoppedOnB.Add(1); count(in) }

	m.must(events.PhaseSwitch)
	if stoppedOnB.Load() == 0 {
		t.Error("the switch received under the instance running uncommitted on the target: it was never stopped there")
	}
	if rtA.IsRunning("vm9") || !rtB.IsRunning("vm9") {
		t.Fatalf("after the switch: running on na %v, on nb %v", rtA.IsRunning("vm9"), rtB.IsRunning("vm9"))
	}
	if n := most.Load(); n > 1 {
		t.Errorf("the instance ran on %d nodes at once", n)
	}
	if _, err := os.Stat("/" + poolB + "/vm9/written-on-the-target"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("what the uncommitted start wrote is still on the target (%v)", err)
	}
	if got := fileSum(t, filepath.Join("/"+poolB, "vm9", "base")); got != want {
		t.Errorf("the target's base is %s, the source's %s", got, want)
	}
}
