package migration

import (
	"fmt"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// A phase that reports no progress for the progress timeout is dispatched
// again (the driver resumes from its last good point), StallRetries
// times; then the migration fails: a begin or a sync is aborted, so the
// source returns to its prior state; a later phase leaves it to an
// operator, since it may have changed both nodes.
func TestStalledPhases(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		walk  func(d *driver)
		phase string
		last  want
	}{
		{"begin", func(d *driver) { d.act(events.ActionBegin) }, events.PhaseBegin,
			want{state: events.MigrationFailed, phase: "abort", dispatched: []string{"abort"}, running: true,
				err: "phase begin stalled: no progress for 2m30s, 3 times in a row", message: "failed; aborting"}},
		{"sync", syncing, events.PhaseSync,
			want{state: events.MigrationFailed, phase: "abort", dispatched: []string{"abort"}, running: true,
				err: "phase sync stalled", message: "failed; aborting to return the source to its prior state"}},
		{"switch", func(d *driver) { synced(d); d.act(events.ActionSwitch) }, events.PhaseSwitch,
			want{state: events.MigrationFailed, phase: events.PhaseSwitch, running: true, err: "phase switch stalled",
				detail: "operator action needed: the switch phase of vm did not finish; check n1 and n2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			c.walk(d)
			sync := d.running().Sync
			if evs := d.decide(); len(evs) != 0 {
				t.Fatalf("within the timeout a pass decided %v", phases(evs))
			}
			d.w.env.Now = d.w.env.Now.Add(150 * time.Second)
			for retry := 1; retry <= d.w.env.StallRetries; retry++ {
				evs := d.decide()
				d.check(evs, want{state: d.rec().State, phase: c.phase, dispatched: []string{c.phase}, running: true,
					message: fmt.Sprintf("stalled: no progress in phase %s for 2m30s; dispatched again (retry %d of 2)", c.phase, retry)})
				if p := dispatches(evs)[0]; p.Sync != sync {
					t.Fatalf("retry %d dispatched sync pass %d, want %d (the same)", retry, p.Sync, sync)
				}
			}
			d.check(d.decide(), c.last)
		})
	}
}

// Progress resets the stall clock: a phase that keeps reporting is never
// dispatched again, however long it runs.
func TestProgressKeepsAPhaseAlive(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	syncing(d)
	seq := d.running().Seq
	start := d.w.env.Now
	clock := start
	d.w.st.now = func() time.Time { return clock }
	for k := 1; k <= 5; k++ {
		clock = start.Add(time.Duration(k) * 100 * time.Second)
		d.w.read(events.Progress{Request: "m1", Job: 0, Index: seq, Instance: "vm", Node: "n1", Phase: events.PhaseSync,
			State: events.ProgressRunning, Current: int64(k), Total: 10})
		d.w.env.Now = clock.Add(149 * time.Second)
		if evs := d.decide(); len(evs) != 0 {
			t.Fatalf("after progress at %s a pass decided %v", clock.Sub(start), phases(evs))
		}
	}
}

// After a switch the source copy is kept for the finalize grace period,
// then dropped by a finalize the coordinator dispatches itself; a grace
// of zero never finalizes by itself.
func TestFinalizeAfterTheGracePeriod(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	switched(d)
	at := d.w.st.byID["m1"].phases[d.switchSeq(t)].endEnv.Time
	d.w.env.Now = at.Add(3599 * time.Second)
	if evs := d.decide(); len(evs) != 0 {
		t.Fatalf("within the grace period a pass decided %v", phases(evs))
	}
	d.w.env.Now = at.Add(time.Hour)
	d.check(d.decide(), want{state: events.MigrationSuccessful, phase: "finalize", dispatched: []string{"finalize"},
		switched: true, running: true, message: "finalizing after the grace period of 3600s: dropping the source copy on n1"})
	if evs := d.decide(); len(evs) != 0 {
		t.Fatalf("finalize dispatched twice: %v", phases(evs))
	}

	never := newDriver(t)
	s := events.DefaultSettings()
	s.FinalizeGraceSeconds = 0
	never.w.read(s)
	switched(never)
	never.w.env.Now = never.w.env.Now.Add(1000 * time.Hour)
	if evs := never.decide(); len(evs) != 0 {
		t.Fatalf("with no grace period a pass decided %v", phases(evs))
	}
}

// switchSeq is the seq of the migration's switch phase.
func (d *driver) switchSeq(t *testing.T) int {
	t.Helper()
	for seq, ph := range d.w.st.byID[d.id].phases {
		if ph.d != nil && ph.d.Phase == events.PhaseSwitch {
			return seq
		}
	}
	t.Fatal("no switch dispatched")
	return -1
}

