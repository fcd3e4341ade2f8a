package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/process"
)

// migrationInfo is the part of query-migrate the driver reads.
type migrationInfo struct {
	Status           string `json:"status"`
	TotalTime        int64  `json:"total-time"`
	ExpectedDowntime int64  `json:"expected-downtime"`
	Downtime         int64  `json:"downtime"`
	ErrorDesc        string `json:"error-desc"`
	RAM              *struct {
		Transferred    int64   `json:"transferred"`
		Remaining      int64   `json:"remaining"`
		Total          int64   `json:"total"`
		DirtyPagesRate int64   `json:"dirty-pages-rate"`
		Mbps           float64 `json:"mbps"`
		DirtySyncCount int64   `json:"dirty-sync-count"`
		PageSize       int64   `json:"page-size"`
	} `json:"ram"`
	SocketAddress []struct {
		Type string `json:"type"`
		Host string `json:"host"`
		Port string `json:"port"`
	} `json:"socket-address"`
}

// unlimited stands for "no cap" in max-bandwidth: QEMU has no zero for it.
const unlimited = int64(1) << 40

// Run carries out op on the source node. A live migrate of a running
// instance hands its VM over to the incoming VM that the target's Receive
// started; other opcodes need nothing of the runtime here (the storage
// driver moves the data; a stopped instance has no memory to move).
func (d *Driver) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	if d.cold(op) {
		if _, err := d.lookup(ctx, op.Instance); err != nil {
			if d.movedBy(op) {
				msg := op.Instance + " already failed over to " + op.To + " by this opcode"
				report(executor.Progress{Phase: events.PhaseSwitch, Current: 1, Total: 1, Message: msg})
				return executor.Result{Message: msg}, nil
			}
			return executor.Result{}, executor.Fatal(err)
		}
		res, err := d.handoff(op).Send(ctx, op, report)
		if err == nil {
			d.markMoved(op)
		}
		return res, err
	}
	if !d.live(op) {
		return executor.Result{Message: fmt.Sprintf("qemu: nothing to hand over for %s of a %s instance", op.ShortKind(), op.RunState)}, nil
	}
	v, err := d.lookup(ctx, op.Instance)
	if err != nil {
		if d.movedBy(op) {
			msg := fmt.Sprintf("%s already moved to %s by this opcode", op.Instance, op.To)
			report(executor.Progress{Phase: events.PhaseSwitch, Current: 1, Total: 1, Message: msg})
			return executor.Result{Message: msg}, nil
		}
		return executor.Result{}, executor.Fatal(err)
	}
	return d.migrate(ctx, op, v, report)
}

// live says whether op moves a running VM's memory: a migrate of a
// running instance. Source and target decide it from the same Op.
func (d *Driver) live(op executor.Op) bool {
	return op.Kind == events.OpInstanceMigrate && op.RunState == events.RunRunning
}

// cold says whether op moves a running VM by stopping it here and
// booting it there: a failover (Ganeti's meaning), through the process
// driver's handoff so only one node ever runs the guest.
func (d *Driver) cold(op executor.Op) bool {
	return op.Kind == events.OpInstanceFailover && op.RunState == events.RunRunning
}

// vmRuntime adapts the driver to the handoff's Runtime for one opcode.
type vmRuntime struct {
	d    *Driver
	size events.Size
}

func (r vmRuntime) Start(ctx context.Context, instance string) error {
	return r.d.Start(ctx, instance, r.size)
}
func (r vmRuntime) Stop(ctx context.Context, instance string) error { return r.d.Stop(ctx, instance) }

func (d *Driver) handoff(op executor.Op) process.Handoff {
	return process.Handoff{Node: d.cfg.Node, Runtime: vmRuntime{d, op.Size}, ListenHost: d.cfg.ListenHost,
		Timeout: d.cfg.QMPTimeout + d.cfg.StopTimeout, Log: d.log}
}

