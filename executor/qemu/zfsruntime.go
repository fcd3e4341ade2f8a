package qemu

import (
	"context"
	"path/filepath"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/zfs"
)

// ZFSRuntime lets the ZFS storage driver start and stop this node's VMs
// (zfs.Config.Runtime): the VM's raw disk is DiskFile in the instance's
// mounted dataset. With it a zfs-local or zfs-replicated instance moves
// as RFD 34's offline migration does — re-syncs while the VM runs, then
// the VM stops on the source, the final delta goes, and the VM boots on
// the target from the received disk.
type ZFSRuntime struct {
	Driver *Driver
	// DiskFile is the disk image's name inside the dataset. Default
	// "disk.raw".
	DiskFile string
	// Size returns the instance's memory and vCPUs; nil means the
	// driver's DefaultMemoryMiB and one vCPU.
	Size func(instance string) events.Size
}

var _ zfs.Runtime = ZFSRuntime{}

func (r ZFSRuntime) spec(in zfs.Instance) Spec {
	file := r.DiskFile
	if file == "" {
		file = "disk.raw"
	}
	s := Spec{Instance: in.Name, Disk: filepath.Join(in.Mountpoint, file)}
	if r.Size != nil {
		sz := r.Size(in.Name)
		s.MemoryMiB, s.VCPUs = sz.MemoryMiB, sz.VCPUs
	}
	return s
}

// Start boots the VM from the dataset's disk; a VM already running is
// left alone (the storage driver wants Start idempotent).
func (r ZFSRuntime) Start(ctx context.Context, in zfs.Instance) error {
	if run, _ := r.Running(ctx, in); run {
		return nil
	}
	return r.Driver.StartSpec(ctx, r.spec(in))
}

// Stop shuts the VM down; stopping what does not run is not an error.
func (r ZFSRuntime) Stop(ctx context.Context, in zfs.Instance) error {
	return r.Driver.Stop(ctx, in.Name)
}

// Running says whether the VM runs here and its guest is not paused.
func (r ZFSRuntime) Running(ctx context.Context, in zfs.Instance) (bool, error) {
	st, err := r.Driver.Status(ctx, in.Name)
	if err != nil {
		return false, err
	}
	return st.Status == events.StatusUp, nil
}
