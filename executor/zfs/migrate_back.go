package zfs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/transfer"
)

// The phases of a migration that undo or end it: abort, rollback,
// finalize; and the estimate.

func (m *move) migAbort(ctx context.Context) (executor.PhaseResult, error) {
	op := m.op
	m.total = 1
	prior := m.prior(ctx)
	m.progress(fmt.Sprintf("aborting: dropping the copy on %s; %s back to its prior state on %s", op.To, op.Instance, op.From), 0, 0)
	hello, err := m.request(ctx, kindHello, nil)
	if err != nil {
		return executor.PhaseResult{}, err
	}
	if hello["committed"] == op.Key() {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: the switch of %s has committed: roll back instead", ErrUnsupported, op.Request))
	}
	if _, err := m.ask(ctx, kindAbort, map[string]string{"why": "migration " + op.Request + " aborted"}); err != nil {
		return executor.PhaseResult{}, err
	}
	// The target copy is gone: from here the abort finishes, whatever ctx.
	bg := context.WithoutCancel(ctx)
	if err := m.dropSnapshots(bg, 0); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	if err := m.restorePrior(bg, prior); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	state := "stopped"
	if prior {
		state = "running"
	}
	return executor.PhaseResult{Message: fmt.Sprintf("aborted: %s %s on %s; no copy on %s and no migration snapshot left",
		op.Instance, state, op.From, op.To)}, nil
}

func (m *move) migRollback(ctx context.Context) (executor.PhaseResult, error) {
	op := m.op
	m.total = 1
	prior := m.prior(ctx)
	hello, err := m.request(ctx, kindHello, nil)
	if err != nil {
		return executor.PhaseResult{}, err
	}
	bg := context.WithoutCancel(ctx)
	if hello["exists"] != "true" {
		// Rolled back before a crash hid the end: the target copy is gone.
		if err := m.restorePrior(bg, prior); err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
		return executor.PhaseResult{Message: fmt.Sprintf("already rolled back: %s is on %s", op.Instance, op.From)}, nil
	}
	local, err := snapNumbers(ctx, m.ds)
	if err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	base := commonNewest(local, hello["snaps"])
	if base == 0 {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: no migration snapshot common to %s and %s to roll back from", ErrNotFound, op.From, op.To))
	}
	m.progress(fmt.Sprintf("rolling back: stopping %s on %s, sending what changed since %s back to %s", op.Instance, op.To, snapName(base), op.From), 0, 0)
	down := time.Now()
	if _, err := m.ask(ctx, kindRuntime, map[string]string{"do": "stop"}); err != nil {
		return executor.PhaseResult{}, err
	}
	n, err := m.receiveBack(ctx, base)
	if err != nil {
		if prior { // it goes on running on the target
			if _, serr := m.ask(bg, kindRuntime, map[string]string{"do": "start"}); serr != nil {
				err = fmt.Errorf("%w; and restarting it on %s: %v", err, op.To, serr)
			}
		}
		return executor.PhaseResult{}, err
	}
	m.sent = n
	// The instance starts here on what came back, not on what a cache of
	// the mounted dataset kept from before the switch (remount).
	if err := remount(bg, m.ds); err != nil {
		return executor.PhaseResult{}, executor.Transient(fmt.Errorf("remounting %s after receiving it back: %w", m.ds, err))
	}
	if err := m.restorePrior(bg, prior); err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	var downtime time.Duration
	if prior {
		downtime = time.Since(down)
	}
	m.rep.Downtime = downtime
	m.rep.Syncs = append(m.rep.Syncs, SyncReport{Snapshot: base + 1, Incremental: true, Final: true, Bytes: n})
	if _, err := m.ask(bg, kindDrop, map[string]string{"what": "dataset"}); err != nil {
		m.d.log.Warn("dropping the target copy after the rollback failed; it stays", "node", op.To, "err", err)
	}
	if err := m.dropSnapshots(bg, 0); err != nil {
		m.d.log.Warn("dropping the migration snapshots after the rollback failed", "dataset", m.ds, "err", err)
	}
	return executor.PhaseResult{Bytes: n, Downtime: downtime,
		Message: fmt.Sprintf("rolled back %s to %s: %d bytes written on %s sent back, downtime %s",
			op.Instance, op.From, n, op.To, downtime.Round(time.Millisecond))}, nil
}

