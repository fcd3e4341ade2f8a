package process

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// The handoff between source and target is one TCP connection and two
// lines: the source connects (so it knows the target is there before it
// stops anything), stops its process and sends "stopped <key>"; the
// target starts the process and answers "up" or "error <why>". On an
// error or no answer the source starts its process again (source up,
// target down). Only one side ever runs the instance.

// handsOver says whether op moves a running process: a migrate or
// failover of a running instance. Source and target decide it from the
// same Op; anything else is the storage driver's business.
func handsOver(op executor.Op) bool {
	return (op.Kind == events.OpInstanceMigrate || op.Kind == events.OpInstanceFailover) &&
		op.RunState == events.RunRunning
}

// Run is the source side: stop here, have the target start, or roll back.
func (d *Driver) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	done := func(msg string) (executor.Result, error) {
		report(executor.Progress{Phase: events.PhaseSwitch, Current: 1, Total: 1, Message: msg})
		return executor.Result{Message: msg}, nil
	}
	if !handsOver(op) {
		return done(fmt.Sprintf("process: nothing to hand over for %s of a %s instance", op.ShortKind(), op.RunState))
	}
	if d.lookup(op.Instance) == nil {
		if d.movedBy(op) {
			return done(op.Instance + " already moved to " + op.To + " by this opcode")
		}
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: %s on %s", ErrNotRunning, op.Instance, d.cfg.Node))
	}
	res, err := d.handoff().Send(ctx, op, report)
	if err == nil {
		d.markMoved(op)
	}
	return res, err
}

// Send is the source side of a handoff: wait for the target's address,
// connect, stop the instance here, and have the target start it — or
// start it here again when the target does not answer "up".
func (h Handoff) Send(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	h = h.withDefaults()
	if op.AwaitReceiver == nil {
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: a handoff needs the target's receiver", ErrNoReceiver))
	}
	report(executor.Progress{Phase: events.PhaseBegin, Total: 1, Message: "waiting for " + op.To + " to listen"})
	addr, err := op.AwaitReceiver(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return executor.Result{}, fmt.Errorf("%w: %v", executor.ErrCanceled, context.Cause(ctx))
		}
		return executor.Result{}, executor.Transient(err)
	}
	var dialer net.Dialer
	dctx, cancel := context.WithTimeout(ctx, h.Timeout)
	conn, err := dialer.DialContext(dctx, "tcp", addr)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return executor.Result{}, fmt.Errorf("%w: %v", executor.ErrCanceled, context.Cause(ctx))
		}
		return executor.Result{}, executor.Transient(fmt.Errorf("process: dial %s: %w", addr, err))
	}
	defer conn.Close()
	if ctx.Err() != nil {
		return executor.Result{}, fmt.Errorf("%w: %v", executor.ErrCanceled, context.Cause(ctx))
	}

	// From here on the handoff runs to its end whatever ctx says: a
	// half-done handoff is worse than a finished one or a rollback.
	report(executor.Progress{Phase: events.PhaseSwitch, Total: 1, Message: "stopping on " + h.Node})
	stopped := time.Now()
	if err := h.Runtime.Stop(context.WithoutCancel(ctx), op.Instance); err != nil {
		return executor.Result{}, executor.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(h.Timeout))
	answer := ""
	if _, err = fmt.Fprintf(conn, "stopped %s\n", op.Key()); err == nil {
		answer, err = bufio.NewReader(conn).ReadString('\n')
	}
	answer = strings.TrimSpace(answer)
	if err == nil && answer == "up" {
		downtime := time.Since(stopped)
		msg := fmt.Sprintf("stopped on %s, started on %s; down for %s", h.Node, op.To, downtime.Round(time.Millisecond))
		report(executor.Progress{Phase: events.PhaseSwitch, Current: 1, Total: 1, Message: msg})
		return executor.Result{Downtime: downtime, Message: msg}, nil
	}
	why := answer
	if err != nil {
		why = err.Error()
	}
	// Roll back: the target did not take it, so the source runs it again.
	if rerr := h.Runtime.Start(context.WithoutCancel(ctx), op.Instance); rerr != nil {
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: %s; and restarting on %s failed: %v", ErrHandoff, why, h.Node, rerr))
	}
	report(executor.Progress{Phase: events.PhaseSwitch, Total: 1, Message: "handoff failed (" + why + "); running on " + h.Node + " again"})
	if ctx.Err() != nil {
		return executor.Result{}, fmt.Errorf("%w: handoff failed (%s); the source runs again", executor.ErrCanceled, why)
	}
	return executor.Result{}, executor.Fatal(fmt.Errorf("%w: %s; the source runs again", ErrHandoff, why))
}

