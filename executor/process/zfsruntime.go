package process

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/zfs"
)

// ZFSRuntime lets the ZFS storage driver start and stop this node's
// processes (zfs.Config.Runtime): each instance's process runs in its
// mounted dataset, which is its working directory and $DROVE_DATA. With
// it a zfs-local instance moves as RFD 34 migrates: syncs while the
// process runs and writes, then it stops on the source, the final delta
// goes, and it starts on the target over the received data.
type ZFSRuntime struct {
	Driver *Driver
}

var (
	_ zfs.Runtime         = ZFSRuntime{}
	_ zfs.WorkloadClocked = ZFSRuntime{}
)

// Start runs the instance's process in its dataset; one already running
// is left alone (the storage driver wants Start idempotent).
func (r ZFSRuntime) Start(ctx context.Context, in zfs.Instance) error {
	if run, _ := r.Running(ctx, in); run {
		return nil
	}
	if mounted(in) {
		// zfs-fuse does not invalidate the kernel's page cache when a
		// receive or rollback changes a mounted dataset: pages read
		// before it (a checksum, the process's own run here before a
		// migration and its rollback) would be read, and partly
		// rewritten, as they were.
		if err := dropCached(in.Mountpoint); err != nil {
			return fmt.Errorf("process: dropping the cached pages of %s before starting %s: %w", in.Mountpoint, in.Name, err)
		}
	}
	return r.Driver.start(ctx, in.Name, in.Mountpoint)
}

// Stop ends the process, then writes back what it left in the page
// cache: the storage driver snapshots the dataset next, and a snapshot
// holds only what reached ZFS (with zfs-fuse, the FUSE cache can still
// hold the process's last writes after it exits). Stopping what does not
// run is not an error.
func (r ZFSRuntime) Stop(ctx context.Context, in zfs.Instance) error {
	if err := r.Driver.Stop(ctx, in.Name); err != nil {
		return err
	}
	if !mounted(in) {
		return nil
	}
	if err := syncFS(in.Mountpoint); err != nil {
		return fmt.Errorf("process: writing back %s after stopping %s: %w", in.Mountpoint, in.Name, err)
	}
	return nil
}

// Running says whether the process runs here.
func (r ZFSRuntime) Running(ctx context.Context, in zfs.Instance) (bool, error) {
	st, err := r.Driver.Status(ctx, in.Name)
	if err != nil {
		return false, err
	}
	return st.Status == events.StatusUp, nil
}

// WorkloadDowntime is the downtime the instance's workload saw at its
// latest start here, read from its timeline (timeline.go): it waits up to
// timelineWait for the first write after the start. An instance not
// running here, or whose workload keeps no timeline, has no figure.
func (r ZFSRuntime) WorkloadDowntime(ctx context.Context, in zfs.Instance) (time.Duration, error) {
	p := r.Driver.lookup(in.Name)
	if p == nil {
		return 0, fmt.Errorf("%w: %s does not run on %s", ErrNoTimeline, in.Name, r.Driver.cfg.Node)
	}
	if !mounted(in) {
		return 0, fmt.Errorf("%w: %s has no mounted data", ErrNoTimeline, in.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, timelineWait)
	defer cancel()
	return WorkloadDowntime(ctx, in.Mountpoint, p.started)
}

// timelineWait bounds the wait for a started workload's first write: a
// workload that writes less often than this has no figure.
const timelineWait = 10 * time.Second

// mounted says whether in names a mountpoint to act on.
func mounted(in zfs.Instance) bool {
	return in.Mountpoint != "" && in.Mountpoint != "-" && in.Mountpoint != "none" && in.Mountpoint != "legacy"
}
