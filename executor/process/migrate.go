package process

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// StopStart runs RFD 34 per-instance migrations for a runtime whose data
// is shared (or moved by a storage driver of its own): nothing to sync,
// and the switch is a handoff — stop here, start on the target, or start
// here again when the target does not take it. Rollback hands the
// instance back the same way, the target stopping it; abort puts the
// source back in its prior run state; finalize has nothing to drop. QEMU
// on shared storage uses it too, until its live per-instance migration.
type StopStart struct {
	Handoff
	// Running says whether the instance runs on this node.
	Running func(ctx context.Context, instance string) (bool, error)
	// Dir keeps each migration's notes (the prior run state, the switch
	// done), so that a restarted executor runs a phase again safely.
	Dir string
}

// Phase runs one phase on the source node: see executor.Migrator.
func (s StopStart) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	s.Handoff = s.Handoff.withDefaults()
	report(executor.Progress{Phase: mp.Phase, Total: 1, Message: fmt.Sprintf("%s phase of %s (stop and start: no data to copy)", mp.Phase, mp.Instance)})
	var res executor.PhaseResult
	var err error
	switch mp.Phase {
	case events.PhaseBegin:
		res, err = s.begin(ctx, mp)
	case events.PhaseSync:
		res.Message = fmt.Sprintf("sync %d of %s: nothing to send, its data is shared", mp.Sync, mp.Instance)
	case events.PhaseSwitch:
		res, err = s.switchOver(ctx, mp, report)
	case "abort":
		res, err = s.abort(ctx, mp)
	case "rollback":
		res, err = s.rollback(ctx, mp)
	case "finalize":
		_ = os.Remove(s.note(mp.Instance))
		res.Message = fmt.Sprintf("finalized: %s on %s; no source copy to drop", mp.Instance, mp.Target)
	default:
		err = executor.Fatal(fmt.Errorf("process: unknown migration phase %q", mp.Phase))
	}
	if err != nil {
		return executor.PhaseResult{}, err
	}
	report(executor.Progress{Phase: mp.Phase, Current: 1, Total: 1, Message: res.Message})
	return res, nil
}

// Estimate: no bytes; the downtime is a stop and a start.
func (s StopStart) Estimate(_ context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	down := 0.0
	if mp.RunState == events.RunRunning {
		down = 2 * s.withDefaults().Timeout.Seconds() / 30 // a stop and a start, a second each at most by default
	}
	return executor.Estimate{TotalSeconds: down, DowntimeSeconds: down,
		How: "stop and start: the instance's data is shared, nothing is copied"}, nil
}

// note is the file of the migration under way for instance.
func (s StopStart) note(instance string) string {
	return filepath.Join(s.Dir, "_"+strings.NewReplacer("/", "_", ".", "_").Replace(instance)+".migration")
}

// noted returns what begin and switch noted for migration: the prior run
// state ("running" or "stopped"; the inventory's when nothing is noted)
// and whether the switch handed it over.
func (s StopStart) noted(mp executor.MigrationPhase) (prior bool, switched bool) {
	b, err := os.ReadFile(s.note(mp.Instance))
	f := strings.Fields(string(b))
	if err != nil || len(f) < 2 || f[0] != mp.Migration {
		return mp.RunState == events.RunRunning, false
	}
	return f[1] == "running", len(f) > 2 && f[2] == "switched"
}

func (s StopStart) write(mp executor.MigrationPhase, prior, switched bool) error {
	state, sw := "stopped", ""
	if prior {
		state = "running"
	}
	if switched {
		sw = " switched"
	}
	return os.WriteFile(s.note(mp.Instance), []byte(mp.Migration+" "+state+sw+"\n"), 0o644)
}

func (s StopStart) begin(ctx context.Context, mp executor.MigrationPhase) (executor.PhaseResult, error) {
	prior, _ := s.noted(mp)
	if b, err := os.ReadFile(s.note(mp.Instance)); err != nil || !strings.HasPrefix(string(b), mp.Migration+" ") {
		run, err := s.Running(ctx, mp.Instance)
		if err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
		prior = run
		if err := s.write(mp, prior, false); err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
	}
	return executor.PhaseResult{Message: fmt.Sprintf("begin: %s on %s, running %v; nothing to reserve on %s", mp.Instance, s.Node, prior, mp.Target)}, nil
}

// handoffOp is the migration's Op (executor.MigrationPhase.Op) for the
// handoff, which moves a running instance.
func handoffOp(mp executor.MigrationPhase) executor.Op {
	op := mp.Op()
	op.RunState = events.RunRunning
	return op
}

func (s StopStart) switchOver(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	prior, switched := s.noted(mp)
	if switched {
		return executor.PhaseResult{Message: fmt.Sprintf("already switched: %s is on %s", mp.Instance, mp.Target)}, nil
	}
	var res executor.Result
	if prior {
		var err error
		if res, err = s.Send(ctx, handoffOp(mp), func(p executor.Progress) { p.Phase = mp.Phase; report(p) }); err != nil {
			return executor.PhaseResult{}, err
		}
	}
	if err := s.write(mp, prior, true); err != nil {
		s.Log.Warn("noting the switch failed", "instance", mp.Instance, "err", err)
	}
	return executor.PhaseResult{Downtime: res.Downtime, Message: fmt.Sprintf("switched %s to %s: %s", mp.Instance, mp.Target, res.Message)}, nil
}

