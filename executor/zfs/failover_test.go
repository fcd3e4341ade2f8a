package zfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/zfsenv"
)

// TestFailoverFromOfflinePrimary: the primary of a zfs-replicated
// instance is gone, its pool with it, and no executor runs there. The
// failover is dispatched to the secondary (as the planner service does
// for an IgnoreConsistency failover), whose executor starts the instance
// from its replica as of the last replicated snapshot, alone: what the
// primary wrote after that snapshot is lost.
func TestFailoverFromOfflinePrimary(t *testing.T) {
	const size = 24 << 20
	poolA, err := zfsenv.CreatePool("a", 256)
	if err != nil {
		t.Fatal(err)
	}
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			_ = zfsenv.DestroyPool(poolA)
		}
	})
	poolB := zfsenv.Pool(t, "b", 256)
	w := newWorld(t, []string{"na", "nb"}, instance("vm5", events.StorageZFSReplicated, "na", "nb"))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm5")
	src := "/" + poolA + "/vm5"
	fill(t, src, size)
	// Replication as it ran while the primary was up: a full send, then
	// an incremental.
	zfsenv.Run(t, "zfs", "snapshot", poolA+"/vm5@migrate-snap-1")
	zfsenv.Run(t, "sh", "-c", "zfs send -R "+poolA+"/vm5@migrate-snap-1 | zfs receive -F "+poolB+"/vm5")
	writeFile(t, filepath.Join(src, "replicated"), "written before the last replication\n")
	zfsenv.Run(t, "zfs", "snapshot", poolA+"/vm5@migrate-snap-2")
	zfsenv.Run(t, "sh", "-c", "zfs send -R -I "+poolA+"/vm5@migrate-snap-1 "+poolA+"/vm5@migrate-snap-2 | zfs receive -F "+poolB+"/vm5")
	writeFile(t, filepath.Join(src, "lost"), "written after it\n")

	// The primary node goes, with its disk.
	if err := zfsenv.DestroyPool(poolA); err != nil {
		t.Fatal(err)
	}
	destroyed = true
	w.append(events.TopicInventory, w.event(events.NodeUpdated{Name: "na", Group: "g1", Offline: true, VMCapable: true,
		Total: events.Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 32}}))
	rtB := zfs.NewMemRuntime()
	w.node("nb", poolB, rtB, nil)

	w.dispatch(0, "nb", events.Opcode{OpID: events.OpInstanceFailover, Instance: "vm5", From: "na", To: "nb", IgnoreConsistency: true})
	if e := w.ended(0, "nb"); e.Status != events.JobSuccess {
		t.Fatalf("failover ended %s: %s", e.Status, e.Error)
	}
	if !rtB.IsRunning("vm5") {
		t.Fatal("the instance does not run on the secondary")
	}
	tgt := "/" + poolB + "/vm5"
	wantBase, _ := expected(size, 0)
	if fileSum(t, filepath.Join(tgt, "base")) != wantBase {
		t.Error("base on the secondary differs")
	}
	if b, err := os.ReadFile(filepath.Join(tgt, "replicated")); err != nil || string(b) != "written before the last replication\n" {
		t.Errorf("the last replicated write is missing: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(tgt, "lost")); !os.IsNotExist(err) {
		t.Errorf("a write after the last replication reached the secondary: %v", err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
