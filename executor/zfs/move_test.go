package zfs_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/zfsenv"
)

func instance(name string, storage events.StorageKind, primary, secondary string) events.InstanceDeclared {
	return events.InstanceDeclared{Name: name, Owner: "acct-1", Storage: storage, RunState: events.RunRunning,
		PrimaryNode: primary, SecondaryNode: secondary,
		Size: events.Size{MemoryMiB: 512, VCPUs: 1, DisksMiB: []int64{512}}}
}

// TestMigrateWhileWriting is the first acceptance check: 200 MB
// written, a workload that keeps appending during the sync phase, moved by
// migrate between two pools through two executors: at least two
// incremental syncs, a small final delta, equal content, and progress
// events with real byte counts and rates.
func TestMigrateWhileWriting(t *testing.T) {
	const size = 200 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 1024), zfsenv.Pool(t, "b", 1024)
	w := newWorld(t, []string{"na", "nb"}, instance("vm1", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm1")
	mnt := "/" + poolA + "/vm1"
	fill(t, mnt, size)
	wr := startWriter(mnt, 6<<20)
	defer wr.stop()

	rtA, rtB := zfs.NewMemRuntime("vm1"), zfs.NewMemRuntime()
	rtA.OnStop = func(zfs.Instance) { wr.stop() } // the instance stops writing when stopped
	rule := func(c *zfs.Config) { c.Resync = zfs.ResyncRule{MaxBytes: 256 << 10, MaxSyncs: 6, ShrinkWindow: 2} }
	a := w.node("na", poolA, rtA, rule)
	w.node("nb", poolB, rtB, rule)

	w.dispatch(0, "na", events.Opcode{OpID: events.OpInstanceMigrate, Instance: "vm1", From: "na", To: "nb"})
	if e := w.ended(0, "na"); e.Status != events.JobSuccess {
		t.Fatalf("migrate ended %s: %s", e.Status, e.Error)
	}

	reps := a.driver.Reports()
	if len(reps) == 0 {
		t.Fatal("no move report")
	}
	rep := reps[len(reps)-1]
	var incs int
	for _, s := range rep.Syncs {
		t.Logf("sync %d: incremental=%v final=%v estimate=%d bytes=%d in %s", s.Snapshot, s.Incremental, s.Final, s.Estimate, s.Bytes, s.Duration)
		if s.Incremental && !s.Final {
			incs++
		}
	}
	t.Logf("final delta %d bytes, downtime %s, checksum %s, mode %s", rep.FinalDelta, rep.Downtime, rep.Checksum, rep.Mode)
	if incs < 2 {
		t.Errorf("%d incremental syncs before the switch, want at least 2", incs)
	}
	if rep.Syncs[0].Incremental || rep.Syncs[0].Bytes < size {
		t.Errorf("first sync %+v, want a full send of at least %d bytes", rep.Syncs[0], size)
	}
	if rep.FinalDelta <= 0 || rep.FinalDelta > 16<<20 {
		t.Errorf("final delta %d bytes, want small (under 16 MiB)", rep.FinalDelta)
	}
	if !strings.HasPrefix(rep.Checksum, "sha256-blocktree:") {
		t.Errorf("checksum %q", rep.Checksum)
	}
	// The switch's checksum reads what changed since the checksum ahead
	// of it (the log), not the unchanged 200 MB base again. How much of
	// the log changed depends on the machine: beside make test's load the
	// move took 60 s and the switch read 133 MB of log.
	t.Logf("checksum ahead %s; at the switch %s: read %d bytes, reused %d", rep.AheadTime, rep.ChecksumTime, rep.ChecksumRead, rep.ChecksumReused)
	if logged := wr.bytes(); rep.ChecksumReused < size || rep.ChecksumRead > logged+1<<20 {
		t.Errorf("switch checksum read %d bytes and reused %d, %d bytes of log written; want the %d-byte base reused and no more than the log read",
			rep.ChecksumRead, rep.ChecksumReused, logged, size)
	}

	// The target holds exactly what was written, independently checked.
	wantBase, wantLog := expected(size, wr.bytes())
	tgt := "/" + poolB + "/vm1"
	if got := fileSum(t, filepath.Join(tgt, "base")); got != wantBase {
		t.Errorf("base on the target differs")
	}
	if got := fileSum(t, filepath.Join(tgt, "log")); got != wantLog {
		t.Errorf("log on the target differs (%d bytes written)", wr.bytes())
	}
	if !rtB.IsRunning("vm1") || rtA.IsRunning("vm1") {
		t.Errorf("running: source %v, target %v; want only the target", rtA.IsRunning("vm1"), rtB.IsRunning("vm1"))
	}
	// zfs-local leaves nothing behind: no source dataset, no snapshots.
	if out := zfsenv.Run(t, "zfs", "list", "-H", "-t", "all", "-o", "name", "-r", poolA); strings.Contains(out, "vm1") {
		t.Errorf("source leftovers:\n%s", out)
	}
	if out := zfsenv.Run(t, "zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", poolB); strings.Contains(out, "migrate-snap") {
		t.Errorf("target leftovers:\n%s", out)
	}

	var withRate, maxCur int64
	var modeSaid bool
	for _, p := range w.progress("na") {
		if p.Current > 0 && p.BytesPerSecond > 0 {
			withRate++
		}
		if p.Current > p.Total && p.Total > 0 {
			t.Errorf("progress current %d above total %d", p.Current, p.Total)
		}
		maxCur = max(maxCur, p.Current)
		modeSaid = modeSaid || strings.Contains(p.Message, "no resume tokens")
	}
	if withRate == 0 || maxCur < size {
		t.Errorf("progress: %d events with bytes and rate, max current %d; want real counts", withRate, maxCur)
	}
	if !modeSaid {
		t.Errorf("no progress message says which zfs mode ran")
	}
}
