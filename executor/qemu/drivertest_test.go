package qemu_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/drivertest"
	"github.com/drovehq/drove/executor/qemu"
)

// sharedStorage is what the QEMU driver's suite runs on: a disk every
// node reaches at the same path (RBD in the fixture; here one directory).
var sharedStorage = []events.StorageKind{events.StorageRBD}

// TestDriverContract runs drivertest's opcode part (a live migration and
// a failover of the fixture's shared instance) and its migration part
// (stop and start phases) against three QEMU nodes over one disk
// directory, wired as their executors would.
func TestDriverContract(t *testing.T) {
	drivertest.RunFor(t, sharedStorage, func(t *testing.T) executor.Driver { return newVMWorld(t) })
	drivertest.RunMigrations(t, sharedStorage, func(t *testing.T) executor.Migrator { return newVMWorld(t) })
}

type vmWorld struct {
	order []string
	nodes map[string]*qemu.Driver
}

func newVMWorld(t *testing.T) *vmWorld {
	t.Helper()
	shared := t.TempDir()
	w := &vmWorld{order: []string{drivertest.Node1, drivertest.Node2, drivertest.Node3}, nodes: map[string]*qemu.Driver{}}
	for _, n := range w.order {
		dir, err := os.MkdirTemp("", "dq") // short: QMP socket paths are limited
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		d, err := qemu.New(qemu.Config{Node: n, Dir: filepath.Join(dir, "run"), PollInterval: 50 * time.Millisecond,
			Disk: func(inst string) (string, error) { return filepath.Join(shared, inst+".raw"), nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Destroy)
		w.nodes[n] = d
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, in := range drivertest.FixtureFor(sharedStorage) {
		if err := qemu.WriteGuestDisk(filepath.Join(shared, in.Name+".raw"), 1, in.Size.MemoryMiB, qemu.FillOnce); err != nil {
			t.Fatal(err)
		}
		if in.RunState == events.RunRunning {
			if err := w.nodes[in.Primary].Start(ctx, in.Name, in.Size); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

// pair runs src on from with to's Receive serving it (drivertest.Pair).
func (w *vmWorld) pair(ctx context.Context, from, to string, rop executor.Op, settle bool, src func(await func(context.Context) (string, error)) error) error {
	if w.nodes[from] == nil || w.nodes[to] == nil || from == to {
		return executor.Fatal(fmt.Errorf("world: no move from %q to %q", from, to))
	}
	return drivertest.Pair(ctx, w.nodes[to], rop, settle, src)
}

func (w *vmWorld) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (res executor.Result, err error) {
	err = w.pair(ctx, op.From, op.To, op, true, func(await func(context.Context) (string, error)) error {
		op.AwaitReceiver = await
		res, err = w.nodes[op.From].Run(ctx, op, report)
		return err
	})
	return res, err
}

func (w *vmWorld) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (res executor.PhaseResult, err error) {
	rop := executor.Op{Request: mp.Migration, Index: mp.Seq, Kind: events.OpInstanceMigrate,
		Mode: executor.MigrationModePrefix + mp.Phase, Instance: mp.Instance, Size: mp.Size, Storage: mp.Storage,
		RunState: mp.RunState, From: mp.Source, To: mp.Target}
	err = w.pair(ctx, mp.Source, mp.Target, rop, false, func(await func(context.Context) (string, error)) error {
		mp.AwaitReceiver = await
		res, err = w.nodes[mp.Source].Phase(ctx, mp, report)
		return err
	})
	return res, err
}

func (w *vmWorld) Estimate(ctx context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	return w.nodes[mp.Source].Estimate(ctx, mp)
}

// Locate: the node whose VM runs the instance (its guest up).
func (w *vmWorld) Locate(ctx context.Context, instance string) (string, string, error) {
	var up []string
	for _, n := range w.order {
		st, err := w.nodes[n].Status(ctx, instance)
		if err != nil {
			return "", "", err
		}
		if st.Status == events.StatusUp {
			up = append(up, n)
		}
	}
	if len(up) != 1 {
		return "", "", fmt.Errorf("%s runs on %v", instance, up)
	}
	return up[0], "", nil
}

var (
	_ executor.Driver    = (*vmWorld)(nil)
	_ executor.Migrator  = (*vmWorld)(nil)
	_ drivertest.Locator = (*vmWorld)(nil)
)
