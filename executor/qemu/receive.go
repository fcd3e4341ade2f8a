package qemu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Receive is the target side of a live migrate: it starts the incoming VM
// (-incoming defer, the instance's disk from Config.Disk on this node),
// lets it listen on an ephemeral port of ListenHost, announces the
// address, and returns once the guest runs here (oVirt: target up).
//
// If the migration fails in pre-copy — the source cancelled, the stream
// broke, the source died — the incoming QEMU exits or reports failure and
// Receive destroys it (target down). A cancelled ctx destroys it too,
// except in post-copy: the guest already runs here, so Receive waits for
// the end instead (the move can no longer be cancelled).
func (d *Driver) Receive(ctx context.Context, op executor.Op, listening func(addr string), report func(executor.Progress)) error {
	if _, ok := op.MigrationPhaseOf(); ok {
		return d.stopStart(op.Size).ReceivePhase(ctx, op, listening, report) // phase.go
	}
	if d.cold(op) {
		if v, err := d.lookup(ctx, op.Instance); err == nil && v.alive() {
			return nil // an earlier attempt finished
		}
		if err := d.handoff(op).Receive(ctx, op, listening, report); err != nil {
			return err
		}
		d.clearMoved(op.Instance)
		return nil
	}
	if !d.live(op) {
		return nil // nothing runs here until the storage driver has moved the data
	}
	log := d.log.With("instance", op.Instance, "opcode", op.Key(), "from", op.From)
	if v, err := d.lookup(ctx, op.Instance); err == nil {
		if rs, err := v.runState(ctx); err == nil && rs == "running" {
			log.Info("instance already runs here")
			return nil
		}
		// A leftover incoming VM of an earlier attempt: start over.
		d.drop(op.Instance, v)
		v.kill()
	}
	spec, err := d.spec(op.Instance, op.Size, true)
	if err != nil {
		return err
	}
	v, err := d.startVM(ctx, spec)
	if err != nil {
		return executor.Transient(err)
	}
	d.put(op.Instance, v)
	d.m.vms.Inc()
	destroy := func(err error) error {
		d.drop(op.Instance, v)
		v.kill()
		log.Info("incoming VM destroyed", "err", err)
		return err
	}
	if err := d.setCapabilities(v); err != nil {
		return destroy(executor.Transient(err))
	}
	evs, unsub := v.qmp.Subscribe()
	defer unsub()
	listen := op.ListenAddr
	if listen == "" {
		listen = net.JoinHostPort(d.cfg.ListenHost, "0")
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return destroy(executor.Fatal(fmt.Errorf("qemu: listen address %q: %w", listen, err)))
	}
	if err := d.exec(v, "migrate-incoming", map[string]any{"uri": "tcp:" + listen}, nil); err != nil {
		return destroy(executor.Transient(err))
	}
	var info migrationInfo
	if err := d.exec(v, "query-migrate", nil, &info); err != nil {
		return destroy(executor.Transient(err))
	}
	addr := ""
	for _, sa := range info.SocketAddress {
		if sa.Type == "inet" {
			addr = net.JoinHostPort(host, sa.Port)
		}
	}
	if addr == "" {
		return destroy(executor.Fatal(errNoAddress))
	}
	log.Info("incoming VM listening", "addr", addr, "pid", v.proc.Pid)
	report(executor.Progress{Phase: events.PhaseBegin, Message: "incoming VM on " + d.cfg.Node + " listening on " + addr})
	listening(addr)

	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	done := ctx.Done()
	postcopy := false
	var cancelAt time.Time
	for {
		select {
		case <-tick.C:
		case <-evs:
		case <-v.exited:
		case <-done:
			done, cancelAt = nil, time.Now()
		}
		if !v.alive() {
			return destroy(executor.Fatal(fmt.Errorf("%w: the incoming VM exited: %s", ErrMigrationFailed, tail(d.logPath(op.Instance)))))
		}
		var info migrationInfo
		if err := d.exec(v, "query-migrate", nil, &info); err != nil {
			if !v.alive() {
				continue // reported above on the next turn
			}
			log.Warn("query-migrate on the incoming VM failed", "err", err)
			continue
		}
		switch info.Status {
		case "postcopy-active", "postcopy-paused", "postcopy-recover":
			if !postcopy && !cancelAt.IsZero() {
				log.Info("cancel refused: the migration is in post-copy and the guest runs here")
			}
			postcopy = true
		case "failed", "cancelled":
			return destroy(executor.Fatal(fmt.Errorf("%w: incoming: %s %s", ErrMigrationFailed, info.Status, info.ErrorDesc)))
		case "completed":
			rs, err := v.runState(context.Background())
			if err != nil {
				continue
			}
			switch {
			case rs == "running":
				d.clearMoved(op.Instance)
				log.Info("incoming migration completed; the guest runs here")
				report(executor.Progress{Phase: events.PhaseSwitch,
					Message: "the guest runs on " + d.cfg.Node})
				return nil
			case rs == "paused" && op.Mode == events.ModeMigrateNonLive:
				// A non-live move arrives stopped; the guest was running.
				if err := d.exec(v, "cont", nil, nil); err != nil {
					return destroy(executor.Fatal(err))
				}
			}
			continue
		}
		if cancelAt.IsZero() || postcopy {
			continue
		}
		// Cancelled. A cause that is not an abort (the executor shutting
		// down, or the source's opcode ending well) leaves the VM alone: a
		// finished migration runs on, and a restarted receiver finds it.
		cause := context.Cause(ctx)
		if !errors.Is(cause, executor.ErrCanceled) {
			if info.Status != "active" || time.Since(cancelAt) > d.cfg.CancelGrace {
				return fmt.Errorf("qemu: receiver stopped (%v); the incoming VM is left as it is (%s)", cause, info.Status)
			}
			continue
		}
		// An abort. The source decides a migration's fate: it may be
		// switching to post-copy this very moment, after which destroying
		// this VM would lose the guest. So once the stream runs, the target
		// gives the source CancelGrace to end it (the incoming VM then
		// fails, above) or to reach post-copy (the move then finishes).
		if info.Status != "active" || time.Since(cancelAt) > d.cfg.CancelGrace {
			return destroy(fmt.Errorf("%w: incoming migration aborted (%s): %v", executor.ErrCanceled, info.Status, cause))
		}
	}
}

func (d *Driver) logPath(instance string) string {
	_, _, l := d.paths(instance)
	return l
}
