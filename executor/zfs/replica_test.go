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

// TestReplaceSecondaryThenFailover is the third acceptance check:
// replace_new_secondary builds a replica on a new node (full then
// incremental) and drops the old one; a failover then starts the instance
// on the new node from that replica.
func TestReplaceSecondaryThenFailover(t *testing.T) {
	const size = 24 << 20
	poolA, poolB, poolC := zfsenv.Pool(t, "a", 256), zfsenv.Pool(t, "b", 256), zfsenv.Pool(t, "c", 256)
	w := newWorld(t, []string{"na", "nb", "nc"}, instance("vm3", events.StorageZFSReplicated, "na", "nb"))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm3")
	mnt := "/" + poolA + "/vm3"
	fill(t, mnt, size)
	// The old replica on nb, as an earlier replication left it.
	zfsenv.Run(t, "zfs", "snapshot", poolA+"/vm3@migrate-snap-1")
	zfsenv.Run(t, "sh", "-c", "zfs send -R "+poolA+"/vm3@migrate-snap-1 | zfs receive -F "+poolB+"/vm3")
	wr := startWriter(mnt, 2<<20)
	defer wr.stop()

	rtA, rtB, rtC := zfs.NewMemRuntime("vm3"), zfs.NewMemRuntime(), zfs.NewMemRuntime()
	rtA.OnStop = func(zfs.Instance) { wr.stop() }
	w.node("na", poolA, rtA, nil)
	w.node("nb", poolB, rtB, nil)
	c := w.node("nc", poolC, rtC, nil)
	_ = c

	w.dispatch(0, "na", events.Opcode{OpID: events.OpInstanceReplaceDisks, Instance: "vm3",
		Mode: events.ModeReplaceNewSecondary, RemoteNode: "nc", From: "na", To: "nc"})
	if e := w.ended(0, "na"); e.Status != events.JobSuccess {
		t.Fatalf("replace-disks ended %s: %s", e.Status, e.Error)
	}
	if !rtA.IsRunning("vm3") || rtC.IsRunning("vm3") {
		t.Fatalf("replace-disks must leave the instance running on its primary only")
	}
	if out := zfsenv.Run(t, "zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", poolC); strings.Count(out, "@migrate-snap-") != 1 {
		t.Errorf("new replica should hold one base snapshot:\n%s", out)
	}
	// The old secondary's executor drops its replica once the inventory
	// says it is no longer the secondary.
	for {
		out := zfsenv.Run(t, "zfs", "list", "-H", "-o", "name", "-r", poolB)
		if !strings.Contains(out, "vm3") {
			break
		}
		select {
		case <-w.ctx.Done():
			t.Fatalf("old replica on nb not dropped:\n%s", out)
		case <-time.After(100 * time.Millisecond):
		}
	}

	w.dispatch(1, "na", events.Opcode{OpID: events.OpInstanceFailover, Instance: "vm3", From: "na", To: "nc"})
	if e := w.ended(1, "na"); e.Status != events.JobSuccess {
		t.Fatalf("failover ended %s: %s", e.Status, e.Error)
	}
	if !rtC.IsRunning("vm3") || rtA.IsRunning("vm3") {
		t.Fatalf("after failover: running on na %v, on nc %v; want nc only", rtA.IsRunning("vm3"), rtC.IsRunning("vm3"))
	}
	wantBase, wantLog := expected(size, wr.bytes())
	tgt := "/" + poolC + "/vm3"
	if fileSum(t, filepath.Join(tgt, "base")) != wantBase || fileSum(t, filepath.Join(tgt, "log")) != wantLog {
		t.Errorf("data on the new primary differs from what was written")
	}
}

// A replace-disks to a new node that is cancelled mid-send must leave the
// existing replica usable: the primary and the old secondary keep their
// common snapshot, so the next move to the old secondary is incremental,
// not a second full copy of the dataset.
func TestCancelledReplaceKeepsTheReplicaBase(t *testing.T) {
	const size = 24 << 20
	poolA, poolB, poolC := zfsenv.Pool(t, "a", 256), zfsenv.Pool(t, "b", 256), zfsenv.Pool(t, "c", 256)
	w := newWorld(t, []string{"na", "nb", "nc"}, instance("vm4", events.StorageZFSReplicated, "na", "nb"))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm4")
	fill(t, "/"+poolA+"/vm4", size)
	zfsenv.Run(t, "zfs", "snapshot", poolA+"/vm4@migrate-snap-1")
	zfsenv.Run(t, "sh", "-c", "zfs send -R "+poolA+"/vm4@migrate-snap-1 | zfs receive -F "+poolB+"/vm4")

	rtA := zfs.NewMemRuntime("vm4")
	slow := func(c *zfs.Config) { c.SendBytesPerSecond = 4 << 20 } // a send to cancel in the middle of
	a := w.node("na", poolA, rtA, slow)
	w.node("nb", poolB, zfs.NewMemRuntime(), nil)
	w.node("nc", poolC, zfs.NewMemRuntime(), nil)

	w.dispatch(0, "na", events.Opcode{OpID: events.OpInstanceReplaceDisks, Instance: "vm4",
		Mode: events.ModeReplaceNewSecondary, RemoteNode: "nc", From: "na", To: "nc"})
	for sending := false; !sending; {
		for _, p := range w.progress("na") {
			sending = sending || strings.HasPrefix(p.Message, "sync 1:") && p.Current > 2<<20
		}
		if !sending {
			select {
			case <-w.ctx.Done():
				t.Fatal("no send in flight to cancel")
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	w.append(events.TopicOpcodes, w.event(events.OpcodeCancelled{Request: "req-1", Job: 0, Index: 0, Node: "na", Reason: "test"}))
	if e := w.ended(0, "na"); e.Status != events.JobCanceled {
		t.Fatalf("replace-disks ended %s (%s), want canceled", e.Status, e.Error)
	}
	for pool, want := range map[string]bool{poolA: true, poolB: true, poolC: false} {
		out := zfsenv.Run(t, "zfs", "list", "-H", "-t", "all", "-o", "name", "-r", pool)
		if has := strings.Contains(out, "vm4@migrate-snap-1"); has != want {
			t.Errorf("%s holds vm4@migrate-snap-1: %v, want %v:\n%s", pool, has, want, out)
		}
		if want && strings.Count(out, "@migrate-snap-") != 1 {
			t.Errorf("%s holds snapshots of the cancelled move:\n%s", pool, out)
		}
	}

	// The replica on nb still continues incrementally.
	w.dispatch(1, "na", events.Opcode{OpID: events.OpInstanceMigrate, Instance: "vm4", From: "na", To: "nb"})
	if e := w.ended(1, "na"); e.Status != events.JobSuccess {
		t.Fatalf("migrate to the old secondary ended %s: %s", e.Status, e.Error)
	}
	reps := a.driver.Reports()
	last := reps[len(reps)-1]
	if len(last.Syncs) == 0 || !last.Syncs[0].Incremental || last.Syncs[0].Bytes > size/2 {
		t.Errorf("migrate to the old secondary began with %+v; want an incremental from migrate-snap-1", last.Syncs)
	}
}
