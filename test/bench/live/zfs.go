package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/bench/system"
	"github.com/drovehq/drove/test/zfsenv"
)

// benchZFS migrates local-1, a VM on zfs-local with sizeMiB of data,
// live from the first node to the second while its guest writes its own
// disk at writeMBps. It returns the record, the move's time and the
// rate the guest wrote at during the move (its chunks counted before it
// on the source, after it on the target).
func benchZFS(sizeMiB int, writeMBps float64, moves int) (_ []*system.Move, _ float64, err error) {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "drove-bench-live-zfs-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(tmp)
	cluster := allinone.ZFSCluster(1, 2)
	cluster.Instances = cluster.Instances[:1] // local-1 alone
	src, dst := cluster.Nodes[0].Name, cluster.Nodes[1].Name
	drivers, cleanup, err := qemuDrivers([]string{src, dst}, nil)
	if err != nil {
		return nil, 0, err
	}
	var pools []string
	// The VMs go first: they hold their pool's files open, and a busy
	// pool stayed imported, its zfs-fuse daemon spinning, after the
	// bench had ended. A pool that stays is the bench's failure.
	defer func() {
		cleanup()
		for _, p := range pools {
			zfsenv.Release(p, &err)
		}
	}()
	size := func(string) events.Size { return events.Size{MemoryMiB: memMiB, VCPUs: 1} }
	demo := &allinone.ZFSDemo{Pools: map[string]string{}, StateDir: filepath.Join(tmp, "state"),
		ContentBytes: int64(sizeMiB) << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tune: func(node string, cfg *zfs.Config) {
			cfg.Runtime = qemu.ZFSRuntime{Driver: drivers[node], Size: size}
			cfg.OnMove = func(r zfs.MoveReport) {
				if _, final := r.FinalSync(); final {
					switches.add(r)
				}
			}
		}}
	for _, n := range cluster.Nodes {
		pool, err := zfsenv.CreatePool("live_"+n.Name, sizeMiB*3+512)
		if err != nil {
			return nil, 0, err
		}
		pools = append(pools, pool)
		demo.Pools[n.Name] = pool
	}
	fmt.Printf("zfs: writing %d MiB into local-1's dataset ...\n", sizeMiB)
	if err := demo.Provision(ctx, cluster); err != nil {
		return nil, 0, err
	}
	if _, err := demo.StopWorkloads(ctx); err != nil { // the VM is its only writer
		return nil, 0, err
	}
	mp := mountpoint(demo, src)
	g := qemu.Guest{MemoryMiB: memMiB, Workload: qemu.FillForever, DiskBytesPerSecond: int64(writeMBps * 1e6),
		FlushEvery: flushEvery}
	if err := g.WriteDisk(filepath.Join(mp, "disk.raw"), diskMiB); err != nil {
		return nil, 0, err
	}
	rt := qemu.ZFSRuntime{Driver: drivers[src], Size: size}
	if err := rt.Start(ctx, zfs.Instance{Name: "local-1", Node: src, Mountpoint: mp}); err != nil {
		return nil, 0, err
	}
	sys, err := system.Start(ctx, tmp, cluster, func(ctx context.Context, node string) (executor.Driver, error) {
		return demo.Driver(ctx, node)
	})
	if err != nil {
		return nil, 0, err
	}
	defer sys.Stop()
	fmt.Printf("zfs: automatic live migration of local-1 (zfs-local) from %s to %s, its guest writing %.0f MB/s ...\n", src, dst, writeMBps)
	w0, err := pausedWrites(ctx, drivers[src], filepath.Join(mp, "disk.raw"))
	if err != nil {
		return nil, 0, fmt.Errorf("the guest's disk on %s before the move: %w", src, err)
	}
	began := time.Now()
	m, err := sys.Migrate(ctx, "local-1", dst)
	if err != nil {
		return nil, 0, err
	}
	w, err := pausedWrites(ctx, drivers[dst], filepath.Join(mountpoint(demo, dst), "disk.raw"))
	if err != nil {
		return nil, 0, fmt.Errorf("the guest's disk on %s after the move: %w", dst, err)
	}
	rate := float64(w.Chunks-w0.Chunks) * 65536 / time.Since(began).Seconds() / 1e6
	out := []*system.Move{m}
	if moves > 1 { // the moves after the first, back and forth, for their predictions
		if err := sys.Finalize(ctx, "local-1", m.ID); err != nil {
			return nil, 0, err
		}
		more, err := sys.MoveBackAndForth(ctx, "local-1", dst, src, moves-1)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, more...)
	}
	return out, rate, nil
}

// diskMiB is the guest's disk, part of the dataset: its writes go round
// a ring over all of it but the first MiB.
const diskMiB = 8

// flushEvery is the guest's chunks per CACHE FLUSH: one flush per MiB.
// A flush is an fdatasync of the image, which on zfs-fuse costs enough
// that a guest flushing every 64 KiB chunk reaches only 3.3 to 3.7 MB/s
// here; with one per MiB it keeps 5 MB/s.
const flushEvery = 16

// pausedWrites checks what the guest wrote to its disk (qemu.ReadGuestWrites)
// with its VM paused, so that the ring does not move under the read.
func pausedWrites(ctx context.Context, d *qemu.Driver, disk string) (qemu.GuestWrites, error) {
	if _, err := d.HMP(ctx, "local-1", "stop"); err != nil {
		return qemu.GuestWrites{}, err
	}
	defer d.HMP(ctx, "local-1", "cont")
	return qemu.ReadGuestWrites(disk)
}

func mountpoint(demo *allinone.ZFSDemo, node string) string {
	out, err := shOut("zfs get -H -o value mountpoint " + demo.Dataset(node, "local-1"))
	if err != nil {
		return ""
	}
	return trim(out)
}

// switches are the zfs driver's reports of the moves' switches, in the
// order they ended (OnMove runs on the drivers' goroutines).
var switches switchLog

type switchLog struct {
	mu   sync.Mutex
	reps []zfs.MoveReport
}

func (l *switchLog) add(r zfs.MoveReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reps = append(l.reps, r)
}

func (l *switchLog) all() []zfs.MoveReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reps)
}

// printSwitches says where each switch's downtime went, so that a move
// far over the others says why (one zfs_live move in 28 took 547 ms on
// 12-03, and nothing told where).
func printSwitches(reps []zfs.MoveReport) {
	for i, r := range reps {
		final, _ := r.FinalSync() // switches holds only reports that have one
		rest := r.Downtime - final.Duration - r.ChecksumTime
		fmt.Printf("zfs_live     move %d: driver %d ms down = final delta %d KiB sent in %d ms + checksums %d ms (%d KiB read) + %d ms the rest (the write-back at the pause, QEMU's device state, the resume)\n",
			i+1, r.Downtime.Milliseconds(), r.FinalDelta>>10, final.Duration.Milliseconds(), r.ChecksumTime.Milliseconds(), r.ChecksumRead>>10, rest.Milliseconds())
	}
}
