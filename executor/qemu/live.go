package qemu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Per-instance live migration (RFD 34 phases) of a running VM: one QEMU
// migration spread over the phases, with pause-before-switchover so that
// QEMU never hands the guest over by itself.
//
//   - begin: the target starts the incoming VM and announces it; the
//     source notes its address. Source "migration source", target
//     "migration destination".
//   - sync N: the first issues `migrate`; each sync lasts at least one
//     pre-copy pass (a dirty-sync of QEMU's bitmap) at the rate cap and
//     sends what that pass found dirty, with RAM sent, remaining, dirty
//     rate, rate and ETA as progress. Its size is what the coordinator's
//     re-sync rule reads. Between phases, and after a pause (a cancelled
//     sync), the send holds at a trickle (see holdRate) until the next
//     sync or the switch.
//   - switch: the downtime limit goes to Config.DowntimeLimit, so QEMU
//     stops the guest once the rest fits in it; QEMU then waits in
//     pre-switchover, where a storage hand-over (SwitchHook) runs, and
//     migrate-continue sends the device state. A pre-copy that has not
//     converged within the completion timeout (per GiB of RAM, counted
//     from the switch) goes post-copy if allowed — from then on the guest
//     runs on the target and the move cannot be aborted — else it is
//     cancelled and the source runs on.
//   - abort (before the switch): migrate_cancel, the source runs on (cont
//     if it was stopped), the target's incoming VM is destroyed.
//   - rollback and finalize: as StopStart (a rollback boots the VM on the
//     source again; nothing of the source is kept by a live move).
//
// The hold is QEMU's completion rule turned round: it completes once
// what is left fits in the downtime limit at the rate it measured. With
// a 1 ms limit, a guest that dirties less in a pass than a millisecond
// of the sync's rate (a megabyte at 1 GB/s: a halted guest, or an idle
// one on a fast link) reaches the switch point during a sync: QEMU stops
// it in pre-switchover, and it is down until the switch. The sync says
// so (PhaseResult.AtSwitchPoint), and the coordinator switches at once
// rather than leave it down until an operator's word. Seen on this
// machine: the tests' guest under the race detector, every time.

// SwitchHook runs on the source while the guest is stopped at the switch
// (QEMU's pre-switchover), before its device state goes: a storage driver
// sends its final delta there. An error cancels the migration and the
// source runs on.
type SwitchHook func(ctx context.Context) error

// The hold between and during syncs: QEMU completes a pre-copy once
// what is left fits in its downtime limit at the measured rate, so the
// syncs run with a limit of holdDowntimeMS, and between phases (after a
// sync, or a pause) the send is throttled to holdRate: the guest then
// always dirties more than goes. (A limit of 0 does not hold: QEMU 7.2
// then skips the dirty-bitmap sync and completes as soon as the pass
// it sends is done.)
const (
	holdDowntimeMS = 1
	holdRate       = 4096 // bytes per second
)

// liveNote is what the source keeps of a live migration between phases
// (in Dir), so that a restarted executor runs a phase again safely.
type liveNote struct {
	Migration string
	Addr      string
	Started   bool // `migrate` was issued
	Switched  bool
}

func (d *Driver) livePath(instance string) string {
	return filepath.Join(d.cfg.Dir, fileName(instance)+".live")
}

func (d *Driver) readNote(mp executor.MigrationPhase) (liveNote, bool) {
	b, err := os.ReadFile(d.livePath(mp.Instance))
	f := strings.Fields(string(b))
	if err != nil || len(f) < 2 || f[0] != mp.Migration {
		return liveNote{}, false
	}
	n := liveNote{Migration: f[0], Addr: f[1]}
	for _, w := range f[2:] {
		n.Started = n.Started || w == "started"
		n.Switched = n.Switched || w == "switched"
	}
	return n, true
}

func (d *Driver) writeNote(instance string, n liveNote) error {
	s := n.Migration + " " + n.Addr
	if n.Started {
		s += " started"
	}
	if n.Switched {
		s += " switched"
	}
	return os.WriteFile(d.livePath(instance), []byte(s+"\n"), 0o644)
}

// goesLive says whether a phase moves a running VM live: one running on
// shared storage (a VM on ZFS storage moves through the zfs driver).
func goesLive(run events.RunState, phase string) bool {
	switch phase {
	case events.PhaseBegin, events.PhaseSync, events.PhaseSwitch, "abort":
		return run == events.RunRunning
	}
	return false
}

