package zfs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/transfer"
)

// The target side of a per-instance migration: the executor of the
// phase's target runs Receive for every phase (executor.MigrationPhaseOf),
// and it serves the source's streams until the phase ends. Unlike an
// opcode's receiver it never rolls back when stopped: a paused or
// re-dispatched sync keeps the last snapshot received, and only the
// source's abort drops the copy.

// Stream kinds only migrations use, besides hello, recv, checksum, commit
// and abort (target.go).
const (
	kindReserve  = "reserve"  // begin: room for Meta need bytes
	kindRuntime  = "runtime"  // Meta do: stop or start the instance here
	kindSendBack = "sendback" // rollback: send from Meta base to Meta addr
	kindDrop     = "drop"     // Meta what: dataset (after a rollback) or snapshots (finalize)
	kindWorkload = "workload" // after the switch's commit: the downtime the workload saw here
)

// receiveMigration serves one phase's streams until ctx ends.
func (d *Driver) receiveMigration(ctx context.Context, op executor.Op, listening func(string), report func(executor.Progress)) error {
	op.Index = 0 // one key for the whole migration, as executor.MigrationPhase.Op
	l, err := transfer.Listen(cmp.Or(op.ListenAddr, d.cfg.ListenAddr), op.Key(), "")
	if err != nil {
		return executor.Transient(err)
	}
	defer l.Close()
	ds := d.Dataset(op.Instance)
	mu := d.lockDataset(ds)
	mu.Lock()
	defer mu.Unlock()
	listening(l.Addr())
	d.log.Info("serving a migration phase", "migration", op.Request, "dataset", ds, "addr", l.Addr())
	var received int64
	for {
		s, err := l.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: target side of migration %s stopped: %v", executor.ErrCanceled, op.Request, context.Cause(ctx))
			}
			return executor.Transient(err)
		}
		d.serveMigration(ctx, s, op, ds, &received, report)
	}
}

func (d *Driver) serveMigration(ctx context.Context, s *transfer.Stream, op executor.Op, ds string, received *int64, report func(executor.Progress)) {
	reply := func(meta map[string]string, err error) {
		r := transfer.Reply{OK: err == nil, Meta: meta}
		if err != nil {
			r.Error = err.Error()
			if executor.IsTransient(err) {
				delete(r.Meta, "fatal")
			}
		}
		_ = s.Reply(r)
	}
	switch s.Kind {
	case kindHello, kindRecv, kindChecksum:
		_, _ = d.serve(ctx, s, op, ds, received, report)
	case kindReserve:
		need, _ := strconv.ParseInt(s.Meta["need"], 10, 64)
		reply(d.reserve(ctx, op, ds, need))
	case kindCommit:
		// The instance runs here once the commit is in; tidying up comes
		// after the reply, out of the switch's downtime.
		tidy, err := d.commitTarget(ctx, op, ds, s.Meta)
		reply(nil, err)
		if err == nil {
			if err := tidy(); err != nil {
				d.log.Warn("tidying up after the commit failed", "dataset", ds, "err", err)
			}
			clearVouched(ctx, ds, propMigrating, propPrior)
		}
	case kindAbort:
		// Before the commit nothing runs here but an incoming VM of a
		// live hand-over, or an instance a switch started early: either
		// holds the copy open, and goes first.
		if err := d.stopIncoming(ctx, op.Instance); err != nil {
			reply(nil, err)
			return
		}
		if err := d.cfg.Runtime.Stop(ctx, d.instance(ctx, op.Instance)); err != nil {
			reply(nil, err)
			return
		}
		reply(nil, d.rollbackTarget(ctx, ds, op.Key()))
	case kindRuntime:
		if s.Meta["do"] == "incoming" {
			reply(d.incomingHere(ctx, op.Instance)) // migrate_live.go
			return
		}
		reply(nil, d.runtimeDo(ctx, op, s.Meta["do"]))
	case kindSendBack:
		reply(d.sendBack(ctx, op, ds, s.Meta))
	case kindWorkload:
		reply(d.workloadDowntime(ctx, op))
	case kindDrop:
		reply(nil, d.drop(ctx, op, ds, s.Meta["what"]))
	default:
		reply(nil, fmt.Errorf("unknown stream kind %q", s.Kind))
	}
}

// workloadDowntime answers the source's question after a switch: the
// downtime the instance's workload saw, read from its own timeline here
// (WorkloadClocked), in whole microseconds as Meta "us". A runtime that
// keeps no timeline answers "none" with why: the move stands without
// the figure.
func (d *Driver) workloadDowntime(ctx context.Context, op executor.Op) (map[string]string, error) {
	wc, ok := d.cfg.Runtime.(WorkloadClocked)
	if !ok {
		return map[string]string{"none": "the runtime keeps no workload timeline"}, nil
	}
	gap, err := wc.WorkloadDowntime(ctx, d.instance(ctx, op.Instance))
	if err != nil {
		return map[string]string{"none": err.Error()}, nil
	}
	return map[string]string{"us": strconv.FormatInt(gap.Microseconds(), 10)}, nil
}

// refuse is a reply the source must not retry.
func refuse(format string, a ...any) (map[string]string, error) {
	return map[string]string{"fatal": "true"}, fmt.Errorf(format, a...)
}

