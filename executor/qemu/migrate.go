package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
		// A move done before two polls (a small guest on a quiet machine
		// takes some 50 ms) still says its rate: the average since start.
		if p.BytesPerSecond == 0 && !s.began.IsZero() && r.Transferred > 0 {
			p.BytesPerSecond = int64(float64(r.Transferred) / max(now.Sub(s.began).Seconds(), 1e-3))
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
	r := &outgoing{d: d, op: op, v: v, log: d.log.With("instance", op.Instance, "opcode", op.Key(), "to", op.To)}
	report(executor.Progress{Phase: events.PhaseBegin, Message: "waiting for the incoming VM on " + op.To})
	addr, err := d.awaitReceiver(ctx, op)
	if err != nil {
		return executor.Result{}, err
	}
	if rs, err := v.runState(ctx); err == nil {
		r.wasRunning = rs == "running"
	}
	rate, capText, err := d.setMigrationParameters(op, v)
	if err != nil {
		return executor.Result{}, executor.Transient(err)
	}
	if op.Mode == events.ModeMigrateNonLive && r.wasRunning {
		// Non-live: the guest stops first and its whole memory is copied
		// while it is stopped; the target resumes it (Receive).
		if err := d.exec(v, "stop", nil, nil); err != nil {
			return executor.Result{}, executor.Transient(err)
		}
		r.stoppedAt = time.Now()
	}
	evs, unsub := v.qmp.Subscribe()
	defer unsub()
	if err := d.exec(v, "migrate", map[string]any{"uri": "tcp:" + addr}, nil); err != nil {
		if !r.stoppedAt.IsZero() {
			d.exec(v, "cont", nil, nil)
		}
		return executor.Result{}, executor.Transient(err)
	}
	r.s = &sourceState{op: op, v: v, report: report, began: time.Now()}
	memMiB := op.Size.MemoryMiB
	if memMiB <= 0 {
		memMiB = d.cfg.DefaultMemoryMiB
	}
	r.completion = time.Duration(float64(d.cfg.CompletionTimeoutPerGiB) * float64(memMiB) / 1024)
	r.log.Info("migration started", "addr", addr, "rate", rate, "completion_timeout", r.completion)
	report(executor.Progress{Phase: events.PhaseSync, Message: fmt.Sprintf(
		"pre-copy of %d MiB of RAM to %s, %s, downtime limit %s, completion timeout %s",
		memMiB, addr, capText, d.cfg.DowntimeLimit, r.completion.Round(time.Millisecond))})
	return r.watch(ctx, evs)
}

// awaitReceiver waits for the target's incoming VM to listen.
func (d *Driver) awaitReceiver(ctx context.Context, op executor.Op) (string, error) {
	if op.AwaitReceiver == nil {
		return "", executor.Fatalf("%w: live migration needs the target's receiver (Op.AwaitReceiver)", ErrUnsupported)
	}
	addr, err := op.AwaitReceiver(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w: before the migration began: %v", executor.ErrCanceled, context.Cause(ctx))
		}
		return "", executor.Transient(fmt.Errorf("qemu: waiting for the receiver: %w", err))
	}
	return addr, nil
}

// setMigrationParameters sets the capabilities, TLS to op.To (tls.go),
// the rate cap (the opcode's, else the driver's, else none) and the
// downtime limit.
func (d *Driver) setMigrationParameters(op executor.Op, v *vm) (rate int64, capText string, err error) {
	rate = op.SendBytesPerSecond
	if rate <= 0 {
		rate = d.cfg.MaxBandwidth
	}
	capText = "no rate cap"
	if rate <= 0 {
		rate = unlimited
	} else {
		capText = fmt.Sprintf("capped at %s/s", mib(rate))
	}
	if err := d.setCapabilities(v); err != nil {
		return 0, "", err
	}
	if err := d.sourceTLS(v, op.To); err != nil {
		return 0, "", err
	}
	err = d.exec(v, "migrate-set-parameters", map[string]any{
		"max-bandwidth": rate, "downtime-limit": d.cfg.DowntimeLimit.Milliseconds()}, nil)
	return rate, capText, err
}

// outgoing is one outgoing migration, from the migrate command to its end.
type outgoing struct {
	d          *Driver
	op         executor.Op
	v          *vm
	s          *sourceState
	log        *slog.Logger
	wasRunning bool
	stoppedAt  time.Time     // a non-live migration's stop
	completion time.Duration // how long pre-copy may take
	// hook runs in QEMU's pre-switchover pause (pause-before-switchover,
	// set by the per-instance live path), before migrate-continue.
	hook      SwitchHook
	continued bool // migrate-continue sent
	// catchUp runs once the first pass is done, with the pre-copy held
	// (a 1 ms downtime limit); then the limit goes to DowntimeLimit.
	catchUp SwitchHook

	cancelled  bool  // the opcode's ctx ended
	cancelling bool  // migrate_cancel sent
	abortWhy   error // why the driver itself aborted
	lowest     int64 // the lowest remaining RAM seen, -1 before the first
	lastLow    time.Time
	qmpErrs    int
}