// qctx bounds one QMP command. It does not derive from the opcode's ctx:
// an abort still needs its migrate_cancel and cont to get through.
func (d *Driver) qctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d.cfg.QMPTimeout)
}

func (d *Driver) exec(v *vm, cmd string, args, out any) error {
	ctx, cancel := d.qctx()
	defer cancel()
	return v.qmp.Execute(ctx, cmd, args, out)
}

type capability struct {
	Capability string `json:"capability"`
	State      bool   `json:"state"`
}

// setCapabilities turns on migration events and, where allowed,
// post-copy; both sides of a move need the same post-copy setting.
func (d *Driver) setCapabilities(v *vm) error {
	caps := []capability{{"events", true}, {"postcopy-ram", d.cfg.AllowPostCopy}}
	return d.exec(v, "migrate-set-capabilities", map[string]any{"capabilities": caps}, nil)
}

// sourceState is what the source's loop knows of one migration.
type sourceState struct {
	op         executor.Op
	v          *vm
	report     func(executor.Progress)
	began      time.Time
	cur, total int64
	postcopy   bool
	postcopyAt time.Duration
	// stopAt and doneAt are the source's STOP and MIGRATION completed
	// events, timestamped by QEMU in microseconds: their difference is the
	// downtime QEMU measures, without its rounding to whole milliseconds.
	stopAt, doneAt time.Time
	// lastAt and lastBytes are the previous poll, for the rate.
	lastAt    time.Time
	lastBytes int64
}

func (s *sourceState) note(ev Event) {
	switch ev.Name {
	case "STOP":
		s.stopAt = ev.At
	case "MIGRATION":
		var m struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(ev.Data, &m) == nil && m.Status == "completed" {
			s.doneAt = ev.At
		}
	}
}

// downtime is the measured downtime. In pre-copy it is the source's STOP
// to its completion event where both came — the guest's last pages and
// device state on the wire and the target's acknowledgement, so it bounds
// the pause from above with microsecond precision — and QEMU's own figure
// (whole milliseconds, often 0 under 1ms) otherwise. In post-copy the
// guest runs on the target long before completion, so QEMU's figure (the
// stop until the switch) is the downtime.
func (s *sourceState) downtime(evs <-chan Event, info migrationInfo) time.Duration {
	qemu := time.Duration(info.Downtime) * time.Millisecond
	if s.postcopy {
		return qemu
	}
	// The completion event may trail the status query that saw it.
	wait := time.After(time.Second)
	for s.doneAt.IsZero() {
		select {
		case ev := <-evs:
			s.note(ev)
			continue
		case <-wait:
		}
		break
	}
	if s.stopAt.IsZero() || s.doneAt.IsZero() || !s.doneAt.After(s.stopAt) {
		return qemu
	}
	return s.doneAt.Sub(s.stopAt)
}