// reserve checks that the dataset can be received here: the parent
// exists, no other dataset of that name is in the way, and the parent
// has room for need bytes and a tenth more, its quota raised if that is
// what stands in the way (RFD 34, Snapshot quotas).
func (d *Driver) reserve(ctx context.Context, op executor.Op, ds string, need int64) (map[string]string, error) {
	parent := d.cfg.Parent
	if ok, err := exists(ctx, parent); err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return refuse("parent dataset %s is missing on %s", parent, d.cfg.Node)
	}
	if had, err := exists(ctx, ds); err != nil {
		return nil, err
	} else if had {
		c, _ := prop(ctx, ds, propCommitted)
		if st := d.loadState(ctx, ds, op.Key()); !st.known && c != op.Key() {
			return refuse("%s already exists on %s and is not migration %s's", ds, d.cfg.Node, op.Request)
		}
	}
	want := need + need/10 + 16<<20
	avail, err := propInt(ctx, parent, "available")
	if err != nil {
		return nil, err
	}
	if avail < want {
		quota, err := propInt(ctx, parent, "quota")
		if err != nil {
			return nil, err
		}
		if quota > 0 {
			used, err := propInt(ctx, parent, "used")
			if err != nil {
				return nil, err
			}
			raised := max(used+want+64<<20, quota)
			if err := setProp(ctx, parent, "quota", strconv.FormatInt(raised, 10)); err != nil {
				return nil, err
			}
			d.log.Info("raised the quota for a migration", "dataset", parent, "from", quota, "to", raised, "migration", op.Request)
			if avail, err = propInt(ctx, parent, "available"); err != nil {
				return nil, err
			}
		}
	}
	if avail < want {
		return refuse("%s has %d bytes available on %s, %s needs %d", parent, avail, d.cfg.Node, op.Instance, want)
	}
	return map[string]string{"available": strconv.FormatInt(avail, 10)}, nil
}

func (d *Driver) runtimeDo(ctx context.Context, op executor.Op, do string) error {
	in := d.instance(ctx, op.Instance)
	switch do {
	case "stop":
		return d.cfg.Runtime.Stop(ctx, in)
	case "start":
		return d.cfg.Runtime.Start(ctx, in)
	case "undo-start":
		return d.undoStart(ctx, op, in)
	}
	return fmt.Errorf("runtime: unknown action %q", do)
}

// undoStart stops an instance a switch started here before its commit
// and rolls the copy back to its newest snapshot, the final one the
// source sent: what it wrote here is dropped, as the source restarts
// over its own copy (or the next attempt re-sends from that snapshot,
// whose checksum reads the dataset as it is).
func (d *Driver) undoStart(ctx context.Context, op executor.Op, in Instance) error {
	ds := d.Dataset(op.Instance)
	if c, _ := prop(ctx, ds, propCommitted); c == op.Key() {
		return fmt.Errorf("the switch of %s has committed: %s runs on %s", op.Request, op.Instance, d.cfg.Node)
	}
	if err := d.cfg.Runtime.Stop(ctx, in); err != nil {
		return err
	}
	ns, err := snapNumbers(ctx, ds)
	if err != nil || len(ns) == 0 {
		return err
	}
	return rollback(ctx, ds+"@"+snapName(ns[len(ns)-1]))
}

// sendBack snapshots the dataset (its instance stopped) and sends what
// changed since base to the source's listener at Meta addr.
func (d *Driver) sendBack(ctx context.Context, op executor.Op, ds string, meta map[string]string) (map[string]string, error) {
	base, _ := strconv.Atoi(meta["base"])
	ns, err := snapNumbers(ctx, ds)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(ns, base) {
		return refuse("%s has no %s to send back from", ds, snapName(base))
	}
	next := ns[len(ns)-1] + 1
	if err := snapshot(ctx, ds+"@"+snapName(next)); err != nil {
		return nil, err
	}
	var args []string
	if d.feat.Replicate {
		args = append(args, "-R")
	}
	args = append(args, "-I", ds+"@"+snapName(base), ds+"@"+snapName(next))
	snd, err := transfer.Dial(ctx, meta["addr"], transfer.Header{Key: op.Key() + "/back", Kind: kindRecv}, nil)
	if err != nil {
		return nil, err
	}
	if err := send(ctx, snd, !d.feat.SendStopsCleanly, args...); err != nil {
		snd.Close()
		return nil, err
	}
	r, err := snd.Finish()
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		return nil, err
	}
	return map[string]string{"bytes": strconv.FormatInt(snd.Meter().Stats().Bytes, 10), "snap": strconv.Itoa(next)}, nil
}

// drop ends the target's part: after a rollback the whole copy goes (the
// instance runs on the source again); at finalize only the migration
// snapshots and marks.
func (d *Driver) drop(ctx context.Context, op executor.Op, ds, what string) error {
	switch what {
	case "dataset":
		if run, err := d.cfg.Runtime.Running(ctx, d.instance(ctx, op.Instance)); err != nil || run {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s runs on %s; its copy stays", op.Instance, d.cfg.Node)
		}
		return destroy(ctx, ds)
	case "snapshots":
		ns, err := snapNumbers(ctx, ds)
		if err != nil {
			return err
		}
		for _, n := range ns {
			if err := destroy(ctx, ds+"@"+snapName(n)); err != nil {
				return err
			}
		}
		clearProps(ctx, ds, propMigrating, propMigration) // the vouchers first (setVouched)
		clearProps(ctx, ds, propPrior, propCreated, propBase)
		return nil
	}
	return fmt.Errorf("drop: unknown %q", what)
}
