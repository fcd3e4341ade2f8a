package zfs_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/zfsenv"
)

// TestCutSendCompletes is the second acceptance check: the
// receiving executor is stopped in the middle of a send and a new one
// started; the move completes and the data is intact. This ZFS has no
// resume tokens, so the sender restarts from the last snapshot the target
// received: the cut is made in an incremental, and the first send after it
// must be incremental from that snapshot, not a second full send.
func TestCutSendCompletes(t *testing.T) {
	const size = 32 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 512), zfsenv.Pool(t, "b", 512)
	w := newWorld(t, []string{"na", "nb"}, instance("vm2", events.StorageZFSReplicated, "na", "nb"))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm2")
	mnt := "/" + poolA + "/vm2"
	fill(t, mnt, size)
	wr := startWriter(mnt, 2<<20)
	defer wr.stop()

	rtA, rtB := zfs.NewMemRuntime("vm2"), zfs.NewMemRuntime()
	rtA.OnStop = func(zfs.Instance) { wr.stop() }
	tweak := func(c *zfs.Config) {
		c.Resync = zfs.ResyncRule{MaxBytes: 1 << 20, MaxSyncs: 3, ShrinkWindow: 2}
		c.SendBytesPerSecond = 8 << 20 // slow enough to cut in the middle
	}
	a := w.node("na", poolA, rtA, tweak)
	b := w.node("nb", poolB, rtB, tweak)

	w.dispatch(0, "na", events.Opcode{OpID: events.OpInstanceMigrate, Instance: "vm2", From: "na", To: "nb"})
	// Cut once the second sync (an incremental onto migrate-snap-1) is
	// under way with some bytes sent.
	var full int64
	for cut := false; !cut; {
		for _, p := range w.progress("na") {
			if strings.HasPrefix(p.Message, "sync 1:") && p.Current > full {
				full = p.Current
			}
			if strings.HasPrefix(p.Message, "sync 2:") && p.Current > full+(1<<20) && p.BytesPerSecond > 0 {
				cut = true
			}
		}
		if !cut {
			select {
			case <-w.ctx.Done():
				t.Fatal("no second sync in flight to cut")
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	b.shutdown(t) // the receiving executor dies mid-stream
	held := zfsenv.Run(t, "zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", poolB)
	t.Logf("target holds after the cut:\n%s", held)
	if !strings.Contains(held, "@migrate-snap-1") {
		t.Fatalf("the target lost the received snapshot at the cut:\n%s", held)
	}
	// The receive in flight must die with its executor, not run on in
	// the ZFS daemon to the end of a stream that is still arriving.
	if strings.Contains(held, "@migrate-snap-2") {
		t.Fatalf("the cut receive went on to completion after its executor stopped:\n%s", held)
	}
	b.start(w) // a new executor on the same node

	if e := w.ended(0, "na"); e.Status != events.JobSuccess {
		t.Fatalf("migrate ended %s: %s", e.Status, e.Error)
	}
	reps := a.driver.Reports()
	var sawRetry bool
	var after []zfs.SyncReport
	for _, r := range reps {
		t.Logf("attempt: %d syncs, err %v", len(r.Syncs), r.Err)
		if r.Err != nil {
			sawRetry = true
		} else {
			after = r.Syncs
		}
	}
	if !sawRetry || len(after) == 0 {
		t.Fatalf("want a failed attempt then a successful one, got %d reports", len(reps))
	}
	if !after[0].Incremental {
		t.Errorf("after the cut the move restarted with a full send; want an incremental from the last received snapshot")
	}

	wantBase, wantLog := expected(size, wr.bytes())
	tgt := "/" + poolB + "/vm2"
	if fileSum(t, filepath.Join(tgt, "base")) != wantBase || fileSum(t, filepath.Join(tgt, "log")) != wantLog {
		t.Errorf("data on the target differs from what was written")
	}
	if !rtB.IsRunning("vm2") || rtA.IsRunning("vm2") {
		t.Errorf("running: source %v, target %v", rtA.IsRunning("vm2"), rtB.IsRunning("vm2"))
	}
	// zfs-replicated: the old primary keeps its dataset as the replica,
	// both sides keep one common snapshot as the next base.
	for _, pool := range []string{poolA, poolB} {
		out := zfsenv.Run(t, "zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", pool)
		if n := strings.Count(out, "@migrate-snap-"); n != 1 {
			t.Errorf("%s holds %d migration snapshots, want 1 (the replication base):\n%s", pool, n, out)
		}
	}
}