func (s *sourceState) progress(info migrationInfo, phase, msg string) {
	r := info.RAM
	p := executor.Progress{Phase: phase, Message: msg}
	if r != nil {
		s.cur = max(s.cur, r.Transferred)
		s.total = max(s.total, r.Transferred+r.Remaining, r.Total)
		// QEMU's mbps is refreshed per iteration and reads 0 before the
		// first; between two polls the bytes sent say the rate too.
		now := time.Now()
		p.BytesPerSecond = int64(r.Mbps * 1e6 / 8)
		if p.BytesPerSecond == 0 && !s.lastAt.IsZero() && r.Transferred > s.lastBytes {
			p.BytesPerSecond = int64(float64(r.Transferred-s.lastBytes) / now.Sub(s.lastAt).Seconds())
		}
		s.lastAt, s.lastBytes = now, r.Transferred
		if p.BytesPerSecond > 0 && r.Remaining > 0 {
			p.ETA = time.Duration(float64(r.Remaining) / float64(p.BytesPerSecond) * float64(time.Second))
		}
		if msg == "" {
			mode := "pre-copy"
			if s.postcopy {
				mode = "post-copy"
			}
			p.Message = fmt.Sprintf("%s: %s sent, %s remaining of %s RAM, dirty rate %d pages/s, expected downtime %dms, pass %d",
				mode, mib(r.Transferred), mib(r.Remaining), mib(r.Total), r.DirtyPagesRate, info.ExpectedDowntime, r.DirtySyncCount)
		}
	}
	p.Current, p.Total = s.cur, s.total
	s.report(p)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// migrate hands v over to the target: pre-copy, optionally post-copy,
// then the source VM is shut down. On a pre-copy failure or an abort the
// source VM runs on (oVirt: source up) and the target's Receive destroys
// its incoming VM when the stream breaks.
func (d *Driver) migrate(ctx context.Context, op executor.Op, v *vm, report func(executor.Progress)) (executor.Result, error) {
	log := d.log.With("instance", op.Instance, "opcode", op.Key(), "to", op.To)
	report(executor.Progress{Phase: events.PhaseBegin, Message: "waiting for the incoming VM on " + op.To})
	if op.AwaitReceiver == nil {
		return executor.Result{}, executor.Fatalf("%w: live migration needs the target's receiver (Op.AwaitReceiver)", ErrUnsupported)
	}
	addr, err := op.AwaitReceiver(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return executor.Result{}, fmt.Errorf("%w: before the migration began: %v", executor.ErrCanceled, context.Cause(ctx))
		}
		return executor.Result{}, executor.Transient(fmt.Errorf("qemu: waiting for the receiver: %w", err))
	}
	wasRunning := false
	if rs, err := v.runState(ctx); err == nil {
		wasRunning = rs == "running"
	}
	rate := op.SendBytesPerSecond
	if rate <= 0 {
		rate = d.cfg.MaxBandwidth
	}
	capText := "no rate cap"
	if rate <= 0 {
		rate = unlimited
	} else {
		capText = fmt.Sprintf("capped at %s/s", mib(rate))
	}
	if err := d.setCapabilities(v); err != nil {
		return executor.Result{}, executor.Transient(err)
	}
	if err := d.exec(v, "migrate-set-parameters", map[string]any{
		"max-bandwidth": rate, "downtime-limit": d.cfg.DowntimeLimit.Milliseconds()}, nil); err != nil {
		return executor.Result{}, executor.Transient(err)
	}
	var stoppedAt time.Time
	if op.Mode == events.ModeMigrateNonLive && wasRunning {
		// Non-live: the guest stops first and its whole memory is copied
		// while it is stopped; the target resumes it (Receive).
		if err := d.exec(v, "stop", nil, nil); err != nil {
			return executor.Result{}, executor.Transient(err)
		}
		stoppedAt = time.Now()
	}
	evs, unsub := v.qmp.Subscribe()
	defer unsub()
	if err := d.exec(v, "migrate", map[string]any{"uri": "tcp:" + addr}, nil); err != nil {
		if !stoppedAt.IsZero() {
			d.exec(v, "cont", nil, nil)
		}
		return executor.Result{}, executor.Transient(err)
	}
	s := &sourceState{op: op, v: v, report: report, began: time.Now()}
	memMiB := op.Size.MemoryMiB
	if memMiB <= 0 {
		memMiB = d.cfg.DefaultMemoryMiB
	}
	completion := time.Duration(float64(d.cfg.CompletionTimeoutPerGiB) * float64(memMiB) / 1024)
	log.Info("migration started", "addr", addr, "rate", rate, "completion_timeout", completion)
	report(executor.Progress{Phase: events.PhaseSync, Message: fmt.Sprintf(
		"pre-copy of %d MiB of RAM to %s, %s, downtime limit %s, completion timeout %s",
		memMiB, addr, capText, d.cfg.DowntimeLimit, completion.Round(time.Millisecond))})

	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	done := ctx.Done()
	var (
		cancelled  bool  // the opcode's ctx ended
		cancelling bool  // migrate_cancel sent
		abortWhy   error // why the driver itself aborted
		lowest     = int64(-1)
		lastLow    = time.Now()
		qmpErrs    int
	)
	for {
		var info migrationInfo
		if err := d.exec(v, "query-migrate", nil, &info); err != nil {
			if !v.alive() {
				d.drop(op.Instance, v)
				d.m.migrations.WithLabelValues("source_lost").Inc()
				return executor.Result{}, executor.Fatal(fmt.Errorf("%w: the source VM exited during the migration: %v", ErrExited, err))
			}
			if qmpErrs++; qmpErrs > 5 {
				d.cancelMigration(v)
				return executor.Result{}, executor.Fatal(err)
			}
		} else {
			qmpErrs = 0
		}
		if info.Status == "postcopy-active" && !s.postcopy {
			s.postcopy = true
		}
		switch info.Status {
		case "completed":
			// QEMU shows "completed" a moment before it has computed the
			// final figures (downtime, total time); wait for them.
			for deadline := time.Now().Add(time.Second); info.TotalTime == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				var fin migrationInfo
				if d.exec(v, "query-migrate", nil, &fin) == nil && fin.Status == "completed" {
					info = fin
				}
			}
			return d.completed(op, s, info, s.downtime(evs, info), stoppedAt, cancelled, log)
		case "failed", "cancelled", "postcopy-paused":
			return d.failed(op, s, info, wasRunning, cancelled, abortWhy, log)
		}
		phase := events.PhaseSync
		if s.postcopy || info.Status == "device" || info.Status == "pre-switchover" {
			phase = events.PhaseSwitch
		}
		s.progress(info, phase, "")

		if info.RAM != nil && !s.postcopy && !cancelling {
			if lowest < 0 || info.RAM.Remaining < lowest {
				lowest, lastLow = info.RAM.Remaining, time.Now()
			}
			elapsed := time.Since(s.began)
			switch {
			case time.Since(lastLow) > d.cfg.ProgressTimeout:
				abortWhy = fmt.Errorf("%w: remaining RAM made no new low for %s (progress timeout)", ErrNoProgress, d.cfg.ProgressTimeout)
			case elapsed > completion && d.cfg.AllowPostCopy && info.Status == "active":
				if err := d.exec(v, "migrate-start-postcopy", nil, nil); err != nil {
					log.Warn("switch to post-copy refused", "err", err)
					abortWhy = fmt.Errorf("%w: not complete after %s and the switch to post-copy failed: %v", ErrNoProgress, completion, err)
					break
				}
				s.postcopy, s.postcopyAt = true, elapsed
				d.m.postcopy.Inc()
				if op.Status != nil {
					op.Status(op.From, events.StatusPaused)
				}
				msg := fmt.Sprintf("switched to post-copy after %s (completion timeout %s): the guest now runs on %s and the move can no longer be cancelled",
					elapsed.Round(time.Millisecond), completion.Round(time.Millisecond), op.To)
				log.Info(msg)
				s.progress(info, events.PhaseSwitch, msg)
			case elapsed > completion && !d.cfg.AllowPostCopy:
				abortWhy = fmt.Errorf("%w: not complete after %s (completion timeout %s per GiB) and post-copy is not allowed",
					ErrNoProgress, completion.Round(time.Millisecond), d.cfg.CompletionTimeoutPerGiB)
			}
			if abortWhy != nil {
				log.Info("aborting the migration", "why", abortWhy)
				d.cancelMigration(v)
				cancelling = true
			}
		}

		select {
		case <-tick.C:
		case ev := <-evs:
			s.note(ev)
		case <-v.exited:
		case <-done:
			done = nil
			cancelled = true
			if s.postcopy {
				msg := "cancel refused: the migration is in post-copy, the guest runs on " + op.To + "; finishing the move"
				log.Info(msg)
				s.progress(info, events.PhaseSwitch, msg)
			} else if !cancelling {
				d.cancelMigration(v)
				cancelling = true
			}
		}
	}
}

