package zfs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/transfer"
)

// Per-instance migrations (RFD 34), one phase at a time, on the source
// node; the target side is migrate_target.go. Each phase is a move (the
// bulk path's source.go) over an Op named after the migration alone, so
// that the target's marks (which move created the dataset, its base) and
// the checksum-ahead sums carry from one phase to the next:
//
//   - begin checks the dataset, notes the prior run state on it
//     (drove:prior, so a restarted driver knows it) and asks the target to
//     reserve room (its parent exists, the quota raised where needed);
//   - sync N snapshots and sends: full the first time, then -I from the
//     newest snapshot both sides hold; older migration snapshots go on
//     both sides. A cancelled sync (pause, abort, re-dispatch) stops the
//     send at once and keeps what the target holds as the next base;
//   - switch verifies the last synced snapshot while the instance runs,
//     syncs once more, stops the instance, sends the final delta, compares
//     the content sums (re-reading only changed files) and commits: the
//     target starts it. Before the commit a fatal fault restarts the
//     source if it ran and drops the target copy; after it the source
//     keeps its dataset and the final snapshot, the base of a rollback;
//   - abort drops the target copy and every migration snapshot, and puts
//     the source back in its prior run state;
//   - rollback stops the instance on the target, which sends what changed
//     since the switch back (dialling a listener of this node's), and
//     starts it here; the target copy goes;
//   - finalize destroys the kept source copy and the target's snapshots.

// User properties of a source dataset under migration.
const (
	propMigrating = "drove:migrating" // the migration
	propPrior     = "drove:prior"     // running or stopped before begin
)

var _ executor.Migrator = (*Driver)(nil)

// migBook remembers the phases done in this process, so that a phase run
// again for the same seq returns its result instead of acting twice.
type migBook struct {
	mu   sync.Mutex
	done map[string]executor.PhaseResult
}

func phaseKey(mp executor.MigrationPhase) string { return mp.Migration + "#" + strconv.Itoa(mp.Seq) }

func (b *migBook) get(mp executor.MigrationPhase) (executor.PhaseResult, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.done[phaseKey(mp)]
	return r, ok
}

func (b *migBook) put(mp executor.MigrationPhase, r executor.PhaseResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = map[string]executor.PhaseResult{}
	}
	b.done[phaseKey(mp)] = r
}

// Phase runs one phase of a per-instance migration: see executor.Migrator
// and the comment at the top of this file.
func (d *Driver) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	if mp.Storage != events.StorageZFSLocal {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: per-instance migration of %s storage (a replicated instance moves with its replica, by evacuation)", ErrUnsupported, mp.Storage))
	}
	if res, ok := d.mig.get(mp); ok {
		report(executor.Progress{Phase: mp.Phase, Current: 1, Total: 1, Message: "already done: " + res.Message})
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return executor.PhaseResult{}, fmt.Errorf("%w: %s phase of %s not started: %v", executor.ErrCanceled, mp.Phase, mp.Migration, context.Cause(ctx))
	}
	op := mp.Op()
	m := &move{d: d, op: op, ds: d.Dataset(mp.Instance), report: report, phase: mp.Phase,
		lim: transfer.NewLimiter(d.rateOf(mp)),
		rep: MoveReport{Key: phaseKey(mp), Kind: events.OpInstanceMigrate, Instance: mp.Instance, Mode: d.feat.Mode()}}
	stop := m.followRate(mp)
	defer stop()
	var res executor.PhaseResult
	var err error
	switch mp.Phase {
	case events.PhaseBegin:
		res, err = m.migBegin(ctx)
	case events.PhaseSync:
		res, err = m.migSync(ctx, mp)
	case events.PhaseSwitch:
		res, err = m.migSwitch(ctx)
	case "abort":
		res, err = m.migAbort(ctx)
	case "rollback":
		res, err = m.migRollback(ctx)
	case "finalize":
		res, err = m.migFinalize(ctx)
	default:
		err = executor.Fatal(fmt.Errorf("%w: migration phase %q", ErrUnsupported, mp.Phase))
	}
	if mp.Phase == events.PhaseSync || mp.Phase == events.PhaseSwitch || mp.Phase == "rollback" {
		m.rep.Err = err
		d.record(m.rep)
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, executor.ErrCanceled) {
			err = fmt.Errorf("%w: %w", executor.ErrCanceled, err)
		}
		if !executor.IsTransient(err) && !errors.Is(err, executor.ErrCanceled) && (mp.Phase == events.PhaseSync || mp.Phase == events.PhaseSwitch) {
			reportStatuses(mp, events.StatusUp, events.StatusDown) // it runs on where it was
		}
		return executor.PhaseResult{}, err
	}
	switch mp.Phase {
	case events.PhaseBegin:
		reportStatuses(mp, events.StatusMigrationSource, events.StatusMigrationDestination)
	case events.PhaseSwitch:
		reportStatuses(mp, events.StatusDown, events.StatusUp)
	case "abort":
		reportStatuses(mp, events.StatusUp, events.StatusDown)
	}
	m.total = max(m.total, m.current, 1)
	m.current = m.total
	m.progress(res.Message, 0, 0)
	d.mig.put(mp, res)
	return res, nil
}

