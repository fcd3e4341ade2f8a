package migration

import (
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// Every RFD 34 phase transition an on-demand migration takes: what the
// end of each phase (or the command that follows it) leaves in the record
// and dispatches next.
func TestOnDemandTransitions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		walk func(d *driver) []events.Envelope // the last step's decisions
		want want
	}{
		{"begin asked: the begin phase runs on the source", func(d *driver) []events.Envelope {
			return d.act(events.ActionBegin)
		}, want{state: events.MigrationRunning, phase: events.PhaseBegin, dispatched: []string{events.PhaseBegin},
			message: "begin: reserving vm on n2", running: true}},
		{"begin ended: paused until a sync is asked for", func(d *driver) []events.Envelope {
			d.act(events.ActionBegin)
			return d.end(events.JobSuccess, 0)
		}, want{state: events.MigrationPaused, phase: events.PhaseBegin, message: "begin done: vm reserved on n2; run sync next"}},
		{"sync asked: sync 1 runs", func(d *driver) []events.Envelope {
			begun(d)
			return d.act(events.ActionSync)
		}, want{state: events.MigrationRunning, phase: events.PhaseSync, dispatched: []string{events.PhaseSync},
			message: "sync 1 asked for", running: true}},
		{"sync ended: paused, the bytes counted", func(d *driver) []events.Envelope {
			syncing(d)
			return d.end(events.JobSuccess, 1000)
		}, want{state: events.MigrationPaused, phase: events.PhaseSync, message: "sync 1 done: 1000 bytes sent; run sync again or switch"}},
		{"a second sync is sync 2", func(d *driver) []events.Envelope {
			synced(d)
			return d.act(events.ActionSync)
		}, want{state: events.MigrationRunning, phase: events.PhaseSync, dispatched: []string{events.PhaseSync},
			message: "sync 2 asked for", running: true}},
		{"switch asked after a sync", func(d *driver) []events.Envelope {
			synced(d)
			return d.act(events.ActionSwitch)
		}, want{state: events.MigrationRunning, phase: events.PhaseSwitch, dispatched: []string{events.PhaseSwitch},
			message: "switch asked for after 1 syncs", running: true}},
		{"switch ended: successful, switched, the source copy kept", func(d *driver) []events.Envelope {
			synced(d)
			d.act(events.ActionSwitch)
			return d.end(events.JobSuccess, 10)
		}, want{state: events.MigrationSuccessful, phase: events.PhaseSwitch, switched: true, down: []int64{40, 55},
			message: "switched: vm runs on n2 after 40 ms down (55 ms by the workload's own timeline); the source copy on n1 is kept until finalize"}},
		{"finalize asked: the source copy is dropped", func(d *driver) []events.Envelope {
			switched(d)
			return d.act(events.ActionFinalize)
		}, want{state: events.MigrationSuccessful, phase: "finalize", dispatched: []string{"finalize"}, switched: true,
			message: "finalize asked for: dropping the source copy on n1", running: true}},
		{"finalize ended: finalized", func(d *driver) []events.Envelope {
			switched(d)
			d.act(events.ActionFinalize)
			return d.end(events.JobSuccess, 0)
		}, want{state: events.MigrationSuccessful, switched: true, finalized: true, down: []int64{40, 55},
			message: "finalized: the source copy on n1 is gone"}},
		{"rollback asked after the switch", func(d *driver) []events.Envelope {
			switched(d)
			return d.act(events.ActionRollback)
		}, want{state: events.MigrationRunning, phase: "rollback", dispatched: []string{"rollback"}, switched: true,
			message: "rolling back to n1: sending the changes since the switch", running: true}},
		{"rollback ended: aborted, back on the source", func(d *driver) []events.Envelope {
			switched(d)
			d.act(events.ActionRollback)
			return d.end(events.JobSuccess, 0)
		}, want{state: events.MigrationAborted, message: "rolled back: vm runs on n1 again; the copy on n2 is dropped"}},
		{"abort asked while paused between syncs", func(d *driver) []events.Envelope {
			synced(d)
			return d.act(events.ActionAbort)
		}, want{state: events.MigrationRunning, phase: "abort", dispatched: []string{"abort"},
			message: "aborting: returning vm to its prior state (running) on n1", running: true}},
		{"abort ended: aborted, the instance back as it was", func(d *driver) []events.Envelope {
			synced(d)
			d.act(events.ActionAbort)
			return d.end(events.JobSuccess, 0)
		}, want{state: events.MigrationAborted, message: "aborted: vm is back on n1, running"}},
		{"abort during a sync supersedes it", func(d *driver) []events.Envelope {
			syncing(d)
			return d.act(events.ActionAbort)
		}, want{state: events.MigrationRunning, phase: "abort", dispatched: []string{"abort"}, running: true,
			message: "aborting"}},
		{"pause during a sync: paused at once, the pause still running", func(d *driver) []events.Envelope {
			syncing(d)
			return d.act(events.ActionPause)
		}, want{state: events.MigrationPaused, phase: events.PhaseSync, dispatched: []string{events.PhasePause},
			message: "pausing: stopping sync 1", running: true}},
		{"a sync after a pause resumes: sync 1 again", func(d *driver) []events.Envelope {
			syncing(d)
			d.act(events.ActionPause)
			d.w.read(events.MigrationPhaseEnded{Migration: "m1", Instance: "vm", Node: "n1", Seq: 1, Phase: events.PhaseSync,
				Status: events.JobCanceled})
			d.end(events.JobSuccess, 0) // the pause
			return d.act(events.ActionSync)
		}, want{state: events.MigrationRunning, phase: events.PhaseSync, dispatched: []string{events.PhaseSync},
			message: "sync 1 asked for", running: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			d.check(c.walk(d), c.want)
		})
	}
}