// LivePhase runs one phase of a per-instance live migration on the
// source; hook, if not nil, runs in the switch's pre-switchover pause.
func (d *Driver) LivePhase(ctx context.Context, mp executor.MigrationPhase, hook SwitchHook, report func(executor.Progress)) (executor.PhaseResult, error) {
	report = phaseReport(mp.Phase, report)
	switch mp.Phase {
	case events.PhaseBegin:
		return d.liveBegin(ctx, mp, report)
	case events.PhaseSync:
		return d.liveSync(ctx, mp, report)
	case events.PhaseSwitch:
		return d.liveSwitch(ctx, mp, hook, report)
	case "abort":
		return d.liveAbort(mp, report)
	}
	return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: live phase %q", ErrUnsupported, mp.Phase))
}

func phaseReport(phase string, report func(executor.Progress)) func(executor.Progress) {
	return func(p executor.Progress) { p.Phase = phase; report(p) }
}

func status(mp executor.MigrationPhase, node string, s events.NodeMoveStatus) {
	if mp.Status != nil {
		mp.Status(node, s)
	}
}

func (d *Driver) liveBegin(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	if _, err := d.lookup(ctx, mp.Instance); err != nil {
		return executor.PhaseResult{}, executor.Fatal(err)
	}
	if n, ok := d.readNote(mp); ok {
		return executor.PhaseResult{Message: fmt.Sprintf("begin: the incoming VM on %s listens on %s", mp.Target, n.Addr)}, nil
	}
	report(executor.Progress{Total: 1, Message: "waiting for the incoming VM on " + mp.Target})
	addr, err := d.awaitReceiver(ctx, executor.Op{AwaitReceiver: mp.AwaitReceiver})
	if err != nil {
		return executor.PhaseResult{}, err
	}
	if err := d.writeNote(mp.Instance, liveNote{Migration: mp.Migration, Addr: addr}); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	status(mp, mp.Source, events.StatusMigrationSource)
	status(mp, mp.Target, events.StatusMigrationDestination)
	msg := fmt.Sprintf("begin: the incoming VM of %s on %s listens on %s; the memory pre-copy starts with the first sync", mp.Instance, mp.Target, addr)
	report(executor.Progress{Current: 1, Total: 1, Message: msg})
	return executor.PhaseResult{Message: msg}, nil
}

// liveOp is the Op the bulk path's helpers work with, for a phase.
func liveOp(mp executor.MigrationPhase) executor.Op {
	return executor.Op{Request: mp.Migration, Index: mp.Seq, Kind: events.OpInstanceMigrate, Mode: events.ModeMigrateLive,
		Instance: mp.Instance, Size: mp.Size, Storage: mp.Storage, RunState: mp.RunState,
		From: mp.Source, To: mp.Target, Primary: mp.Source, SendBytesPerSecond: rateOf(mp), Status: mp.Status}
}

func rateOf(mp executor.MigrationPhase) int64 {
	if mp.CurrentRate != nil {
		return mp.CurrentRate()
	}
	return mp.SendBytesPerSecond
}

// sourceVM finds the VM and the note of a begun migration.
func (d *Driver) sourceVM(ctx context.Context, mp executor.MigrationPhase) (*vm, liveNote, error) {
	n, ok := d.readNote(mp)
	if !ok {
		return nil, n, executor.Fatal(fmt.Errorf("%w: %s phase of %s before its begin", ErrUnsupported, mp.Phase, mp.Migration))
	}
	v, err := d.lookup(ctx, mp.Instance)
	if err != nil {
		return nil, n, executor.Fatal(err)
	}
	return v, n, nil
}

// startPreCopy issues `migrate` with the hold (downtime limit 0) and
// pause-before-switchover, once per migration.
func (d *Driver) startPreCopy(mp executor.MigrationPhase, v *vm, n *liveNote) error {
	op := liveOp(mp)
	if _, _, err := d.setMigrationParameters(op, v); err != nil {
		return executor.Transient(err)
	}
	caps := []capability{{"pause-before-switchover", true}}
	if err := d.exec(v, "migrate-set-capabilities", map[string]any{"capabilities": caps}, nil); err != nil {
		return executor.Transient(err)
	}
	if err := d.exec(v, "migrate-set-parameters", map[string]any{"downtime-limit": holdDowntimeMS}, nil); err != nil {
		return executor.Transient(err)
	}
	if err := d.exec(v, "migrate", map[string]any{"uri": "tcp:" + n.Addr}, nil); err != nil {
		return executor.Transient(err)
	}
	n.Started = true
	if err := d.writeNote(mp.Instance, *n); err != nil {
		d.log.Warn("live migration note not written", "instance", mp.Instance, "err", err)
	}
	return nil
}