// A lost node ends an unswitched migration at the next pass (RFD 34,
// "Fatal errors"): a lost source fails it for an operator, a lost target
// aborts it on the source; a switch under way is waited for.
func TestLostNodes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		walk func(d *driver)
		node string
		want *want // nil: nothing decided
	}{
		{"source lost during a sync", syncing, "n1", &want{state: events.MigrationFailed, running: true,
			phase: events.PhaseCancel, dispatched: []string{events.PhaseCancel},
			err:     "source node n1 is offline: source node lost during the migration",
			message: "failed: source node n1 lost; its sync phase there is canceled",
			detail:  "operator action needed: bring n1 back or recover vm from it"}},
		{"source lost while paused: nothing owed there", synced, "n1", &want{state: events.MigrationFailed,
			err: "source node n1 is offline: source node lost during the migration", message: "failed: source node n1 lost"}},
		{"target lost while paused", synced, "n2", &want{state: events.MigrationFailed, phase: "abort",
			dispatched: []string{"abort"}, running: true, err: "target node n2 lost",
			message: "target node n2 lost: aborting, returning vm to its prior state (running) on n1"}},
		{"target lost during the switch: its end is awaited", func(d *driver) { synced(d); d.act(events.ActionSwitch) }, "n2", nil},
		{"target lost while queued", func(d *driver) {
			s := events.DefaultSettings()
			s.MaxRunningMigrationsPerNode = 1
			d.w.read(s)
			(&driver{t: d.t, w: d.w, id: "m0"}).command(events.MigrationActionRequested{Migration: "m0", Instance: "vm2",
				Action: events.ActionBegin, Target: "n2", Account: "acct", Role: events.RoleOperator})
			d.act(events.ActionBegin)
		}, "n2", &want{state: events.MigrationFailed, err: "target node n2 lost", message: "failed before it began: target node n2 lost"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			c.walk(d)
			d.w.offline(c.node)
			evs := d.decide()
			if c.want == nil {
				if len(evs) != 0 {
					t.Fatalf("decided %v, want nothing until the switch ends", phases(evs))
				}
				return
			}
			d.check(evs, *c.want)
			if evs := d.decide(); len(evs) != 0 {
				t.Fatalf("answered the loss twice: %v", phases(evs))
			}
		})
	}
}

// The cancel a lost source is sent supersedes the sync owed there, keeps
// the migration's target, and its end (canceled: the executor runs
// nothing) leaves the migration failed with no phase running.
func TestLostSourceCancelsTheOwedPhase(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	syncing(d)
	sync := d.running()
	d.w.offline("n1")
	d.decide()
	c := d.running()
	if c.Phase != events.PhaseCancel || c.Node != "n1" || c.Seq != sync.Seq+1 || c.Target != sync.Target || c.Source != "n1" {
		t.Fatalf("dispatched %+v after the sync %+v", c, sync)
	}
	if _, err := events.New(c).DecodePayload(); err != nil {
		t.Fatalf("the cancel does not decode: %v", err)
	}
	d.check(d.end(events.JobCanceled, 0), want{state: events.MigrationFailed,
		message: "the phase owed on n1, a lost node, ended canceled", err: "source node n1 is offline"})
	if evs := d.decide(); len(evs) != 0 {
		t.Fatalf("decided again after the cancel ended: %v", phases(evs))
	}
}

// The abort that follows a failure keeps the migration failed: its end
// says the instance is back, and a failure of that abort too asks for an
// operator.
func TestAbortAfterAFailure(t *testing.T) {
	t.Parallel()
	stalled := func(d *driver) {
		syncing(d)
		d.w.env.Now = d.w.env.Now.Add(150 * time.Second)
		for range d.w.env.StallRetries + 1 {
			d.decide()
		}
		if r := d.rec(); r.State != events.MigrationFailed || d.running().Phase != "abort" {
			t.Fatalf("after the stalls: %s, running %s; want failed, aborting", r.State, d.running().Phase)
		}
	}
	back := newDriver(t)
	stalled(back)
	back.check(back.end(events.JobSuccess, 0), want{state: events.MigrationFailed, err: "phase sync stalled",
		message: "vm is back on n1, running, after the failure"})

	stuck := newDriver(t)
	stalled(stuck)
	stuck.check(stuck.fail("zfs rollback failed"), want{state: events.MigrationFailed, err: "abort failed: zfs rollback failed",
		detail: "operator action needed: vm may not be back in its prior state (running) on n1"})
}
