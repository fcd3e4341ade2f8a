package process

import (
	"context"
	"fmt"

	"github.com/drovehq/drove/executor/zfs"
)

// ZFSRuntime lets the ZFS storage driver start and stop this node's
// processes (zfs.Config.Runtime): each instance's process runs with its
// dataset's mountpoint in DROVE_MOUNTPOINT and the dataset's name in
// DROVE_DATASET, so it keeps its data there and the data moves with the
// dataset. The move is then the storage driver's: re-syncs while the
// process runs, the process stopped on the source for the final delta,
// started on the target from the received dataset.
type ZFSRuntime struct {
	Driver *Driver
}

var _ zfs.Runtime = ZFSRuntime{}

// Start runs the instance's process; one already running is left alone
// (the storage driver wants Start idempotent).
func (r ZFSRuntime) Start(ctx context.Context, in zfs.Instance) error {
	if r.Driver.lookup(in.Name) != nil {
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
	return r.Driver.StartEnv(ctx, in.Name, "DROVE_MOUNTPOINT="+in.Mountpoint, "DROVE_DATASET="+in.Dataset)
}

// Stop ends the instance's process, then writes back what it left in
// the page cache: the storage driver snapshots the dataset next, and a
// snapshot holds only what reached ZFS (with zfs-fuse, the FUSE cache can
// still hold the process's last writes after it exits). Stopping what
// does not run is not an error.
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

// Running says whether the instance's process runs here.
func (r ZFSRuntime) Running(_ context.Context, in zfs.Instance) (bool, error) {
	return r.Driver.lookup(in.Name) != nil, nil
}

// mounted says whether in names a mountpoint to act on.
func mounted(in zfs.Instance) bool {
	return in.Mountpoint != "" && in.Mountpoint != "-" && in.Mountpoint != "none" && in.Mountpoint != "legacy"
}
