package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Leftovers is implemented by worlds that can list what a per-instance
// migration may leave behind: migration snapshots on any node, and copies
// of the instance on nodes other than keep. The migration part then
// checks that an abort, a rollback and a finalize leave nothing.
type Leftovers interface {
	Leftovers(ctx context.Context, instance, keep string) ([]string, error)
}

// PauseWithin is how soon a cancelled sync (a pause, or the abort that
// supersedes it) must return.
const PauseWithin = 5 * time.Second

// RunMigrations runs the migration part of the suite: the phases of an
// RFD 34 per-instance migration through executor.Migrator, for the first
// instance of FixtureFor(storage) whose storage is copied on a move
// (zfs-local) or, failing that, shared. newDriver's world must hold the
// fixture as for RunFor; a driver with a target side does what the
// target's executor would around each Phase (see the zfs driver's test).
//
// It checks every phase (begin, sync, sync, switch, finalize; rollback),
// that each phase run again for the same seq succeeds without acting
// twice, an abort after begin, during a sync, after a sync and after a
// cancelled switch, a pause (a sync cancelled mid-transfer returns
// ErrCanceled within PauseWithin, and the next sync and the switch go
// on from there), progress that never goes backwards within a phase and
// ends at its total, and an estimate from real figures.
func RunMigrations(t *testing.T, storage []events.StorageKind, newDriver func(t *testing.T) executor.Migrator) {
	in, ok := migratable(storage)
	if !ok {
		t.Fatalf("drivertest: no fixture instance of %v a per-instance migration moves", storage)
	}
	cases := []struct {
		name string
		run  func(r *migRun)
	}{
		{"switch-finalize", func(r *migRun) {
			est, err := r.d.Estimate(r.ctx, r.mp("begin"))
			if err != nil || est.Bytes < 0 || est.TotalSeconds < 0 || est.How == "" {
				r.t.Fatalf("Estimate = %+v, %v; want real figures", est, err)
			}
			r.must("begin", nil)
			first := r.must(events.PhaseSync, nil)
			if (first.Bytes > 0) != (est.Bytes > 0) {
				r.t.Fatalf("the first sync sent %d bytes, the estimate said %d: a driver that copies data estimates it, one that does not says 0", first.Bytes, est.Bytes)
			}
			r.must(events.PhaseSync, nil)
			sw := r.must(events.PhaseSwitch, nil)
			if r.in.RunState == events.RunRunning && sw.Downtime <= 0 {
				r.t.Fatalf("switch of a running instance without downtime: %+v", sw)
			}
			r.primaryAt(r.target)
			r.must("finalize", nil)
			r.settledAt(r.target)
		}},
		{"rollback", func(r *migRun) {
			r.must("begin", nil)
			r.must(events.PhaseSync, nil)
			r.must(events.PhaseSwitch, nil)
			r.primaryAt(r.target)
			r.must("rollback", nil)
			r.settledAt(r.in.Primary)
		}},
		{"abort/after-begin", func(r *migRun) {
			r.must("begin", nil)
			r.must("abort", nil)
			r.settledAt(r.in.Primary)
		}},
		{"abort/after-sync", func(r *migRun) {
			r.must("begin", nil)
			r.must(events.PhaseSync, nil)
			r.must(events.PhaseSync, nil)
			r.must("abort", nil)
			r.settledAt(r.in.Primary)
		}},
		{"abort/during-sync", func(r *migRun) {
			r.must("begin", nil)
			r.cut(events.PhaseSync)
			r.must("abort", nil)
			r.settledAt(r.in.Primary)
		}},
		{"abort/after-cancelled-switch", func(r *migRun) {
			r.must("begin", nil)
			r.must(events.PhaseSync, nil)
			r.cut(events.PhaseSwitch)
			r.primaryAt(r.in.Primary)
			r.must("abort", nil)
			r.settledAt(r.in.Primary)
		}},
		{"pause-then-switch", func(r *migRun) {
			r.must("begin", nil)
			r.cut(events.PhaseSync) // a cut transfer
			r.primaryAt(r.in.Primary)
			r.must(events.PhaseSync, nil)
			r.must(events.PhaseSwitch, nil)
			r.primaryAt(r.target)
		}},
	}
	for _, c := range cases {
		t.Run("migration/"+c.name, func(t *testing.T) {
			r := &migRun{t: t, d: newDriver(t), in: in, target: Node3, id: "mig-" + c.name, ctx: runCtx(t)}
			c.run(r)
		})
	}
}

// migratable is the instance the migration part moves.
func migratable(storage []events.StorageKind) (Instance, bool) {
	ins := FixtureFor(storage)
	for _, want := range []events.StorageKind{events.StorageZFSLocal, events.StorageRBD} {
		if i := slices.IndexFunc(ins, func(in Instance) bool { return in.Storage == want }); i >= 0 {
			return ins[i], true
		}
	}
	return Instance{}, false
}

