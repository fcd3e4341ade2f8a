package qemu_test

import (
	"context"
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

// newVMWorld is one QEMU driver per node over one disk directory, joined
// into one driver as the nodes' executors join them (drivertest.World).
func newVMWorld(t *testing.T) *drivertest.World {
	t.Helper()
	shared := t.TempDir()
	nodes := map[string]*qemu.Driver{}
	w := &drivertest.World{Order: []string{drivertest.Node1, drivertest.Node2, drivertest.Node3}, Nodes: map[string]drivertest.Node{},
		// An incoming VM resumes its guest a moment after the source saw
		// the migration end.
		Settle: true,
		// The node whose VM runs the instance, its guest up.
		Runs: func(ctx context.Context, node, instance string) (bool, error) {
			st, err := nodes[node].Status(ctx, instance)
			return st.Status == events.StatusUp, err
		}}
	for _, n := range w.Order {
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
		nodes[n], w.Nodes[n] = d, d
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, in := range drivertest.FixtureFor(sharedStorage) {
		if err := qemu.WriteGuestDisk(filepath.Join(shared, in.Name+".raw"), 1, in.Size.MemoryMiB, qemu.FillOnce); err != nil {
			t.Fatal(err)
		}
		if in.RunState == events.RunRunning {
			if err := nodes[in.Primary].Start(ctx, in.Name, in.Size); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}
