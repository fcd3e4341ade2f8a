package service

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/inventory"
)

func TestScratchSnapshotCost(t *testing.T) {
	spec := clustergen.DefaultSpec()
	spec.Groups, spec.NodesPerGroup, spec.InstancesPerNode = 20, 500, 10
	spec.Fill, spec.Seed = 0.5, 2026
	c, err := clustergen.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	envs := InventoryEvents(c, events.Reason{Actor: "x", Why: "y"})
	st := newState(time.Now)
	for i, e := range envs {
		p, _ := e.DecodePayload()
		st.apply(e, p, inventory.Pos{Time: e.Time, Partition: int32(i % 3), Offset: int64(i)})
	}
	envs, c = nil, nil
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("heap with state %d MB", ms.HeapAlloc>>20)
	dir := t.TempDir()
	t0 := time.Now()
	tmp, err := createSnapshotFile(dir, &snapshot{header{Version: snapshotVersion}, st})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("encode: %v", time.Since(t0))
	t0 = time.Now()
	if err := syncAndRename(tmp, filepath.Join(dir, snapshotFile)); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, snapshotFile))
	t.Logf("sync: %v, %d bytes", time.Since(t0), fi.Size())
	st = nil
	runtime.GC()
	t0 = time.Now()
	snap, err := readSnapshotFile(filepath.Join(dir, snapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("decode: %v", time.Since(t0))
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("heap restored %d MB (%d instances)", ms.HeapAlloc>>20, len(snap.st.inv.Instances))
}
