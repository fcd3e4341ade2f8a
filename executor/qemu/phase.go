package qemu

import (
	"context"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/process"
)

// Per-instance migrations (RFD 34 phases) of a VM on shared storage, by
// stop and start: the process driver's StopStart, with this driver's VMs
// as its runtime. Nothing is synced (the disk is shared), the switch
// shuts the VM down here and boots it on the target, a rollback does the
// same the other way. A live per-instance migration (memory pre-copy in
// the sync phases, the handover in the switch) is a separate issue; a
// VM on ZFS storage migrates through the zfs driver with ZFSRuntime.

var _ executor.Migrator = (*Driver)(nil)

func (d *Driver) stopStart(size events.Size) process.StopStart {
	return process.StopStart{Handoff: d.handoff(executor.Op{Size: size}), Dir: d.cfg.Dir,
		Running: func(ctx context.Context, instance string) (bool, error) {
			st, err := d.Status(ctx, instance)
			return st.Status == events.StatusUp, err
		}}
}

// Phase runs one phase of a per-instance migration by stop and start.
func (d *Driver) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	return d.stopStart(mp.Size).Phase(ctx, mp, report)
}

// Estimate is StopStart's: no bytes, a shutdown and a boot.
func (d *Driver) Estimate(ctx context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	return d.stopStart(mp.Size).Estimate(ctx, mp)
}