func (d *Driver) cancelMigration(v *vm) {
	if err := d.exec(v, "migrate_cancel", nil, nil); err != nil {
		d.log.Warn("migrate_cancel failed", "err", err)
	}
}

// completed ends a successful migration: the source VM (stopped by QEMU
// at the switch, in postmigrate) is shut down, so the source is down and
// the target up.
func (d *Driver) completed(op executor.Op, s *sourceState, info migrationInfo, downtime time.Duration, stoppedAt time.Time, cancelled bool, log interface {
	Info(string, ...any)
}) (executor.Result, error) {
	if !stoppedAt.IsZero() {
		downtime = time.Since(stoppedAt)
	}
	d.drop(op.Instance, s.v)
	s.v.quit(d.cfg.StopTimeout)
	d.markMoved(op)
	d.m.migrations.WithLabelValues("completed").Inc()
	d.m.downtime.Observe(downtime.Seconds())
	mode := "pre-copy"
	if s.postcopy {
		mode = fmt.Sprintf("post-copy (switched after %s)", s.postcopyAt.Round(time.Millisecond))
	}
	var passes int64
	if info.RAM != nil {
		s.cur = max(s.cur, info.RAM.Transferred)
		passes = info.RAM.DirtySyncCount
	}
	msg := fmt.Sprintf("live migration to %s completed by %s: %s sent in %s, %d dirty-sync passes, downtime %s (QEMU: %dms)",
		op.To, mode, mib(s.cur), time.Since(s.began).Round(time.Millisecond), passes, downtime, info.Downtime)
	if cancelled {
		msg += "; the cancel came past the point of no return"
	}
	s.total = max(s.total, s.cur)
	s.report(executor.Progress{Phase: events.PhaseSwitch, Current: s.total, Total: s.total, Message: msg})
	log.Info(msg)
	return executor.Result{Syncs: int(passes), Bytes: s.cur, Downtime: downtime, Message: msg}, nil
}