// reportStatuses says the oVirt statuses of a running instance's
// source and target (MigrationPhase.Status).
func reportStatuses(mp executor.MigrationPhase, src, dst events.NodeMoveStatus) {
	if mp.Status == nil || mp.RunState != events.RunRunning {
		return
	}
	mp.Status(mp.Source, src)
	mp.Status(mp.Target, dst)
}

// rateOf is the send cap now: the migration's current rate, else the
// driver's default; 0 means none.
func (d *Driver) rateOf(mp executor.MigrationPhase) int64 {
	r := mp.SendBytesPerSecond
	if mp.CurrentRate != nil {
		r = mp.CurrentRate()
	}
	return cmp.Or(r, d.cfg.SendBytesPerSecond)
}

// followRate applies the migration's current rate to the limiter while
// the phase runs: settings change it within seconds.
func (m *move) followRate(mp executor.MigrationPhase) func() {
	if mp.CurrentRate == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if r := m.d.rateOf(mp); r != m.lim.Rate() {
					m.lim.SetRate(r)
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// prior says whether the instance ran before the migration began: as
// begin noted it on the dataset, else as the inventory says.
func (m *move) prior(ctx context.Context) bool {
	if v, err := prop(ctx, m.ds, propPrior); err == nil && (v == "running" || v == "stopped") {
		return v == "running"
	}
	return m.op.RunState == events.RunRunning
}

// ask is request for the migration's own stream kinds: a refusal the
// target marks fatal is fatal here too.
func (m *move) ask(ctx context.Context, kind string, meta map[string]string) (map[string]string, error) {
	r, err := m.request(ctx, kind, meta)
	if err != nil && r["fatal"] == "true" {
		return r, executor.Fatal(err)
	}
	return r, err
}

// clearMarks drops the bulk path's marks from the source dataset, so that
// they do not travel to the target with -R. They are an earlier move's,
// in which this node was the target, and vouch for nothing of this one:
// they go at once, in no order.
func (m *move) clearMarks(ctx context.Context) {
	marks := []string{propMigration, propCreated, propBase, propCommitted}
	// Each inherit waits for a transaction group. One read says which
	// are set (after a move's first sync, none); unread, all are cleared.
	if set, err := localProps(ctx, m.ds, marks...); err == nil {
		marks = set
	}
	clearProps(ctx, m.ds, marks...)
}

func (m *move) migBegin(ctx context.Context) (executor.PhaseResult, error) {
	op := m.op
	m.total = 1
	m.progress(fmt.Sprintf("reserving room for %s on %s; zfs mode: %s", op.Instance, op.To, m.d.feat.Mode()), 0, 0)
	ok, err := exists(ctx, m.ds)
	if err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	if !ok {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: %s", ErrNotFound, m.ds))
	}
	prior := "stopped"
	if v, _ := prop(ctx, m.ds, propMigrating); v == op.Request {
		prior, _ = prop(ctx, m.ds, propPrior) // begun before a crash
	} else {
		run, err := m.d.cfg.Runtime.Running(ctx, m.d.instance(ctx, op.Instance))
		if err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
		if run {
			prior = "running"
		}
	}
	need, err := propInt(ctx, m.ds, "used")
	if err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	r, err := m.ask(ctx, kindReserve, map[string]string{"need": strconv.FormatInt(need, 10)})
	if err != nil {
		return executor.PhaseResult{}, err
	}
	if err := setVouched(ctx, m.ds, map[string]string{propPrior: prior}, propMigrating, op.Request); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	m.current = 1
	return executor.PhaseResult{Message: fmt.Sprintf("begin: %s reserved on %s (%d bytes needed, %s available); prior run state %s",
		op.Instance, op.To, need, r["available"], prior)}, nil
}

func (m *move) migSync(ctx context.Context, mp executor.MigrationPhase) (executor.PhaseResult, error) {
	next, err := m.sendAsking(ctx, false, m.clearMarks)
	if err != nil {
		return executor.PhaseResult{}, err
	}
	return executor.PhaseResult{Bytes: m.sent, Message: fmt.Sprintf("sync %d of %s: %s sent to %s (%d bytes)",
		mp.Sync, m.op.Instance, snapName(next), m.op.To, m.sent)}, nil
}

func (m *move) migSwitch(ctx context.Context) (executor.PhaseResult, error) {
	op := m.op
	defer m.d.forgetSums(op)
	hello, err := m.request(ctx, kindHello, nil)
	if err != nil {
		return executor.PhaseResult{}, err
	}
	if hello["committed"] == op.Key() {
		return executor.PhaseResult{Message: fmt.Sprintf("already switched: %s runs on %s", op.Instance, op.To)}, nil
	}
	if hello["running"] == "true" { // started early by an attempt cut short
		if err := m.undoStart(ctx); err != nil {
			return executor.PhaseResult{}, err
		}
	}
	if ok, err := exists(ctx, m.ds); err != nil || !ok {
		if err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: %s", ErrNotFound, m.ds))
	}
	m.clearMarks(ctx)
	prior := m.prior(ctx)
	local, err := snapNumbers(ctx, m.ds)
	if err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	base := commonNewest(local, hello["snaps"])
	if base == 0 { // no sync yet: a full send while the instance runs
		if base, err = m.sendWith(ctx, false, hello, nil); err != nil {
			return executor.PhaseResult{}, m.switchFailed(ctx, err, false, prior)
		}
	}
	if prior {
		if err := m.verifyAheadOf(ctx, base); err != nil {
			return executor.PhaseResult{}, m.switchFailed(ctx, err, false, prior)
		}
	}
	if lr, ok := m.d.cfg.Runtime.(LiveRuntime); ok && prior {
		return m.switchLive(ctx, lr, base) // migrate_live.go
	}
	snaps, err := m.listSnapshots(ctx) // out of the downtime
	if err != nil {
		return executor.PhaseResult{}, m.switchFailed(ctx, err, false, prior)
	}
	var down time.Time
	if prior {
		m.progress("stopping "+op.Instance+" on "+op.From+" for the final delta", 0, 0)
		down = time.Now()
		if err := m.d.cfg.Runtime.Stop(ctx, m.d.instance(ctx, op.Instance)); err != nil {
			return executor.PhaseResult{}, m.switchFailed(ctx, executor.Transient(err), true, prior)
		}
		m.rep.StopTime = time.Since(down)
	}
	// The target holds the last snapshot sent: no need to ask it again.
	last := base
	if n := len(m.rep.Syncs); n > 0 {
		last = m.rep.Syncs[n-1].Snapshot
	}
	final, err := m.sendWith(ctx, true, map[string]string{"snaps": strconv.Itoa(last)}, snaps)
	if err != nil {
		return executor.PhaseResult{}, m.switchFailed(ctx, err, prior, prior)
	}
	sendTime := m.rep.Syncs[len(m.rep.Syncs)-1].Duration
	if prior {
		began := time.Now()
		if err := m.startEarly(ctx); err != nil {
			return executor.PhaseResult{}, m.earlyStartFailed(ctx, err, prior)
		}
		m.rep.StartTime = time.Since(began)
		m.rep.Downtime = time.Since(down)
	}
	began := time.Now()
	sum, err := m.verify(ctx, final, m.verified)
	m.rep.ChecksumTime = time.Since(began)
	if err != nil {
		return executor.PhaseResult{}, m.earlyStartFailed(ctx, err, prior)
	}
	began = time.Now()
	if err := m.commit(ctx, final, prior); err != nil {
		return executor.PhaseResult{}, m.earlyStartFailed(ctx, err, prior)
	}
	commitTime := time.Since(began)
	if prior {
		m.rep.WorkloadDowntime = m.askWorkloadDowntime(ctx)
	}
	// Past the point of no return. The source keeps its copy and the
	// final snapshot, the base of a rollback, until finalize.
	bg := context.WithoutCancel(ctx)
	if err := m.dropSnapshots(bg, final); err != nil {
		m.d.log.Warn("dropping the older migration snapshots failed", "dataset", m.ds, "err", err)
	}
	return executor.PhaseResult{Bytes: m.sent, Downtime: m.rep.Downtime, WorkloadDowntime: m.rep.WorkloadDowntime,
		Overhead: m.overhead(), Message: m.switchedText(prior, sendTime, commitTime, sum)}, nil
}

// overhead is the part of the switch's downtime a later move's
// prediction does not add from its own final delta (planner/downtime):
// all of it but the final delta's bytes at the link's rate. So the final
// send's own setup (its snapshot, the stream's handshake: about 50 ms on
// zfs-fuse, which a small delta's send is mostly made of) is overhead,
// as the stop and the start are, and a hand-over's checksum; taken as
// the final send's whole time it was left out of every prediction. The
// downtime is the workload's when it saw more: the figure a tenant's
// budget is about. 0 for a stopped instance.
func (m *move) overhead() time.Duration {
	down := max(m.rep.Downtime, m.rep.WorkloadDowntime)
	if down == 0 {
		return 0
	}
	return max(down-m.linkTime(m.rep.FinalDelta), 0)
}

// linkTime is how long n bytes take at the fastest rate a send of this
// phase reached (the switch's catch-up sends, the final one), counting
// only sends of at least minRated: a smaller one is mostly its setup,
// and its rate says nothing of the link. With none, 0: a final delta
// that small moves within its send's setup.
func (m *move) linkTime(n int64) time.Duration {
	var rate float64
	for _, s := range m.rep.Syncs {
		if s.Bytes >= minRated && s.Duration > 0 {
			rate = max(rate, float64(s.Bytes)/s.Duration.Seconds())
		}
	}
	if rate == 0 {
		return 0
	}
	return time.Duration(float64(n) / rate * float64(time.Second))
}

// minRated is the smallest send whose rate stands for the link's.
const minRated = 8 << 20

// switchedText is a switch's result message: its sends, its downtime
// and what that was made of, then what ran after the start.
func (m *move) switchedText(prior bool, sendTime, commitTime time.Duration, sum string) string {
	r, op := m.rep, m.op
	down := "stopped before the switch, not started"
	if prior {
		down = fmt.Sprintf("downtime %s%s (stop %s, final send %s, start on %s %s)", r.Downtime.Round(time.Millisecond),
			r.workloadText(), r.StopTime.Round(time.Millisecond), sendTime.Round(time.Millisecond), op.To,
			r.StartTime.Round(time.Millisecond))
	}
	return fmt.Sprintf("switched %s to %s: %d sends in the switch, %d bytes, final delta %d bytes, %s; then checksum %s reading %d bytes in %s and commit in %s; checksum %s ahead of the switch",
		op.Instance, op.To, len(r.Syncs), m.sent, r.FinalDelta, down, sum, r.ChecksumRead,
		r.ChecksumTime.Round(time.Millisecond), commitTime.Round(time.Millisecond), r.AheadTime.Round(time.Millisecond))
}

// startEarly starts the instance on the target as soon as the final delta
// is in, before the checksums and the commit: they no longer count in
// the downtime (issue 30). The source keeps its stopped copy intact
// until the commit, so a mismatch found after still puts the instance
// back where it was, one writer at a time (earlyStartFailed).
func (m *move) startEarly(ctx context.Context) error {
	m.progress("starting "+m.op.Instance+" on "+m.op.To+"; verifying while it runs, "+m.op.From+"'s copy kept until then", 0, 0)
	_, err := m.ask(ctx, kindRuntime, map[string]string{"do": "start"})
	return err
}

// earlyStartFailed is switchFailed once the target may run the
// instance uncommitted: it is stopped there, and its writes undone,
// before the source restarts. If the target cannot be made to stop, the
// source stays stopped and intact and the fault transient: the next
// attempt (or an abort) stops the target first (undoStart).
func (m *move) earlyStartFailed(ctx context.Context, err error, prior bool) error {
	if prior {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		if uerr := m.undoStart(actx); uerr != nil {
			return executor.Transient(fmt.Errorf("%w; %s stays stopped on %s: stopping it on %s failed: %w", err, m.op.Instance, m.op.From, m.op.To, uerr))
		}
	}
	return m.switchFailed(ctx, err, prior, prior)
}

// undoStart stops an instance started early on the target and rolls its
// copy back to the final snapshot, what the source holds.
func (m *move) undoStart(ctx context.Context) error {
	_, err := m.request(ctx, kindRuntime, map[string]string{"do": "undo-start"})
	return err
}

// askWorkloadDowntime asks the target, after the commit, for the downtime
// the workload saw (its timeline, read there); 0 when there is no figure,
// with why in the log. The instance already runs on the target: a failed
// question costs the figure, never the move.
func (m *move) askWorkloadDowntime(ctx context.Context) time.Duration {
	r, err := m.request(ctx, kindWorkload, nil)
	if err != nil {
		m.d.log.Warn("asking the target for the workload's downtime failed", "instance", m.op.Instance, "target", m.op.To, "err", err)
		return 0
	}
	us, err := strconv.ParseInt(r["us"], 10, 64)
	if err != nil {
		m.d.log.Info("no workload downtime for the switch", "instance", m.op.Instance, "why", r["none"])
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// commit asks the target to commit and start the instance. A lost reply
// is settled by asking again: restarting the source of a switch the
// target committed would run the instance twice.
func (m *move) commit(ctx context.Context, final int, start bool) error {
	_, err := m.request(ctx, kindCommit, map[string]string{"keep": strconv.Itoa(final), "start": strconv.FormatBool(start)})
	if err == nil || errors.Is(err, executor.ErrFatal) {
		return err
	}
	hello, herr := m.request(ctx, kindHello, nil)
	if herr == nil && hello["committed"] == m.op.Key() {
		return nil
	}
	return err
}

// switchFailed puts the source back after a failed switch: the instance
// restarts if the switch stopped it. A fatal fault also drops the target
// copy and the migration snapshots; a transient one (retried) or a cancel
// keeps them, the base of the next attempt or of an abort.
func (m *move) switchFailed(ctx context.Context, err error, stopped, prior bool) error {
	bg := context.WithoutCancel(ctx)
	if stopped && prior {
		if serr := m.d.cfg.Runtime.Start(bg, m.d.instance(bg, m.op.Instance)); serr != nil {
			err = errors.Join(err, fmt.Errorf("restarting the source: %w", serr))
		}
	}
	if ctx.Err() != nil || executor.IsTransient(err) {
		return err
	}
	actx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	if _, aerr := m.request(actx, kindAbort, map[string]string{"why": err.Error()}); aerr != nil {
		m.d.log.Warn("could not drop the target copy after a failed switch", "err", aerr)
	}
	if derr := m.dropSnapshots(bg, 0); derr != nil {
		m.d.log.Warn("dropping the migration snapshots failed", "dataset", m.ds, "err", derr)
	}
	if !errors.Is(err, executor.ErrFatal) {
		err = executor.Fatal(err)
	}
	return err
}

// dropSnapshots destroys the dataset's migration snapshots but keep.
func (m *move) dropSnapshots(ctx context.Context, keep int) error {
	ns, err := snapNumbers(ctx, m.ds)
	if err != nil {
		return err
	}
	for _, n := range ns {
		if n != keep {
			if err := m.dropSnapshot(ctx, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropSnapshot destroys the move's snapshot n. One zfs-fuse keeps busy is
// left, named in the log, for a later cleanup: the move no longer needs
// it, and the snapshot of a send cut by a crash stays busy for minutes,
// so the sync run again after the crash, and an abort after it, failed
// on it.
// Once found busy past busyWait, it is tried once, not waited on again,
// for stuckFor: it stays busy for minutes, and each wait was a sync's or
// an abort's 30 s.
func (m *move) dropSnapshot(ctx context.Context, n int) error {
	name := m.ds + "@" + snapName(n)
	wait := busyWait
	if at, ok := m.d.stuck.Load(name); ok && time.Since(at.(time.Time)) < stuckFor {
		wait = 0
	}
	err := destroyWithin(ctx, name, wait)
	if errors.Is(err, ErrBusy) {
		m.d.stuck.Store(name, time.Now())
		m.d.log.Warn("a snapshot of the move stays busy; left for a later cleanup", "snapshot", name, "err", err)
		return nil
	}
	m.d.stuck.Delete(name)
	return err
}

// stuckFor is how long a snapshot found busy past busyWait is taken to
// stay so.
const stuckFor = 5 * time.Minute

// restorePrior puts the source back in its prior run state and drops the
// migration's marks from it.
func (m *move) restorePrior(ctx context.Context, prior bool) error {
	in := m.d.instance(ctx, m.op.Instance)
	run, err := m.d.cfg.Runtime.Running(ctx, in)
	if err != nil {
		return err
	}
	if prior && !run {
		if err := m.d.cfg.Runtime.Start(ctx, in); err != nil {
			return err
		}
	}
	m.clearMarks(ctx)
	clearVouched(ctx, m.ds, propMigrating, propPrior)
	return nil
}