// A phase that ends in error: the executor retried what was transient,
// so the coordinator fails the migration, the instance left where the
// driver put it back, and says what failed.
func TestPhaseFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		walk func(d *driver)
		want want
	}{
		{"begin", func(d *driver) { d.act(events.ActionBegin) },
			want{state: events.MigrationFailed, err: "begin phase failed: disk full", message: "failed; vm stays on n1, running"}},
		{"sync", syncing,
			want{state: events.MigrationFailed, err: "sync phase failed: disk full", message: "failed; vm stays on n1, running"}},
		{"switch", func(d *driver) { synced(d); d.act(events.ActionSwitch) },
			want{state: events.MigrationFailed, err: "switch phase failed: disk full"}},
		{"abort: an operator must look", func(d *driver) { synced(d); d.act(events.ActionAbort) },
			want{state: events.MigrationFailed, err: "abort failed: disk full",
				detail: "operator action needed: vm may not be back in its prior state (running) on n1"}},
		{"rollback: still on the target, still switched", func(d *driver) { switched(d); d.act(events.ActionRollback) },
			want{state: events.MigrationSuccessful, switched: true, err: "rollback failed: disk full",
				message: "rollback failed; vm still runs on n2"}},
		{"finalize: finalize again to retry", func(d *driver) { switched(d); d.act(events.ActionFinalize) },
			want{state: events.MigrationSuccessful, switched: true, err: "finalize failed: disk full",
				message: "finalize failed; finalize again to retry"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			c.walk(d)
			d.check(d.fail("disk full"), c.want)
		})
	}
}

// An automatic migration takes every step itself: begin, the first (full)
// sync, syncs again while the re-sync rule says so, then the switch.
func TestAutomaticRunsToTheSwitch(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	d.check(d.act(events.ActionAutomatic), want{state: events.MigrationRunning, phase: events.PhaseBegin,
		dispatched: []string{events.PhaseBegin}, running: true, message: "begin"})
	if r := d.rec(); !r.Automatic {
		t.Fatalf("automatic asked, record %+v", r)
	}
	d.check(d.end(events.JobSuccess, 0), want{state: events.MigrationRunning, phase: events.PhaseSync,
		dispatched: []string{events.PhaseSync}, running: true, message: "first sync: full send"})
	if s := d.running(); s.Sync != 1 {
		t.Fatalf("first sync dispatched as sync %d", s.Sync)
	}
	// 1 GiB is over ResyncMaxBytes (50 MiB by default): sync again.
	d.check(d.end(events.JobSuccess, 1<<30), want{state: events.MigrationRunning, phase: events.PhaseSync,
		dispatched: []string{events.PhaseSync}, running: true, message: "syncing again"})
	if s := d.running(); s.Sync != 2 {
		t.Fatalf("second sync dispatched as sync %d", s.Sync)
	}
	d.check(d.end(events.JobSuccess, 1<<20), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "switching: the last sync sent 1048576 bytes"})
	if r := d.rec(); r.Syncs != 2 || r.LastSyncBytes != 1<<20 {
		t.Fatalf("record counts %d syncs, last %d bytes; want 2, 1 MiB", r.Syncs, r.LastSyncBytes)
	}
	evs := d.end(events.JobSuccess, 0)
	d.check(evs, want{state: events.MigrationSuccessful, phase: events.PhaseSwitch, switched: true, message: "switched"})
	pl := placements(evs)
	if len(pl) != 1 || pl[0].PrimaryNode != "n2" || pl[0].PreviousPrimary != "n1" || pl[0].Group != "g1" || pl[0].Request != "m1" {
		t.Fatalf("placements %+v, want vm placed on n2 from n1 by m1", pl)
	}
}

