package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/test/bench/system"
)

// sharedCluster: node-1 and node-2, vm-1 (rbd, running) on node-1; the
// instance policy lets so small a VM be.
func sharedCluster() *planner.Cluster {
	pol := planner.DefaultIPolicy()
	pol.MinMax[0].Min.MemorySize = 16
	c := &planner.Cluster{Name: "live", Tags: []string{}, Policy: pol,
		Groups: []planner.Group{{UUID: "00000000-0000-4000-8000-000000000001", Name: "g1", AllocPolicy: planner.Preferred, Policy: pol}}}
	for _, n := range []string{"node-1", "node-2"} {
		c.Nodes = append(c.Nodes, planner.Node{Name: n, TotalMemory: 16 << 10, ReservedMemory: 1 << 10,
			TotalDisk: 16 << 10, TotalCPUs: 8, TotalSpindles: 8, FreeSpindles: 8, VMCapable: true, Tags: []string{}})
	}
	c.Instances = []planner.Instance{{Name: "vm-1", Memory: memMiB, DiskSpace: 1024, Disks: []planner.Disk{{Size: 1024}},
		VCPUs: 1, SpindleUse: 1, NICs: 1, Tags: []string{}, State: planner.Up, Owner: "bench",
		Storage: planner.RBD, Primary: 0, Secondary: planner.NoNode}}
	clustergen.Recount(c)
	return c
}

// benchShared migrates vm-1 live from node-1 to node-2.
func benchShared(moves int) ([]*system.Move, error) {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "drove-bench-live-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	disks := filepath.Join(tmp, "disks")
	if err := os.MkdirAll(disks, 0o755); err != nil {
		return nil, err
	}
	disk := func(inst string) (string, error) { return filepath.Join(disks, inst+".raw"), nil }
	// The guest writes its disk too, with its clock stamps: each switch's
	// pause shows in its own data, and the record has the figure.
	g := qemu.Guest{MemoryMiB: memMiB, Workload: qemu.FillForever, DiskBytesPerSecond: 1 << 20}
	if err := g.WriteDisk(filepath.Join(disks, "vm-1.raw"), 4); err != nil {
		return nil, err
	}
	drivers, cleanup, err := qemuDrivers([]string{"node-1", "node-2"}, disk)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := drivers["node-1"].Start(ctx, "vm-1", events.Size{MemoryMiB: memMiB, VCPUs: 1}); err != nil {
		return nil, err
	}
	sys, err := system.Start(ctx, tmp, sharedCluster(), func(_ context.Context, node string) (executor.Driver, error) {
		return drivers[node], nil
	})
	if err != nil {
		return nil, err
	}
	defer sys.Stop()
	fmt.Printf("shared: automatic live migrations of vm-1 (rbd) between node-1 and node-2, %d in all ...\n", moves)
	return sys.MoveBackAndForth(ctx, "vm-1", "node-1", "node-2", moves)
}
