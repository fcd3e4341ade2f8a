package qemu

import (
	"context"
	"fmt"
	"os"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/process"
)

// Per-instance migrations (RFD 34 phases) of a VM on shared storage: a
// running VM moves live (live.go: memory pre-copy in the syncs, the
// hand-over in the switch). A stopped one, and every rollback, goes by
// stop and start: the process driver's StopStart, with this driver's VMs
// as its runtime — nothing is synced (the disk is shared), the switch
// shuts the VM down here and boots it on the target, a rollback does the
// same the other way. A VM on ZFS storage migrates through the zfs
// driver with ZFSRuntime.

var _ executor.Migrator = (*Driver)(nil)

func (d *Driver) stopStart(size events.Size) process.StopStart {
	return process.StopStart{Handoff: d.handoff(executor.Op{Size: size}), Dir: d.cfg.Dir,
		Running: func(ctx context.Context, instance string) (bool, error) {
			st, err := d.Status(ctx, instance)
			return st.Status == events.StatusUp, err
		}}
}

// Phase runs one phase of a per-instance migration: live for a running
// VM (live.go), by stop and start otherwise and for rollback; finalize
// drops the live migration's note.
func (d *Driver) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	if goesLive(mp.RunState, mp.Phase) {
		return d.LivePhase(ctx, mp, nil, report)
	}
	if mp.Phase == "finalize" {
		_ = os.Remove(d.livePath(mp.Instance))
	}
	return d.stopStart(mp.Size).Phase(ctx, mp, report)
}

// Estimate: a running VM's memory once over the wire at the rate cap (or
// the link, unknown here: a second per GiB is assumed), down for the
// downtime limit; StopStart's (no bytes, a shutdown and a boot) for a
// stopped one.
func (d *Driver) Estimate(ctx context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	if !goesLive(mp.RunState, events.PhaseSync) {
		return d.stopStart(mp.Size).Estimate(ctx, mp)
	}
	mem := mp.Size.MemoryMiB
	if mem <= 0 {
		mem = d.cfg.DefaultMemoryMiB
	}
	bytes := mem << 20
	rate := float64(rateOf(mp))
	how := fmt.Sprintf("live: a pre-copy of %d MiB of RAM, then a switch within the downtime limit %s; ", mem, d.cfg.DowntimeLimit)
	if rate <= 0 {
		rate = 1 << 30
		how += "no rate cap, 1 GiB/s assumed; dirtying adds passes"
	} else {
		how += fmt.Sprintf("at the rate cap %s/s; dirtying adds passes", mib(int64(rate)))
	}
	return executor.Estimate{TotalSeconds: float64(bytes) / rate, DowntimeSeconds: d.cfg.DowntimeLimit.Seconds(),
		Bytes: bytes, How: how}, nil
}