// migRun is one migration of the suite: its phases in seq order.
type migRun struct {
	t      *testing.T
	d      executor.Migrator
	in     Instance
	target string
	id     string
	ctx    context.Context
	seq    int
	syncs  int
	rate   atomic.Int64
}

// mp is the next phase as the executor would dispatch it.
func (r *migRun) mp(phase string) executor.MigrationPhase {
	mp := executor.MigrationPhase{Migration: r.id, Seq: r.seq, Phase: phase,
		Instance: r.in.Name, Size: r.in.Size, Storage: r.in.Storage, RunState: r.in.RunState,
		Source: r.in.Primary, Target: r.target, CurrentRate: r.rate.Load}
	if phase == events.PhaseSync {
		mp.Sync = r.syncs + 1
	}
	return mp
}

// must runs the next phase, which must succeed with progress that ends
// at its total, then runs it again (a crash before its end was written)
// and wants success again.
func (r *migRun) must(phase string, hook func(executor.Progress)) executor.PhaseResult {
	r.t.Helper()
	r.seq++
	mp := r.mp(phase)
	if phase == events.PhaseSync {
		r.syncs++
	}
	rec := recorder{hook: hook}
	res, err := r.d.Phase(r.ctx, mp, rec.report)
	if err != nil {
		r.t.Fatalf("%s (seq %d): %v", phase, mp.Seq, err)
	}
	checkProgress(r.t, rec.all(), true)
	var again recorder
	if _, err := r.d.Phase(r.ctx, mp, again.report); err != nil {
		r.t.Fatalf("%s (seq %d) run again: %v", phase, mp.Seq, err)
	}
	if ps := again.all(); len(ps) > 0 { // saying nothing is fine: nothing happened
		checkProgress(r.t, ps, true)
	}
	return res
}

// cut runs the next phase and cancels it once it reports data flowing
// (or, for a phase without data yet, its first report), as a superseding
// dispatch does: it must end with ErrCanceled, not transient, within
// PauseWithin of the cancel.
func (r *migRun) cut(phase string) {
	r.t.Helper()
	r.seq++
	mp := r.mp(phase)
	if phase == events.PhaseSync {
		r.rate.Store(256 << 10) // slow enough to land in the middle
		defer r.rate.Store(0)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	var at atomic.Int64
	rec := recorder{hook: func(p executor.Progress) {
		if (p.Current > 0 || phase != events.PhaseSync) && at.Load() == 0 {
			at.Store(time.Now().UnixNano())
			cancel()
		}
	}}
	_, err := r.d.Phase(ctx, mp, rec.report)
	if ps := rec.all(); err == nil && phase == events.PhaseSync && len(ps) > 0 && ps[len(ps)-1].Total <= 1 {
		r.syncs++
		r.t.Logf("sync %d had nothing to send, so nothing to cut", mp.Sync)
		return
	}
	took := time.Duration(0)
	if t := at.Load(); t > 0 {
		took = time.Since(time.Unix(0, t))
	}
	if !errors.Is(err, executor.ErrCanceled) || executor.IsTransient(err) {
		r.t.Fatalf("%s cancelled (seq %d) = %v, want ErrCanceled (cancelled: %v)", phase, mp.Seq, err, at.Load() > 0)
	}
	if took > PauseWithin {
		r.t.Fatalf("%s took %s to stop after the cancel, want at most %s", phase, took, PauseWithin)
	}
	checkProgress(r.t, rec.all(), false)
}

func (r *migRun) locate() (string, string, bool) {
	l, ok := r.d.(Locator)
	if !ok {
		return "", "", false
	}
	p, s, err := l.Locate(r.ctx, r.in.Name)
	if err != nil {
		r.t.Fatalf("Locate(%s): %v", r.in.Name, err)
	}
	return p, s, true
}

// primaryAt checks where the instance runs (the source copy may remain).
func (r *migRun) primaryAt(node string) {
	r.t.Helper()
	if p, _, ok := r.locate(); ok && p != node {
		r.t.Fatalf("%s is on %s, want %s", r.in.Name, p, node)
	}
}

// settledAt checks the end of a migration: the instance on node alone,
// and nothing of the migration left anywhere.
func (r *migRun) settledAt(node string) {
	r.t.Helper()
	if p, s, ok := r.locate(); ok && (p != node || s != "") {
		r.t.Fatalf("%s is on %s with copies on %q, want on %s alone", r.in.Name, p, s, node)
	}
	if l, ok := r.d.(Leftovers); ok {
		left, err := l.Leftovers(r.ctx, r.in.Name, node)
		if err != nil {
			r.t.Fatalf("Leftovers: %v", err)
		}
		if len(left) > 0 {
			r.t.Fatalf("the migration left %s", fmt.Sprint(left))
		}
	}
}