func (d *Driver) setRate(v *vm, rate int64) error {
	if rate <= 0 {
		rate = d.cfg.MaxBandwidth
	}
	// Post-copy keeps the cap too (KubeVirt's bandwidth is one figure);
	// QEMU's 0 there means none.
	post := rate
	if rate <= 0 {
		rate, post = unlimited, 0
	}
	return d.exec(v, "migrate-set-parameters", map[string]any{"max-bandwidth": rate, "max-postcopy-bandwidth": post}, nil)
}

func (d *Driver) liveSync(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	v, n, err := d.sourceVM(ctx, mp)
	if err != nil {
		return executor.PhaseResult{}, err
	}
	evs, unsub := v.qmp.Subscribe()
	defer unsub()
	var info migrationInfo
	if !n.Started {
		if err := d.startPreCopy(mp, v, &n); err != nil {
			return executor.PhaseResult{}, err
		}
	} else if err := d.setRate(v, rateOf(mp)); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	if err := d.exec(v, "query-migrate", nil, &info); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	var base, pass int64
	if info.RAM != nil {
		base, pass = info.RAM.Transferred, info.RAM.DirtySyncCount
	}
	// The first pass ends at the second dirty sync (the first is
	// migrate's own, before anything is sent).
	want := max(pass+1, 2)
	s := &sourceState{op: liveOp(mp), v: v, report: report, began: time.Now()}
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		switch info.Status {
		case "failed", "cancelled":
			return executor.PhaseResult{}, d.preCopyFailed(mp, v, info)
		case "pre-switchover", "device":
			return d.syncDone(mp, s, info, base, evs)
		}
		if info.RAM != nil && info.RAM.DirtySyncCount >= want {
			return d.syncDone(mp, s, info, base, evs)
		}
		if info.RAM != nil {
			s.progress(info, mp.Phase, "")
		}
		select {
		case <-tick.C:
		case <-evs:
		case <-v.exited:
		case <-ctx.Done():
			// A pause (or the abort that supersedes this sync) stops the
			// send: QEMU keeps the migration, at a trickle.
			if err := d.setRate(v, holdRate); err != nil {
				d.log.Warn("throttling the paused pre-copy failed", "err", err)
			}
			return executor.PhaseResult{}, fmt.Errorf("%w: sync %d of %s stopped; the pre-copy holds at %d B/s", executor.ErrCanceled, mp.Sync, mp.Migration, holdRate)
		}
		if !v.alive() {
			return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: the source VM exited during the pre-copy", ErrExited))
		}
		if err := d.exec(v, "query-migrate", nil, &info); err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
	}
}

// syncDone ends a sync: the send is held (holdRate) and the result says
// whether QEMU stopped the guest at the switch point, where it is down
// until the switch (the coordinator then switches at once).
func (d *Driver) syncDone(mp executor.MigrationPhase, s *sourceState, info migrationInfo, base int64, evs <-chan Event) (executor.PhaseResult, error) {
	var sent int64
	msg := fmt.Sprintf("sync %d of %s: ", mp.Sync, mp.Instance)
	if r := info.RAM; r != nil {
		sent = r.Transferred - base
		msg += fmt.Sprintf("%s sent in pre-copy pass %d, %s remaining of %s RAM, dirty rate %d pages/s",
			mib(sent), r.DirtySyncCount-1, mib(r.Remaining), mib(r.Total), r.DirtyPagesRate)
	}
	if err := d.setRate(s.v, holdRate); err != nil {
		d.log.Warn("throttling the pre-copy between phases failed", "err", err)
	}
	at := atSwitchPoint(info.Status) || d.stopsAtSwitchPoint(s.v, evs)
	if at {
		msg += "; nothing was left dirty: QEMU stopped the guest at the switch point, where it is down until the switch"
	}
	s.cur = max(s.cur, s.total)
	s.report(executor.Progress{Phase: mp.Phase, Current: s.total, Total: s.total, Message: msg})
	return executor.PhaseResult{Bytes: sent, AtSwitchPoint: at, Message: msg}, nil
}

