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

// ReceiveLive is the target side of a live per-instance migration's
// phase. Begin starts the incoming VM, announces it and waits for the
// phase's end (a begin that failed or was cancelled destroys it). Sync
// and switch follow the incoming VM: one whose migration failed, or that
// exited, is destroyed; the switch returns once the guest runs here. A
// receiver stopped at its phase's end leaves the VM alone — a pause keeps
// the pre-copy, and only an abort destroys the VM (the abort phase here).
func (d *Driver) ReceiveLive(ctx context.Context, op executor.Op, phase string, listening func(addr string), report func(executor.Progress)) error {
	in := &incoming{d: d, op: op, log: d.log.With("instance", op.Instance, "migration", op.Request, "phase", phase, "from", op.From)}
	switch phase {
	case events.PhaseBegin:
		return in.begin(ctx, listening, report)
	case events.PhaseSync, events.PhaseSwitch:
		v, err := d.lookup(ctx, op.Instance)
		if err != nil {
			return nil // nothing here: the source reports the failure
		}
		in.v = v
		return in.follow(ctx, phase == events.PhaseSwitch, report)
	case "abort":
		if v, err := d.lookup(ctx, op.Instance); err == nil {
			if rs, err := v.runState(ctx); err != nil || rs != "running" {
				in.v = v
				_ = in.destroy(errors.New("the migration was aborted"))
			}
		}
	}
	return nil
}

func (in *incoming) begin(ctx context.Context, listening func(string), report func(executor.Progress)) error {
	if ctx.Err() != nil {
		return nil // the phase ended before its receiver started
	}
	addr := in.listening()
	if addr == "" {
		if in.alreadyHere(ctx) {
			return nil
		}
		if err := in.start(ctx); err != nil {
			return err
		}
		var err error
		if addr, err = in.listen(); err != nil {
			return err
		}
	}
	in.log.Info("incoming VM listening", "addr", addr, "pid", in.v.proc.Pid)
	report(executor.Progress{Phase: events.PhaseBegin, Message: "incoming VM on " + in.d.cfg.Node + " listening on " + addr})
	listening(addr)
	select {
	case <-ctx.Done():
	case <-in.v.exited:
		return in.destroy(executor.Fatal(fmt.Errorf("%w: the incoming VM exited: %s", ErrMigrationFailed, tail(in.d.logPath(in.op.Instance)))))
	}
	if errors.Is(context.Cause(ctx), executor.ErrCanceled) {
		return in.destroy(fmt.Errorf("%w: the begin did not complete: %v", executor.ErrCanceled, context.Cause(ctx)))
	}
	return nil
}

// listening returns the address of an incoming VM an earlier begin left
// listening for this migration ("" if none), so that a begin run again
// keeps the VM the source knows.
func (in *incoming) listening() string {
	qctx, cancel := in.d.qctx()
	defer cancel()
	v, err := in.d.lookup(qctx, in.op.Instance)
	if err != nil {
		return ""
	}
	if rs, err := v.runState(qctx); err != nil || rs != "inmigrate" {
		return ""
	}
	var info migrationInfo
	if in.d.exec(v, "query-migrate", nil, &info) != nil {
		return ""
	}
	for _, sa := range info.SocketAddress {
		if sa.Type == "inet" {
			in.v = v
			host := in.d.cfg.ListenHost
			if h, _, err := net.SplitHostPort(in.op.ListenAddr); err == nil && h != "" {
				host = h
			}
			return net.JoinHostPort(host, sa.Port)
		}
	}
	return ""
}

// follow watches the incoming VM during a sync or the switch.
func (in *incoming) follow(ctx context.Context, untilRunning bool, report func(executor.Progress)) error {
	d, v := in.d, in.v
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		if !v.alive() {
			return in.destroy(executor.Fatal(fmt.Errorf("%w: the incoming VM exited: %s", ErrMigrationFailed, tail(d.logPath(in.op.Instance)))))
		}
		var info migrationInfo
		if err := d.exec(v, "query-migrate", nil, &info); err == nil {
			switch info.Status {
			case "failed", "cancelled":
				return in.destroy(executor.Fatal(fmt.Errorf("%w: incoming: %s %s", ErrMigrationFailed, info.Status, info.ErrorDesc)))
			case "completed":
				if end, err := in.completed(report); end && untilRunning {
					return err
				}
			}
		}
		select {
		case <-tick.C:
		case <-v.exited:
		case <-ctx.Done():
			return nil
		}
	}
}