// An on-demand migration turned automatic goes on from where it is, by
// the re-sync rule: a large last sync syncs again, a small one switches.
func TestAutomaticTakesOverFromWhereItIs(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	begun(d)
	d.act(events.ActionSync)
	d.end(events.JobSuccess, 1<<30)
	d.check(d.act(events.ActionAutomatic), want{state: events.MigrationRunning, phase: events.PhaseSync,
		dispatched: []string{events.PhaseSync}, running: true, message: "syncing again"})
	if r := d.rec(); !r.Automatic || d.running().Sync != 2 {
		t.Fatalf("record %+v, sync %d; want automatic, sync 2", r, d.running().Sync)
	}
	small := newDriver(t)
	synced(small) // 1000 bytes
	small.check(small.act(events.ActionAutomatic), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "switching: the last sync sent 1000 bytes"})
}

// The re-sync rule reads the settings in force at each sync's end: a
// change made during a migration applies at its next step.
func TestResyncRuleReadsTheSettingsAtEachStep(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	d.act(events.ActionAutomatic)
	d.end(events.JobSuccess, 0)
	d.end(events.JobSuccess, 1<<30) // over 50 MiB: sync 2
	s := events.DefaultSettings()
	s.ResyncMaxSyncs = 2
	d.w.read(s)
	d.check(d.end(events.JobSuccess, 1<<29), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "2 syncs done, the most the settings allow"})
}

// A switched migration of shared storage says finalize has nothing to
// drop: both nodes reach the same disks.
func TestSwitchOfSharedStorage(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	d.w.read(events.InstanceDeclared{Name: "vm", Owner: "acct", Storage: events.StorageRBD, RunState: events.RunRunning,
		PrimaryNode: "n1", Size: events.Size{MemoryMiB: 1024, VCPUs: 1, DisksMiB: []int64{1024}}})
	synced(d)
	d.act(events.ActionSwitch)
	d.check(d.end(events.JobSuccess, 0), want{state: events.MigrationSuccessful, switched: true,
		message: "its storage is shared, so finalize has no source copy to drop"})
}

// A scheduled migration syncs, then waits for its time (scheduled), and
// switches once the time has come, by the re-sync rule.
func TestScheduledSwitchWaitsForItsTime(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	at := d.w.env.Now.Add(time.Hour)
	d.check(d.schedule(at), want{state: events.MigrationRunning, phase: events.PhaseBegin,
		dispatched: []string{events.PhaseBegin}, running: true})
	d.end(events.JobSuccess, 0)
	d.check(d.end(events.JobSuccess, 1000), want{state: events.MigrationScheduled, phase: events.PhaseSync,
		message: "begun and synced; switches at " + at.Format(time.RFC3339)})
	if evs := d.decide(); len(evs) != 0 {
		t.Fatalf("before its time a pass decided %d events", len(evs))
	}
	d.w.env.Now = at
	d.check(d.decide(), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "switching"})
}

// A pass with nothing new decides nothing, at every step: the coordinator
// is level-triggered, and an answered end or command is not answered twice.
func TestNothingNewDecidesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		walk func(d *driver)
	}{
		{"begin running", func(d *driver) { d.act(events.ActionBegin) }},
		{"begun", begun},
		{"syncing", syncing},
		{"synced", synced},
		{"switched", switched},
		{"aborted", func(d *driver) { synced(d); d.act(events.ActionAbort); d.end(events.JobSuccess, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			c.walk(d)
			if evs := d.decide(); len(evs) != 0 {
				t.Fatalf("a pass with nothing new decided %v", phases(evs))
			}
		})
	}
}