// atSwitchPoint says QEMU has stopped the guest at the switch point (the
// pre-switchover pause, or the device state going after it).
func atSwitchPoint(status string) bool { return status == "pre-switchover" || status == "device" }

// holdSettle is how long QEMU takes to measure the hold rate after it is
// set: until then its completion threshold is the sync's rate times the
// downtime limit (1 ms at 1 GB/s is a megabyte), so a guest that dirties
// less in a pass can still be stopped at the switch point after the
// sync's end. QEMU measures its rate over windows of 100 ms.
const holdSettle = 250 * time.Millisecond

// stopsAtSwitchPoint waits out holdSettle and says whether QEMU stopped
// the guest at the switch point meanwhile (an event, STOP or a status,
// may say so before).
func (d *Driver) stopsAtSwitchPoint(v *vm, evs <-chan Event) bool {
	settled := time.After(holdSettle)
	for {
		select {
		case <-evs:
		case <-settled:
			return d.stoppedAtSwitchPoint(v)
		}
		if d.stoppedAtSwitchPoint(v) {
			return true
		}
	}
}

func (d *Driver) stoppedAtSwitchPoint(v *vm) bool {
	var info migrationInfo
	return d.exec(v, "query-migrate", nil, &info) == nil && atSwitchPoint(info.Status)
}

// preCopyFailed answers a pre-copy QEMU reports failed or cancelled: the
// source runs on (cont if stopped), the target's incoming VM is gone (it
// exits when its stream fails; its executor destroys what is left).
func (d *Driver) preCopyFailed(mp executor.MigrationPhase, v *vm, info migrationInfo) error {
	if rs, err := v.runState(context.Background()); err == nil && rs != "running" {
		if err := d.exec(v, "cont", nil, nil); err != nil {
			return executor.Fatal(fmt.Errorf("qemu: resuming the source after a failed pre-copy: %w", err))
		}
	}
	_ = os.Remove(d.livePath(mp.Instance))
	status(mp, mp.Source, events.StatusUp)
	status(mp, mp.Target, events.StatusDown)
	d.m.migrations.WithLabelValues("failed").Inc()
	return executor.Fatal(fmt.Errorf("%w: pre-copy %s (%s); %s runs on %s", ErrMigrationFailed, info.Status, info.ErrorDesc, mp.Instance, mp.Source))
}

func (d *Driver) liveSwitch(ctx context.Context, mp executor.MigrationPhase, hook SwitchHook, report func(executor.Progress)) (executor.PhaseResult, error) {
	// The pause may begin as soon as the downtime limit is raised below,
	// before QEMU answers: the guest's pause is after since.
	since := time.Now()
	if n, ok := d.readNote(mp); ok && n.Switched {
		return executor.PhaseResult{Message: fmt.Sprintf("already switched: %s runs on %s", mp.Instance, mp.Target)}, nil
	}
	v, n, err := d.sourceVM(ctx, mp)
	if err != nil {
		return executor.PhaseResult{}, err
	}
	evs, unsub := v.qmp.Subscribe()
	defer unsub()
	if !n.Started {
		if err := d.startPreCopy(mp, v, &n); err != nil {
			return executor.PhaseResult{}, err
		}
	}
	op := liveOp(mp)
	if err := d.setRate(v, op.SendBytesPerSecond); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	limit := switchLimit(d.cfg.DowntimeLimit, mp.MaxDowntime)
	if err := d.exec(v, "migrate-set-parameters", map[string]any{"downtime-limit": limit.Milliseconds()}, nil); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	r := &outgoing{d: d, op: op, v: v, wasRunning: true, hook: hook, log: d.log.With("instance", mp.Instance, "migration", mp.Migration, "to", mp.Target)}
	r.completion = d.completionTimeout(mp.Size)
	r.s = &sourceState{op: op, v: v, report: report, began: time.Now()}
	report(executor.Progress{Message: fmt.Sprintf("switch: downtime limit %s; post-copy after %s if allowed (%v)",
		limit, r.completion.Round(time.Millisecond), d.cfg.AllowPostCopy)})
	res, err := r.watch(ctx, evs)
	if err != nil {
		if !r.s.postcopy {
			_ = os.Remove(d.livePath(mp.Instance))
			status(mp, mp.Source, events.StatusUp)
		}
		status(mp, mp.Target, events.StatusDown)
		return executor.PhaseResult{}, err
	}
	n.Switched = true
	if err := d.writeNote(mp.Instance, n); err != nil {
		d.log.Warn("live migration note not written", "instance", mp.Instance, "err", err)
	}
	status(mp, mp.Source, events.StatusDown)
	status(mp, mp.Target, events.StatusUp)
	wd := d.guestDowntime(ctx, mp.Instance, since)
	if wd > 0 {
		res.Message += fmt.Sprintf(" (the guest's own clock: %s)", wd.Round(time.Millisecond))
	}
	return executor.PhaseResult{Bytes: res.Bytes, Downtime: res.Downtime, WorkloadDowntime: wd, Message: res.Message}, nil
}