// Receive is the target side: listen, announce, and start the process
// once the source says it stopped.
func (d *Driver) Receive(ctx context.Context, op executor.Op, listening func(addr string), report func(executor.Progress)) error {
	if _, ok := op.MigrationPhaseOf(); ok {
		return d.stopStart().ReceivePhase(ctx, op, listening, report) // migrate.go
	}
	if !handsOver(op) {
		return nil
	}
	if d.lookup(op.Instance) != nil {
		return nil // it already runs here: an earlier attempt finished
	}
	if err := d.handoff().Receive(ctx, op, listening, report); err != nil {
		return err
	}
	d.clearMoved(op.Instance)
	return nil
}

// Receive is the target side of a handoff: listen, announce, and start
// the instance once the source says it stopped it.
func (h Handoff) Receive(ctx context.Context, op executor.Op, listening func(addr string), report func(executor.Progress)) error {
	h = h.withDefaults()
	listen := op.ListenAddr
	if listen == "" {
		listen = net.JoinHostPort(h.ListenHost, "0")
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return executor.Transient(fmt.Errorf("process: listen: %w", err))
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	listening(ln.Addr().String())
	report(executor.Progress{Phase: events.PhaseBegin, Total: 1, Message: "listening on " + ln.Addr().String()})
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %v", executor.ErrCanceled, context.Cause(ctx))
			}
			return executor.Transient(fmt.Errorf("process: accept: %w", err))
		}
		done, err := h.serve(ctx, conn, op)
		if done {
			return err
		}
		h.Log.Warn("handoff connection dropped before the source stopped; waiting for another", "err", err)
	}
}

// serve runs one handoff connection. done is false when the connection
// ended before the source said it stopped (nothing happened; another may
// come).
func (h Handoff) serve(ctx context.Context, conn net.Conn, op executor.Op) (done bool, err error) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	// The source may wait on its stop (StopTimeout) before it writes.
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	line, err := r.ReadString('\n')
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return true, fmt.Errorf("%w: %v", executor.ErrCanceled, context.Cause(ctx))
		}
		return false, err
	}
	if got := strings.TrimSpace(line); got != "stopped "+op.Key() {
		fmt.Fprintf(conn, "error unexpected %q\n", got)
		return false, fmt.Errorf("%w: unexpected %q", ErrHandoff, got)
	}
	conn.SetWriteDeadline(time.Now().Add(h.Timeout))
	// Past this line the source's copy is stopped: start regardless of
	// ctx, or the instance runs nowhere.
	if err := h.Runtime.Start(context.WithoutCancel(ctx), op.Instance); err != nil {
		fmt.Fprintf(conn, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return true, err
	}
	if _, err := fmt.Fprintf(conn, "up\n"); err != nil {
		// The source will not hear it and starts its own copy: stop ours,
		// so only one side runs the instance.
		h.Runtime.Stop(context.Background(), op.Instance)
		return true, executor.Fatal(fmt.Errorf("%w: answering the source: %v", ErrHandoff, err))
	}
	return true, nil
}

// Runtime is what a handoff needs of a node's runtime.
type Runtime interface {
	Start(ctx context.Context, instance string) error
	Stop(ctx context.Context, instance string) error
}

// Handoff moves a running instance that cannot move live: stop on the
// source, start on the target, roll back to the source when the target
// does not start it. Other runtime drivers (QEMU's failover) use it too.
type Handoff struct {
	// Node is this node, for messages.
	Node string
	// Runtime starts and stops instances on this node.
	Runtime Runtime
	// ListenHost is what the target listens on when the Op has no
	// ListenAddr. Default 127.0.0.1.
	ListenHost string
	// Timeout bounds each step once the source has stopped. Default 30s.
	Timeout time.Duration
	// Log gets warnings. Default slog.Default().
	Log *slog.Logger
}

func (h Handoff) withDefaults() Handoff {
	if h.ListenHost == "" {
		h.ListenHost = "127.0.0.1"
	}
	if h.Timeout == 0 {
		h.Timeout = 30 * time.Second
	}
	if h.Log == nil {
		h.Log = slog.Default()
	}
	return h
}

func (d *Driver) handoff() Handoff {
	return Handoff{Node: d.cfg.Node, Runtime: d, ListenHost: d.cfg.ListenHost, Timeout: d.cfg.HandoffTimeout, Log: d.log}
}

func (d *Driver) markMoved(op executor.Op) {
	os.WriteFile(d.base(op.Instance)+".moved", []byte(op.Key()+"\n"), 0o644)
}

func (d *Driver) movedBy(op executor.Op) bool {
	b, err := os.ReadFile(d.base(op.Instance) + ".moved")
	return err == nil && strings.TrimSpace(string(b)) == op.Key()
}

func (d *Driver) clearMoved(instance string) { os.Remove(d.base(instance) + ".moved") }
