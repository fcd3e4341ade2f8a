package qemu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	if phase, ok := op.MigrationPhaseOf(); ok {
		if goesLive(op.RunState, phase) {
			return d.ReceiveLive(ctx, op, phase, listening, report) // live_receive.go
		}
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
	in := &incoming{d: d, op: op, log: d.log.With("instance", op.Instance, "opcode", op.Key(), "from", op.From)}
	if in.alreadyHere(ctx) {
		return nil
	}
	if err := in.start(ctx); err != nil {
		return err
	}
	evs, unsub := in.v.qmp.Subscribe()
	defer unsub()
	addr, err := in.listen()
	if err != nil {
		return err
	}
	in.log.Info("incoming VM listening", "addr", addr, "pid", in.v.proc.Pid)
	report(executor.Progress{Phase: events.PhaseBegin, Message: "incoming VM on " + d.cfg.Node + " listening on " + addr})
	listening(addr)
	return in.await(ctx, evs, report)
}

// incoming is the target side of one live migrate.
type incoming struct {
	d        *Driver
	op       executor.Op
	v        *vm
	log      *slog.Logger
	postcopy bool      // the guest runs here already
	cancelAt time.Time // when ctx ended, zero before
}

// alreadyHere reports whether the instance runs here already (an earlier
// attempt finished); a leftover incoming VM of an earlier attempt is
// destroyed, to start over.
func (in *incoming) alreadyHere(ctx context.Context) bool {
	v, err := in.d.lookup(ctx, in.op.Instance)
	if err != nil {
		return false
	}
	if rs, err := v.runState(ctx); err == nil && rs == "running" {
		in.log.Info("instance already runs here")
		return true
	}
	in.d.drop(in.op.Instance, v)
	v.kill()
	return false
}

// start starts the incoming VM (-incoming defer) with the migration
// capabilities set.
func (in *incoming) start(ctx context.Context) error {
	d := in.d
	spec, err := d.spec(in.op.Instance, in.op.Size, true)
	if err != nil {
		return err
	}
	v, err := d.startVM(ctx, spec)
	if err != nil {
		return executor.Transient(err)
	}
	in.v = v
	d.put(in.op.Instance, v)
	d.m.vms.Inc()
	if err := d.setCapabilities(v); err != nil {
		return in.destroy(executor.Transient(err))
	}
	return nil
}

// destroy removes the incoming VM and returns err.
func (in *incoming) destroy(err error) error {
	in.d.drop(in.op.Instance, in.v)
	in.v.kill()
	in.log.Info("incoming VM destroyed", "err", err)
	return err
}

// listen makes the incoming VM listen (on the opcode's address, else an
// ephemeral port of ListenHost) and returns the address it listens on.
func (in *incoming) listen() (string, error) {
	d, v := in.d, in.v
	listen := in.op.ListenAddr
	if listen == "" {
		listen = net.JoinHostPort(d.cfg.ListenHost, "0")
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return "", in.destroy(executor.Fatal(fmt.Errorf("qemu: listen address %q: %w", listen, err)))
	}
	if err := d.targetTLS(v, in.op.From); err != nil {
		return "", in.destroy(executor.Transient(err))
	}
	if err := d.exec(v, "migrate-incoming", map[string]any{"uri": "tcp:" + listen}, nil); err != nil {
		return "", in.destroy(executor.Transient(err))
	}
	var info migrationInfo
	if err := d.exec(v, "query-migrate", nil, &info); err != nil {
		return "", in.destroy(executor.Transient(err))
	}
	addr := ""
	for _, sa := range info.SocketAddress {
		if sa.Type == "inet" {
			addr = net.JoinHostPort(host, sa.Port)
		}
	}
	if addr == "" {
		return "", in.destroy(executor.Fatal(errNoAddress))
	}
	return addr, nil
}

// await follows the incoming migration until the guest runs here, the
// migration fails, or a cancel ends it.
func (in *incoming) await(ctx context.Context, evs <-chan Event, report func(executor.Progress)) error {
	d, v := in.d, in.v
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	done := ctx.Done()
	for {
		select {
		case <-tick.C:
		case <-evs:
		case <-v.exited:
		case <-done:
			done, in.cancelAt = nil, time.Now()
		}
		if !v.alive() {
			return in.destroy(executor.Fatal(fmt.Errorf("%w: the incoming VM exited: %s", ErrMigrationFailed, tail(d.logPath(in.op.Instance)))))
		}
		var info migrationInfo
		if err := d.exec(v, "query-migrate", nil, &info); err != nil {
			if v.alive() {
				in.log.Warn("query-migrate on the incoming VM failed", "err", err)
			}
			continue // a VM gone is reported above on the next turn
		}
		switch info.Status {
		case "postcopy-active", "postcopy-paused", "postcopy-recover":
			if !in.postcopy && !in.cancelAt.IsZero() {
				in.log.Info("cancel refused: the migration is in post-copy and the guest runs here")
			}
			in.postcopy = true
		case "failed", "cancelled":
			return in.destroy(executor.Fatal(fmt.Errorf("%w: incoming: %s %s", ErrMigrationFailed, info.Status, info.ErrorDesc)))
		case "completed":
			if end, err := in.completed(report); end {
				return err
			}
			continue
		}
		if in.cancelAt.IsZero() || in.postcopy {
			continue
		}
		if end, err := in.cancelled(ctx, info); end {
			return err
		}
	}
}

// completed answers a completed incoming migration: done once the guest
// runs here; a non-live move, which arrives stopped, is resumed first.
func (in *incoming) completed(report func(executor.Progress)) (bool, error) {
	rs, err := in.v.runState(context.Background())
	if err != nil {
		return false, nil
	}
	switch {
	case rs == "running":
		in.d.clearMoved(in.op.Instance)
		in.log.Info("incoming migration completed; the guest runs here")
		report(executor.Progress{Phase: events.PhaseSwitch, Message: "the guest runs on " + in.d.cfg.Node})
		return true, nil
	case rs == "paused" && in.op.Mode == events.ModeMigrateNonLive:
		// A non-live move arrives stopped; the guest was running.
		if err := in.d.exec(in.v, "cont", nil, nil); err != nil {
			return true, in.destroy(executor.Fatal(err))
		}
	}
	return false, nil
}

// cancelled answers a cancel in pre-copy. A cause that is not an abort
// (the executor shutting down, or the source's opcode ending well) leaves
// the VM alone: a finished migration runs on, and a restarted receiver
// finds it. An abort destroys the VM — but the source decides a
// migration's fate: it may be switching to post-copy this very moment,
// after which destroying this VM would lose the guest. So once the stream
// runs, the target gives the source CancelGrace to end it (the incoming VM
// then fails) or to reach post-copy (the move then finishes).
func (in *incoming) cancelled(ctx context.Context, info migrationInfo) (bool, error) {
	waited := info.Status == "active" && time.Since(in.cancelAt) <= in.d.cfg.CancelGrace
	cause := context.Cause(ctx)
	switch {
	case waited:
		return false, nil
	case !errors.Is(cause, executor.ErrCanceled):
		return true, fmt.Errorf("qemu: receiver stopped (%v); the incoming VM is left as it is (%s)", cause, info.Status)
	}
	return true, in.destroy(fmt.Errorf("%w: incoming migration aborted (%s): %v", executor.ErrCanceled, info.Status, cause))
}

func (d *Driver) logPath(instance string) string {
	_, _, l := d.paths(instance)
	return l
}