// guestDowntime is the pause the instance's guest saw at the switch
// (which began after since), read from the clock stamps a writing guest
// (Guest) leaves on its disk, which shared storage lets this node read
// while the guest runs on the target; 0, with why in the log, when there
// is no figure. The guest runs on the target already: no figure costs
// the figure, not the move.
func (d *Driver) guestDowntime(ctx context.Context, instance string, since time.Time) time.Duration {
	if d.cfg.Disk == nil {
		return 0
	}
	path, err := d.cfg.Disk(instance)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, guestClockWait)
		defer cancel()
		var gap time.Duration
		if gap, err = GuestDowntime(ctx, path, since); err == nil {
			return gap
		}
	}
	d.log.Info("no guest downtime for the switch", "instance", instance, "why", err)
	return 0
}

func (d *Driver) completionTimeout(size events.Size) time.Duration {
	memMiB := size.MemoryMiB
	if memMiB <= 0 {
		memMiB = d.cfg.DefaultMemoryMiB
	}
	return time.Duration(float64(d.cfg.CompletionTimeoutPerGiB) * float64(memMiB) / 1024)
}

// liveAbort cancels the pre-copy: the source runs as before. Refused
// once the switch committed or the migration went post-copy.
func (d *Driver) liveAbort(mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	n, ok := d.readNote(mp)
	if ok && n.Switched {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: the switch of %s has committed: roll back instead", ErrUnsupported, mp.Migration))
	}
	v, err := d.lookup(context.Background(), mp.Instance)
	if err != nil {
		return executor.PhaseResult{}, executor.Fatal(err)
	}
	var info migrationInfo
	deadline := time.Now().Add(d.cfg.QMPTimeout)
	for {
		if err := d.exec(v, "query-migrate", nil, &info); err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
		if strings.HasPrefix(info.Status, "postcopy") {
			return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: abort refused: %s is in post-copy, the guest runs on %s", ErrPostCopy, mp.Migration, mp.Target))
		}
		if !ok || !n.Started || info.Status == "" || info.Status == "none" || info.Status == "failed" ||
			info.Status == "cancelled" || info.Status == "completed" || time.Now().After(deadline) {
			break
		}
		if info.Status != "cancelling" {
			d.cancelMigration(v)
		}
		time.Sleep(d.cfg.PollInterval) // polling QEMU's state with a deadline
	}
	if rs, err := v.runState(context.Background()); err == nil && rs != "running" {
		if err := d.exec(v, "cont", nil, nil); err != nil {
			return executor.PhaseResult{}, executor.Transient(fmt.Errorf("qemu: resuming the source after the abort: %w", err))
		}
	}
	_ = os.Remove(d.livePath(mp.Instance))
	status(mp, mp.Source, events.StatusUp)
	status(mp, mp.Target, events.StatusDown)
	d.m.migrations.WithLabelValues("cancelled").Inc()
	msg := fmt.Sprintf("aborted: the pre-copy of %s is cancelled (%s), it runs on %s as before; the incoming VM on %s is destroyed",
		mp.Instance, info.Status, mp.Source, mp.Target)
	report(executor.Progress{Current: 1, Total: 1, Message: msg})
	return executor.PhaseResult{Message: msg}, nil
}

// switchLimit is the downtime limit of a live switch: the configured one,
// lowered to the migration's downtime budget when it has a tighter one,
// so QEMU keeps pre-copying until its final pause fits the budget (then
// post-copy, if allowed, or the completion timeout fails the switch and
// the guest runs on at the source).
func switchLimit(configured, budget time.Duration) time.Duration {
	if budget > 0 && budget < configured {
		return max(budget, time.Millisecond)
	}
	return configured
}
