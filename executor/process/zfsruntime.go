package process

import (
	"context"

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

var _ zfs.Runtime = ZFSRuntime{}

// Start runs the instance's process in its dataset; one already running
// is left alone (the storage driver wants Start idempotent).
func (r ZFSRuntime) Start(ctx context.Context, in zfs.Instance) error {
	if run, _ := r.Running(ctx, in); run {
		return nil
	}
	return r.Driver.start(ctx, in.Name, in.Mountpoint)
}

// Stop ends the process; stopping what does not run is not an error.
func (r ZFSRuntime) Stop(ctx context.Context, in zfs.Instance) error {
	return r.Driver.Stop(ctx, in.Name)
}

// Running says whether the process runs here.
func (r ZFSRuntime) Running(ctx context.Context, in zfs.Instance) (bool, error) {
	st, err := r.Driver.Status(ctx, in.Name)
	if err != nil {
		return false, err
	}
	return st.Status == events.StatusUp, nil
}