// failed ends a migration that did not complete. In pre-copy the source
// VM is made to run again (QEMU resumes it by itself; cont covers a stop
// at the switch); in post-copy neither side holds the whole guest, so the
// source VM is destroyed as oVirt does and the move fails fatally.
func (d *Driver) failed(op executor.Op, s *sourceState, info migrationInfo, wasRunning, cancelled bool, abortWhy error, log interface {
	Info(string, ...any)
}) (executor.Result, error) {
	if s.postcopy {
		d.drop(op.Instance, s.v)
		s.v.kill()
		d.m.migrations.WithLabelValues("postcopy_failed").Inc()
		if op.Status != nil {
			op.Status(op.From, events.StatusDown)
		}
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: %s %s", ErrPostCopyFailed, info.Status, info.ErrorDesc))
	}
	if wasRunning {
		if rs, err := s.v.runState(context.Background()); err == nil && rs != "running" {
			if err := d.exec(s.v, "cont", nil, nil); err != nil {
				return executor.Result{}, executor.Fatal(fmt.Errorf("qemu: resuming the source after a failed migration: %w", err))
			}
		}
	}
	why := info.ErrorDesc
	if why == "" {
		why = info.Status
	}
	s.report(executor.Progress{Phase: events.PhaseSync, Current: s.cur, Total: s.total,
		Message: "pre-copy ended without handover (" + why + "): the instance runs on " + op.From})
	log.Info("migration did not complete; the source runs on", "status", info.Status, "err", info.ErrorDesc)
	switch {
	case cancelled:
		d.m.migrations.WithLabelValues("cancelled").Inc()
		return executor.Result{}, fmt.Errorf("%w: migration cancelled in pre-copy; the source runs on", executor.ErrCanceled)
	case abortWhy != nil:
		d.m.migrations.WithLabelValues("no_progress").Inc()
		return executor.Result{}, executor.Fatal(abortWhy)
	}
	d.m.migrations.WithLabelValues("failed").Inc()
	return executor.Result{}, executor.Fatal(fmt.Errorf("%w: %s", ErrMigrationFailed, why))
}

var errNoAddress = errors.New("qemu: the incoming VM did not say where it listens")
