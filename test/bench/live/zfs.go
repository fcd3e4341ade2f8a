package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/test/zfsenv"
)

// benchZFS migrates local-1, a VM on zfs-local with sizeMiB of data,
// live from the first node to the second while writeMBps go into its
// dataset.
func benchZFS(sizeMiB int, writeMBps float64) (*client.Migration, time.Duration, error) {
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
	defer cleanup()
	w := &writer{rate: writeMBps * 1e6}
	size := func(string) events.Size { return events.Size{MemoryMiB: memMiB, VCPUs: 1} }
	demo := &allinone.ZFSDemo{Pools: map[string]string{}, StateDir: filepath.Join(tmp, "state"),
		ContentBytes: int64(sizeMiB) << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tune: func(node string, cfg *zfs.Config) {
			cfg.Runtime = pausingRuntime{ZFSRuntime: qemu.ZFSRuntime{Driver: drivers[node], Size: size}, w: w}
			cfg.OnMove = func(r zfs.MoveReport) {
				if n := len(r.Syncs); n > 0 && r.Syncs[n-1].Final {
					switchReport = r
				}
			}
		}}
	for _, n := range cluster.Nodes {
		pool, err := zfsenv.CreatePool("live_"+n.Name, sizeMiB*3+512)
		if err != nil {
			return nil, 0, err
		}
		defer zfsenv.DestroyPool(pool)
		demo.Pools[n.Name] = pool
	}
	fmt.Printf("zfs: writing %d MiB into local-1's dataset ...\n", sizeMiB)
	if err := demo.Provision(ctx, cluster); err != nil {
		return nil, 0, err
	}
	if _, err := demo.StopWorkloads(ctx); err != nil { // the VM and the writer are its writers
		return nil, 0, err
	}
	mp := mountpoint(demo, src)
	if err := qemu.WriteGuestDisk(filepath.Join(mp, "disk.raw"), 8, memMiB, qemu.FillForever); err != nil {
		return nil, 0, err
	}
	rt := qemu.ZFSRuntime{Driver: drivers[src], Size: size}
	if err := rt.Start(ctx, zfs.Instance{Name: "local-1", Node: src, Mountpoint: mp}); err != nil {
		return nil, 0, err
	}
	if err := w.start(filepath.Join(mp, "disk.raw")); err != nil {
		return nil, 0, err
	}
	defer w.stop()
	sys, err := startSystem(ctx, tmp, cluster, func(ctx context.Context, node string) (executor.Driver, error) {
		return demo.Driver(ctx, node)
	})
	if err != nil {
		return nil, 0, err
	}
	defer sys.stop()
	fmt.Printf("zfs: automatic live migration of local-1 (zfs-local) from %s to %s, %.0f MB/s written ...\n", src, dst, writeMBps)
	return sys.migrate(ctx, "local-1", dst)
}

func mountpoint(demo *allinone.ZFSDemo, node string) string {
	out, err := shOut("zfs get -H -o value mountpoint " + demo.Dataset(node, "local-1"))
	if err != nil {
		return ""
	}
	return trim(out)
}

// switchReport is the zfs driver's report of the switch.
var switchReport zfs.MoveReport

// pausingRuntime stops the stand-in writer when QEMU pauses the guest
// before the switchover: the guest's writes stop there.
type pausingRuntime struct {
	qemu.ZFSRuntime
	w *writer
}

var _ zfs.LiveRuntime = pausingRuntime{}

func (r pausingRuntime) HandOver(ctx context.Context, in zfs.Instance, to, addr string, rate func() int64,
	catchUp, atPause func(context.Context) error, report func(executor.Progress)) (time.Duration, error) {
	return r.ZFSRuntime.HandOver(ctx, in, to, addr, rate, catchUp, func(ctx context.Context) error {
		r.w.stop()
		return atPause(ctx)
	}, report)
}

// writer rewrites 256 KiB blocks of the guest's disk past its first MiB
// (up to 8 MiB: the disk WriteGuestDisk made) at rate bytes per second,
// as the guest would, until stopped; then writes its data back.
type writer struct {
	rate float64
	once sync.Once
	done chan struct{}
	wg   sync.WaitGroup
}

func (w *writer) start(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w.done = make(chan struct{})
	const block, blocks, skip = 256 << 10, 28, 1 << 20
	every := time.Duration(float64(time.Second) * block / w.rate)
	buf := make([]byte, block)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer f.Close()
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.done:
				_ = f.Sync()
				return
			case <-t.C:
			}
			for j := range buf {
				buf[j] = byte(i + j)
			}
			_, _ = f.WriteAt(buf, skip+int64(i%blocks)*block)
		}
	}()
	return nil
}

func (w *writer) stop() {
	w.once.Do(func() {
		if w.done != nil {
			close(w.done)
		}
	})
	w.wg.Wait()
}