// watch polls the migration until it ends, enforcing the progress and
// completion timeouts and answering a cancel.
func (r *outgoing) watch(ctx context.Context, evs <-chan Event) (executor.Result, error) {
	d, v := r.d, r.v
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	done := ctx.Done()
	r.lowest, r.lastLow = -1, time.Now()
	for {
		info, err := r.poll()
		if err != nil {
			return executor.Result{}, err
		}
		switch info.Status {
		case "completed":
			info = r.finalFigures(info)
			return d.completed(r.op, r.s, info, r.s.downtime(evs, info), r.stoppedAt, r.cancelled, r.log)
		case "failed", "cancelled", "postcopy-paused":
			return d.failed(r.op, r.s, info, r.wasRunning, r.cancelled, r.abortWhy, r.log)
		case "pre-switchover":
			switch {
			case r.continued || r.cancelling:
			case ctx.Err() != nil && !r.s.postcopy:
				r.cancel(info) // not handed over yet: the cancel wins
			default:
				// QEMU reached the pause before the hold was released (the
				// guest left too little dirty): the hook's final delta
				// covers what the catch-up would have sent.
				r.catchUp = nil
				r.switchOver(ctx, info)
			}
		}
		phase := events.PhaseSync
		if r.s.postcopy || info.Status == "device" || info.Status == "pre-switchover" {
			phase = events.PhaseSwitch
		}
		r.s.progress(info, phase, "")
		if r.catchUp != nil && info.Status == "active" && info.RAM != nil && info.RAM.DirtySyncCount >= 2 && !r.cancelling {
			r.release(ctx, info)
		}
		if info.RAM != nil && !r.s.postcopy && !r.cancelling {
			r.enforceTimeouts(info)
		}
		select {
		case <-tick.C:
		case ev := <-evs:
			r.s.note(ev)
		case <-v.exited:
		case <-done:
			done = nil
			r.cancel(info)
		}
	}
}

// switchOver runs in the pre-switchover pause: the guest is stopped, its
// device state not yet sent. The hook (a storage hand-over) runs, then
// migrate-continue; a failed hook cancels the migration, so the source
// runs on with its own data.
func (r *outgoing) switchOver(ctx context.Context, info migrationInfo) {
	if r.hook != nil {
		r.s.progress(info, events.PhaseSwitch, "the guest is paused at the switch point: handing over its storage")
		if err := r.hook(context.WithoutCancel(ctx)); err != nil {
			r.abortWhy = fmt.Errorf("%w: the storage hand-over at the switch failed: %v", ErrMigrationFailed, err)
			r.log.Info("aborting the migration", "why", r.abortWhy)
			r.d.cancelMigration(r.v)
			r.cancelling = true
			return
		}
	}
	if err := r.d.exec(r.v, "migrate-continue", map[string]any{"state": "pre-switchover"}, nil); err != nil {
		r.log.Warn("migrate-continue failed", "err", err)
		return // the next poll tries again
	}
	r.continued = true
}

// release runs catchUp while the pre-copy holds, then lets it converge;
// the completion timeout counts from here. A failed catchUp cancels the
// migration.
func (r *outgoing) release(ctx context.Context, info migrationInfo) {
	catchUp := r.catchUp
	r.catchUp = nil
	r.s.progress(info, events.PhaseSwitch, "first pre-copy pass done: catching up the storage while the pre-copy holds")
	// The send trickles while catchUp runs: with the downtime limit
	// alone, a guest that dirties little memory (a starved one) reaches
	// the pause during a long catch-up, and its rest is downtime.
	err := r.d.setRate(r.v, holdRate)
	if err == nil {
		err = catchUp(ctx)
	}
	if err == nil {
		err = r.d.setRate(r.v, r.op.SendBytesPerSecond)
	}
	if err == nil {
		err = r.d.exec(r.v, "migrate-set-parameters", map[string]any{"downtime-limit": r.d.cfg.DowntimeLimit.Milliseconds()}, nil)
	}
	if err != nil {
		r.abortWhy = fmt.Errorf("%w: catching up before the switch: %v", ErrMigrationFailed, err)
		r.log.Info("aborting the migration", "why", r.abortWhy)
		r.d.cancelMigration(r.v)
		r.cancelling = true
		return
	}
	r.s.began, r.lowest, r.lastLow = time.Now(), -1, time.Now()
}