func (s StopStart) abort(ctx context.Context, mp executor.MigrationPhase) (executor.PhaseResult, error) {
	prior, switched := s.noted(mp)
	if switched {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: the switch of %s has committed: roll back instead", ErrHandoff, mp.Migration))
	}
	if run, err := s.Running(ctx, mp.Instance); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	} else if prior && !run {
		if err := s.Runtime.Start(ctx, mp.Instance); err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
	}
	_ = os.Remove(s.note(mp.Instance))
	return executor.PhaseResult{Message: fmt.Sprintf("aborted: %s back to its prior state on %s", mp.Instance, s.Node)}, nil
}

// rollback asks the target to hand the instance back: it stops it and
// says "stopped"; this node starts it and answers "up", or "error" and
// the target starts it again.
func (s StopStart) rollback(ctx context.Context, mp executor.MigrationPhase) (executor.PhaseResult, error) {
	prior, _ := s.noted(mp)
	if run, err := s.Running(ctx, mp.Instance); err != nil || run || !prior {
		if err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
		_ = os.Remove(s.note(mp.Instance))
		return executor.PhaseResult{Message: fmt.Sprintf("rolled back: %s is on %s", mp.Instance, s.Node)}, nil
	}
	if mp.AwaitReceiver == nil {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: a rollback needs the target's receiver", ErrNoReceiver))
	}
	addr, err := mp.AwaitReceiver(ctx)
	if err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return executor.PhaseResult{}, executor.Transient(fmt.Errorf("process: dial %s: %w", addr, err))
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * s.Timeout))
	r := bufio.NewReader(conn)
	began := time.Now()
	if _, err := fmt.Fprintf(conn, "handback %s\n", handoffOp(mp).Key()); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "stopped" {
		return executor.PhaseResult{}, executor.Transient(fmt.Errorf("%w: the target answered %q (%v)", ErrHandoff, strings.TrimSpace(line), err))
	}
	// The target stopped it: start here whatever ctx says.
	if err := s.Runtime.Start(context.WithoutCancel(ctx), mp.Instance); err != nil {
		fmt.Fprintf(conn, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: starting on %s: %v; it runs on %s again", ErrHandoff, s.Node, err, mp.Target))
	}
	fmt.Fprintf(conn, "up\n")
	_ = os.Remove(s.note(mp.Instance))
	down := time.Since(began)
	return executor.PhaseResult{Downtime: down, Message: fmt.Sprintf("rolled back: %s stopped on %s, started on %s; down for %s",
		mp.Instance, mp.Target, s.Node, down.Round(time.Millisecond))}, nil
}

// ReceivePhase is the target side of a phase: the handoff for a switch,
// the handback for a rollback, nothing for the others.
func (s StopStart) ReceivePhase(ctx context.Context, op executor.Op, listening func(string), report func(executor.Progress)) error {
	s.Handoff = s.Handoff.withDefaults()
	phase, _ := op.MigrationPhaseOf()
	op.Index, op.RunState = 0, events.RunRunning // one key for the whole migration, as handoffOp
	switch phase {
	case events.PhaseSwitch:
		if run, err := s.Running(ctx, op.Instance); err == nil && run {
			return nil // an earlier attempt handed it over
		}
		return s.Receive(ctx, op, listening, report)
	case "rollback":
		return s.handBack(ctx, op, listening)
	}
	return nil
}

func (s StopStart) handBack(ctx context.Context, op executor.Op, listening func(string)) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.ListenHost, "0"))
	if op.ListenAddr != "" {
		ln, err = net.Listen("tcp", op.ListenAddr)
	}
	if err != nil {
		return executor.Transient(fmt.Errorf("process: listen: %w", err))
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	listening(ln.Addr().String())
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %v", executor.ErrCanceled, context.Cause(ctx))
			}
			return executor.Transient(err)
		}
		if done := s.serveHandBack(ctx, conn, op); done {
			return nil
		}
	}
}

// serveHandBack stops the instance here for the source to start it; if
// the source does not say "up" it starts here again.
func (s StopStart) serveHandBack(ctx context.Context, conn net.Conn, op executor.Op) bool {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * s.Timeout))
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "handback "+op.Key() {
		return false
	}
	bg := context.WithoutCancel(ctx)
	if err := s.Runtime.Stop(bg, op.Instance); err != nil {
		fmt.Fprintf(conn, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return false
	}
	fmt.Fprintf(conn, "stopped\n")
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "up" {
		if serr := s.Runtime.Start(bg, op.Instance); serr != nil {
			s.Log.Error("the source did not take the instance back and it did not start here again", "instance", op.Instance, "err", serr)
		}
		return false
	}
	return true
}

// stopStart is the driver's StopStart.
func (d *Driver) stopStart() StopStart {
	return StopStart{Handoff: d.handoff(), Dir: d.cfg.Dir, Running: func(ctx context.Context, instance string) (bool, error) {
		st, err := d.Status(ctx, instance)
		return st.Running, err
	}}
}

var _ executor.Migrator = (*Driver)(nil)

// Phase runs a per-instance migration phase by stop and start (StopStart).
func (d *Driver) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	return d.stopStart().Phase(ctx, mp, report)
}

// Estimate is StopStart's.
func (d *Driver) Estimate(ctx context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	return d.stopStart().Estimate(ctx, mp)
}
