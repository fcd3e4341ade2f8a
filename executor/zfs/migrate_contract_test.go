package zfs_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/drivertest"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/zfsenv"
)

// TestMigrationContract runs drivertest's migration part against the ZFS
// driver on three zfs-fuse pools: every phase of a per-instance
// migration of the zfs-local fixture instance, aborts, a pause, a
// rollback and a finalize, with real sends between the pools.
func TestMigrationContract(t *testing.T) {
	nodes := []string{drivertest.Node1, drivertest.Node2, drivertest.Node3}
	pools := map[string]string{}
	for i, n := range nodes {
		pools[n] = zfsenv.Pool(t, fmt.Sprintf("mc%d", i+1), 128)
	}
	var seq atomic.Int64
	drivertest.RunMigrations(t, zfsStorage, func(t *testing.T) executor.Migrator {
		return newContractWorld(t, nodes, pools, fmt.Sprintf("m%d", seq.Add(1)))
	})
}

// Phase runs mp on its source's driver with the target's Receive serving
// it, as the target node's executor would (executor/migration_receive.go).
func (w *contractWorld) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	src, dst := w.nodes[mp.Source], w.nodes[mp.Target]
	if src == nil || dst == nil || src == dst {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("zfs world: no migration from %q to %q", mp.Source, mp.Target))
	}
	res, err := drivertest.PairPhase(ctx, dst.d, mp, func(mp executor.MigrationPhase) (executor.PhaseResult, error) {
		return src.d.Phase(ctx, mp, report)
	})
	if err == nil && mp.Phase == events.PhaseSwitch {
		w.mu.Lock()
		w.primaryMaking[mp.Migration+"/0/0"] = true
		w.mu.Unlock()
	}
	return res, err
}

// Estimate asks the source's driver.
func (w *contractWorld) Estimate(ctx context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	return w.nodes[mp.Source].d.Estimate(ctx, mp)
}

// Leftovers lists migration snapshots and checksum clones of instance on
// every node, and its datasets on nodes other than keep.
func (w *contractWorld) Leftovers(ctx context.Context, instance, keep string) ([]string, error) {
	var left []string
	for _, name := range w.order {
		n := w.nodes[name]
		out, err := zfsOut(ctx, "list", "-H", "-t", "all", "-o", "name", "-r", n.parent)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Fields(out) {
			ds, snap, _ := strings.Cut(line, "@")
			switch {
			case strings.Contains(line, "drove-sum--"+instance):
				left = append(left, line)
			case ds != n.d.Dataset(instance):
			case snap != "" && strings.HasPrefix(snap, "migrate-snap-"):
				left = append(left, line)
			case snap == "" && name != keep:
				left = append(left, line)
			}
		}
	}
	return left, nil
}

var (
	_ executor.Migrator    = (*contractWorld)(nil)
	_ drivertest.Leftovers = (*contractWorld)(nil)
)

// restart replaces every node's driver with a new one over the same
// datasets and runtime: an executor that crashed and started again.
func (w *contractWorld) restart(t *testing.T) {
	t.Helper()
	for _, n := range w.nodes {
		d, err := zfs.New(t.Context(), zfs.Config{Node: n.name, Parent: n.parent, Runtime: n.rt,
			ReportInterval: 20 * time.Millisecond, ReceiverWait: 20 * time.Second, Logger: testLogger()})
		if err != nil {
			t.Fatalf("zfs.New(%s): %v", n.name, err)
		}
		n.d = d
	}
}

// TestMigrationPhasesAfterACrash: phases run again by drivers that know
// nothing of the migration but what the datasets say. A switch already
// committed succeeds without moving anything; begin's note of the prior
// run state survives, so a rollback restarts the instance on the source.
func TestMigrationPhasesAfterACrash(t *testing.T) {
	nodes := []string{drivertest.Node1, drivertest.Node2, drivertest.Node3}
	pools := map[string]string{}
	for i, n := range nodes {
		pools[n] = zfsenv.Pool(t, fmt.Sprintf("cr%d", i+1), 128)
	}
	w := newContractWorld(t, nodes, pools, "crash")
	in := drivertest.FixtureFor(zfsStorage)
	var local drivertest.Instance
	for _, i := range in {
		if i.Storage == events.StorageZFSLocal {
			local = i
		}
	}
	phase := func(seq int, name string) (executor.PhaseResult, error) {
		return w.Phase(t.Context(), executor.MigrationPhase{Migration: "mc", Seq: seq, Phase: name, Sync: 1,
			Instance: local.Name, Size: local.Size, Storage: local.Storage, RunState: events.RunStopped,
			Source: drivertest.Node1, Target: drivertest.Node3}, func(executor.Progress) {})
	}
	for seq, name := range []string{"begin", "sync", "switch"} {
		if _, err := phase(seq+1, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	src, dst := w.nodes[drivertest.Node1], w.nodes[drivertest.Node3]
	w.restart(t)
	res, err := phase(3, "switch")
	if err != nil || !strings.Contains(res.Message, "already switched") {
		t.Fatalf("the switch run again after a crash = %+v, %v", res, err)
	}
	if src.rt.IsRunning(local.Name) || !dst.rt.IsRunning(local.Name) {
		t.Fatal("after the switch run again the instance must run on the target only")
	}
	// The dispatch says stopped (RunState above): only begin's note on
	// the dataset can tell the rollback the instance ran.
	w.restart(t)
	if _, err := phase(4, "rollback"); err != nil {
		t.Fatalf("rollback after a crash: %v", err)
	}
	if !src.rt.IsRunning(local.Name) || dst.rt.IsRunning(local.Name) {
		t.Fatal("after the rollback the instance must run on the source only")
	}
	if left, err := w.Leftovers(t.Context(), local.Name, drivertest.Node1); err != nil || len(left) > 0 {
		t.Fatalf("left after the rollback: %v %v", left, err)
	}
}

// TestBeginRaisesTheTargetQuota: the target's parent has a quota too
// small for the instance; begin raises it, and the migration goes on.
func TestBeginRaisesTheTargetQuota(t *testing.T) {
	nodes := []string{drivertest.Node1, drivertest.Node2, drivertest.Node3}
	pools := map[string]string{}
	for i, n := range nodes {
		pools[n] = zfsenv.Pool(t, fmt.Sprintf("q%d", i+1), 128)
	}
	w := newContractWorld(t, nodes, pools, "quota")
	parent := w.nodes[drivertest.Node3].parent
	zfsenv.Run(t, "zfs", "set", "quota=4M", parent)
	var local drivertest.Instance
	for _, i := range drivertest.FixtureFor(zfsStorage) {
		if i.Storage == events.StorageZFSLocal {
			local = i
		}
	}
	for seq, name := range []string{"begin", "sync", "switch"} {
		res, err := w.Phase(t.Context(), executor.MigrationPhase{Migration: "mq", Seq: seq + 1, Phase: name, Sync: 1,
			Instance: local.Name, Size: local.Size, Storage: local.Storage, RunState: local.RunState,
			Source: drivertest.Node1, Target: drivertest.Node3}, func(executor.Progress) {})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %s", name, res.Message)
	}
	q := strings.TrimSpace(zfsenv.Run(t, "zfs", "get", "-Hp", "-o", "value", "quota", parent))
	if q == "4194304" || q == "0" {
		t.Fatalf("the target's quota is %s, want raised above 4M", q)
	}
}