// poll reads the migration's status. A source VM gone, or QMP failing
// more than five times in a row, ends the migration fatally.
func (r *outgoing) poll() (migrationInfo, error) {
	var info migrationInfo
	if err := r.d.exec(r.v, "query-migrate", nil, &info); err != nil {
		if !r.v.alive() {
			r.d.drop(r.op.Instance, r.v)
			r.d.m.migrations.WithLabelValues("source_lost").Inc()
			return info, executor.Fatal(fmt.Errorf("%w: the source VM exited during the migration: %v", ErrExited, err))
		}
		if r.qmpErrs++; r.qmpErrs > 5 {
			r.d.cancelMigration(r.v)
			return info, executor.Fatal(err)
		}
	} else {
		r.qmpErrs = 0
	}
	if info.Status == "postcopy-active" && !r.s.postcopy {
		r.s.postcopy = true
	}
	return info, nil
}

// finalFigures waits a moment for the figures of a completed migration:
// QEMU shows "completed" before it has computed the downtime and total
// time.
func (r *outgoing) finalFigures(info migrationInfo) migrationInfo {
	for deadline := time.Now().Add(time.Second); info.TotalTime == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		var fin migrationInfo
		if r.d.exec(r.v, "query-migrate", nil, &fin) == nil && fin.Status == "completed" {
			info = fin
		}
	}
	return info
}

// enforceTimeouts aborts a pre-copy whose remaining RAM made no new low
// for the progress timeout, and one not complete after the completion
// timeout unless post-copy is allowed: then it switches to post-copy.
func (r *outgoing) enforceTimeouts(info migrationInfo) {
	d, cfg := r.d, r.d.cfg
	if r.lowest < 0 || info.RAM.Remaining < r.lowest {
		r.lowest, r.lastLow = info.RAM.Remaining, time.Now()
	}
	elapsed := time.Since(r.s.began)
	switch {
	case time.Since(r.lastLow) > cfg.ProgressTimeout:
		r.abortWhy = fmt.Errorf("%w: remaining RAM made no new low for %s (progress timeout)", ErrNoProgress, cfg.ProgressTimeout)
	case elapsed > r.completion && cfg.AllowPostCopy && info.Status == "active":
		r.startPostCopy(info, elapsed)
	case elapsed > r.completion && !cfg.AllowPostCopy:
		r.abortWhy = fmt.Errorf("%w: not complete after %s (completion timeout %s per GiB) and post-copy is not allowed",
			ErrNoProgress, r.completion.Round(time.Millisecond), cfg.CompletionTimeoutPerGiB)
	}
	if r.abortWhy != nil {
		r.log.Info("aborting the migration", "why", r.abortWhy)
		d.cancelMigration(r.v)
		r.cancelling = true
	}
}

// startPostCopy switches a pre-copy that ran past its completion timeout
// to post-copy: the guest runs on the target from now on.
func (r *outgoing) startPostCopy(info migrationInfo, elapsed time.Duration) {
	d, op := r.d, r.op
	if err := d.exec(r.v, "migrate-start-postcopy", nil, nil); err != nil {
		r.log.Warn("switch to post-copy refused", "err", err)
		r.abortWhy = fmt.Errorf("%w: not complete after %s and the switch to post-copy failed: %v", ErrNoProgress, r.completion, err)
		return
	}
	r.s.postcopy, r.s.postcopyAt = true, elapsed
	d.m.postcopy.Inc()
	if op.Status != nil {
		op.Status(op.From, events.StatusPaused)
	}
	msg := fmt.Sprintf("switched to post-copy after %s (completion timeout %s): the guest now runs on %s and the move can no longer be cancelled",
		elapsed.Round(time.Millisecond), r.completion.Round(time.Millisecond), op.To)
	r.log.Info(msg)
	r.s.progress(info, events.PhaseSwitch, msg)
}

// cancel answers the opcode's cancel: refused in post-copy (the guest runs
// on the target), else the pre-copy is cancelled and the source runs on.
func (r *outgoing) cancel(info migrationInfo) {
	r.cancelled = true
	if r.s.postcopy {
		msg := "cancel refused: the migration is in post-copy, the guest runs on " + r.op.To + "; finishing the move"
		r.log.Info(msg)
		r.s.progress(info, events.PhaseSwitch, msg)
	} else if !r.cancelling {
		r.d.cancelMigration(r.v)
		r.cancelling = true
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
	// The last report says the average rate too: a small guest can move
	// between two polls, leaving no other report with one.
	rate := int64(float64(s.cur) / max(time.Since(s.began).Seconds(), 1e-3))
	s.report(executor.Progress{Phase: events.PhaseSwitch, Current: s.total, Total: s.total, BytesPerSecond: rate, Message: msg})
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