// A pause of an automatic migration stops its sync; automatic resumes it
// from the last complete sync (none here: the full send again), and the
// one End of the paused sync tells watchers it stopped.
func TestPauseThenResumeAutomatic(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	d.act(events.ActionAutomatic)
	d.end(events.JobSuccess, 0) // begin: sync 1 dispatched
	sync := d.running()
	d.check(d.act(events.ActionPause), want{state: events.MigrationPaused, phase: events.PhaseSync,
		dispatched: []string{events.PhasePause}, running: true, message: "pausing: stopping sync 1"})
	d.w.read(events.MigrationPhaseEnded{Migration: "m1", Instance: "vm", Node: "n1", Seq: sync.Seq, Phase: events.PhaseSync,
		Status: events.JobCanceled})
	evs := d.end(events.JobSuccess, 0) // the pause
	d.check(evs, want{state: events.MigrationPaused, phase: events.PhaseSync,
		message: "paused: sync 1 stopped, 0 syncs complete; resume with sync, switch or automatic"})
	var ends []events.End
	for _, e := range evs {
		if end, err := events.As[events.End](e); err == nil {
			ends = append(ends, end)
		}
	}
	if len(ends) != 1 || ends[0].State != events.EndPaused || ends[0].Request != "m1" || ends[0].Node != "n1" {
		t.Fatalf("ends %+v, want one paused end of m1 on n1", ends)
	}
	d.check(d.act(events.ActionAutomatic), want{state: events.MigrationRunning, phase: events.PhaseSync,
		dispatched: []string{events.PhaseSync}, running: true, message: "first sync: full send"})
}

// A phase's end and a command read before one pass: the end is answered
// first, and the command judged against the state it leaves (a pause
// asked as the sync ended finds no sync to stop).
func TestTheEndIsAnsweredBeforeTheCommand(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	syncing(d)
	ph := d.running()
	d.w.read(events.MigrationPhaseEnded{Migration: "m1", Instance: "vm", Node: "n1", Seq: ph.Seq, Phase: ph.Phase,
		Status: events.JobSuccess, Bytes: 1000})
	d.w.read(events.MigrationActionRequested{Migration: "m1", Instance: "vm", Action: events.ActionPause,
		Account: "acct", Role: events.RoleOperator})
	evs := d.decide()
	var msgs []string
	for _, e := range evs {
		if r, err := events.As[events.MigrationStateChanged](e); err == nil {
			msgs = append(msgs, r.Message)
		}
	}
	if len(msgs) != 2 || msgs[0] != "sync 1 done: 1000 bytes sent; run sync again or switch" ||
		msgs[1] != "pause refused: pause only during sync (the migration is paused, phase sync)" {
		t.Fatalf("records %q; want the sync's end, then the pause refused", msgs)
	}
}

// A sync that left the instance stopped at the switch point (a live
// pre-copy with nothing left dirty) is followed by the switch at once,
// since the instance is down until the switch: on demand, automatic,
// scheduled to switch later.
func TestSwitchPointSwitchesAtOnce(t *testing.T) {
	t.Parallel()
	const done = "sync 1 done: 1000 bytes sent; "
	atSwitchPoint := func(d *driver, seq int) []events.Envelope {
		d.w.read(events.MigrationPhaseEnded{Migration: d.id, Instance: "vm", Node: "n1", Seq: seq, Phase: events.PhaseSync,
			Status: events.JobSuccess, Bytes: 1000, AtSwitchPoint: true})
		return d.decide()
	}
	switching := want{state: events.MigrationRunning, phase: events.PhaseSwitch, dispatched: []string{events.PhaseSwitch},
		running: true, message: done + "the instance stopped at the switch point (nothing was left to copy), so it switches at once"}
	for _, c := range []struct {
		name string
		walk func(d *driver) int // the sync's seq
		want want
	}{
		{"on demand", func(d *driver) int { syncing(d); return d.running().Seq }, switching},
		{"automatic", func(d *driver) int {
			d.act(events.ActionAutomatic)
			d.end(events.JobSuccess, 0)
			return d.running().Seq
		}, switching},
		{"scheduled an hour on", func(d *driver) int {
			d.schedule(d.w.env.Now.Add(time.Hour))
			d.end(events.JobSuccess, 0)
			return d.running().Seq
		}, switching},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			d.check(atSwitchPoint(d, c.walk(d)), c.want)
		})
	}
}

// Paused during a sync that reached the switch point, the migration
// stays paused (the pause is the operator's word) and says the instance
// is down until they switch or abort.
func TestSwitchPointWhilePausing(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	syncing(d)
	seq := d.running().Seq
	d.act(events.ActionPause)
	d.w.read(events.MigrationPhaseEnded{Migration: d.id, Instance: "vm", Node: "n1", Seq: seq, Phase: events.PhaseSync,
		Status: events.JobSuccess, Bytes: 1000, AtSwitchPoint: true})
	d.decide()
	d.check(d.end(events.JobSuccess, 0), want{state: events.MigrationPaused, phase: events.PhaseSync,
		message: "paused after sync 1, with the instance stopped at the switch point (nothing was left to copy): it is down until you switch or abort"})
}