// receiveBack listens here for the target's send of what changed since
// base, asks the target to send it, and receives it into the dataset.
// The listener is this driver's ListenAddr: every other stream of a
// migration goes from the source to the target's receiver.
func (m *move) receiveBack(ctx context.Context, base int) (int64, error) {
	l, err := transfer.Listen(m.d.cfg.ListenAddr, m.op.Key()+"/back", "")
	if err != nil {
		return 0, executor.Transient(err)
	}
	defer l.Close()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	received := beside(func() (int64, error) {
		s, err := l.Accept(actx)
		if err != nil {
			return 0, err
		}
		err = recv(actx, s, "-F", m.ds)
		r := transfer.Reply{OK: err == nil}
		if err != nil {
			r.Error = err.Error()
		}
		_ = s.Reply(r)
		return s.Meter().Stats().Bytes, err
	})
	if _, err := m.ask(ctx, kindSendBack, map[string]string{"addr": l.Addr(), "base": strconv.Itoa(base)}); err != nil {
		cancel()
		_, _ = received()
		return 0, err
	}
	n, err := received()
	if err != nil {
		return n, classify(ctx, err)
	}
	m.current, m.total = n, max(m.total, n)
	m.progress(fmt.Sprintf("received %d bytes back from %s", n, m.op.To), 0, 0)
	return n, nil
}

func (m *move) migFinalize(ctx context.Context) (executor.PhaseResult, error) {
	op := m.op
	m.total = 1
	m.progress(fmt.Sprintf("finalizing: dropping the source copy of %s on %s", op.Instance, op.From), 0, 0)
	ok, err := exists(ctx, m.ds)
	if err != nil {
		return executor.PhaseResult{}, executor.Transient(err)
	}
	if ok {
		if run, err := m.d.cfg.Runtime.Running(ctx, m.d.instance(ctx, op.Instance)); err != nil || run {
			if err != nil {
				return executor.PhaseResult{}, executor.Transient(err)
			}
			return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: %s runs on %s; its copy stays", ErrUnsupported, op.Instance, op.From))
		}
		// Only a copy the target committed may go: else it is the
		// instance's only one.
		hello, err := m.request(ctx, kindHello, nil)
		if err != nil {
			return executor.PhaseResult{}, err
		}
		if hello["committed"] != op.Key() {
			return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%w: %s has not committed migration %s; the source copy stays", ErrUnsupported, op.To, op.Request))
		}
		if err := destroy(ctx, m.ds); err != nil {
			return executor.PhaseResult{}, executor.Transient(err)
		}
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if _, err := m.ask(actx, kindDrop, map[string]string{"what": "snapshots"}); err != nil {
		m.d.log.Warn("dropping the target's migration snapshots failed; they stay", "node", op.To, "err", err)
	}
	return executor.PhaseResult{Message: fmt.Sprintf("finalized: the source copy of %s on %s and its snapshots are gone", op.Instance, op.From)}, nil
}

// assumedRate is the rate an estimate assumes when no cap is set.
const assumedRate = 100 << 20

// Estimate works a migration's cost out from the dataset: a full send of
// what it references, then at most the re-sync rule's final delta, sent
// and checksummed while the instance is down.
func (d *Driver) Estimate(ctx context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	ds := d.Dataset(mp.Instance)
	ref, err := propInt(ctx, ds, "referenced")
	if err != nil {
		return executor.Estimate{}, err
	}
	used, err := propInt(ctx, ds, "used")
	if err != nil {
		return executor.Estimate{}, err
	}
	rate, how := d.rateOf(mp), "capped"
	if rate == 0 {
		rate, how = assumedRate, "assumed, no cap set"
	}
	final := min(d.cfg.Resync.MaxBytes, ref)
	bytes := ref + final
	down := 0.0
	if mp.RunState == "" || mp.RunState == "running" {
		down = 2 * float64(final) / float64(rate) // the final delta, then its checksum
	}
	return executor.Estimate{
		TotalSeconds: float64(bytes)/float64(rate) + down, DowntimeSeconds: down, Bytes: bytes,
		How: fmt.Sprintf("%s references %d bytes (%d used with snapshots): a full send, then incrementals until one is under %d bytes, at %d bytes/s (%s)",
			ds, ref, used, d.cfg.Resync.MaxBytes, rate, how),
	}, nil
}
