package migration

import (
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// A command the migration's state does not allow is refused: the record
// is written again unchanged but for its message, which names the command
// and why, and nothing is dispatched.
func TestCommandsRefused(t *testing.T) {
	t.Parallel()
	finalized := func(d *driver) { switched(d); d.act(events.ActionFinalize); d.end(events.JobSuccess, 0) }
	aborted := func(d *driver) { synced(d); d.act(events.ActionAbort); d.end(events.JobSuccess, 0) }
	queued := func(d *driver) {
		one := events.DefaultSettings()
		one.MaxRunningMigrationsPerNode = 1
		d.w.read(one)
		other := &driver{t: d.t, w: d.w, id: "m0"}
		other.command(events.MigrationActionRequested{Migration: "m0", Instance: "vm2", Action: events.ActionBegin,
			Target: "n2", Account: "acct", Role: events.RoleOperator})
		d.act(events.ActionBegin)
	}
	scheduled := func(d *driver) {
		d.schedule(d.w.env.Now.Add(time.Hour))
		d.end(events.JobSuccess, 0)
		d.end(events.JobSuccess, 1000)
	}
	for _, c := range []struct {
		name   string
		walk   func(d *driver)
		action events.MigrationAction
		why    string
	}{
		{"begin twice", begun, events.ActionBegin, "the migration has already begun"},
		{"sync while begin runs", func(d *driver) { d.act(events.ActionBegin) }, events.ActionSync, "phase begin is still running"},
		{"sync while a sync runs", syncing, events.ActionSync, "phase sync is still running"},
		{"switch before any sync", begun, events.ActionSwitch, "switch before any sync: run sync first"},
		{"switch while a sync runs", syncing, events.ActionSwitch, "phase sync is still running"},
		{"sync while queued", queued, events.ActionSync, "it is queued, waiting for a free slot on n1"},
		{"automatic while queued", queued, events.ActionAutomatic, "it is queued"},
		{"sync while scheduled", scheduled, events.ActionSync, "it is scheduled to switch at"},
		{"sync after the switch", switched, events.ActionSync, "the switch has committed"},
		{"sync after an abort", aborted, events.ActionSync, "the migration is aborted"},
		{"pause when no sync runs", synced, events.ActionPause, "pause only during sync (the migration is paused, phase sync)"},
		{"pause during begin", func(d *driver) { d.act(events.ActionBegin) }, events.ActionPause,
			"pause only during sync (the migration is running, phase begin)"},
		{"abort after the switch", switched, events.ActionAbort, "the switch has committed: roll back instead"},
		{"abort during the switch", func(d *driver) { synced(d); d.act(events.ActionSwitch) }, events.ActionAbort,
			"the switch is under way; roll back once it has committed"},
		{"abort twice", func(d *driver) { synced(d); d.act(events.ActionAbort) }, events.ActionAbort, "already aborting"},
		{"abort after an abort", aborted, events.ActionAbort, "the migration is aborted"},
		{"rollback before the switch", synced, events.ActionRollback, "the switch has not committed: abort instead"},
		{"rollback while finalize runs", func(d *driver) { switched(d); d.act(events.ActionFinalize) }, events.ActionRollback,
			"phase finalize is still running"},
		{"rollback after finalize", finalized, events.ActionRollback, "the migration is finalized: the source copy is gone"},
		{"finalize before the switch", synced, events.ActionFinalize, "the switch has not committed"},
		{"finalize while rollback runs", func(d *driver) { switched(d); d.act(events.ActionRollback) }, events.ActionFinalize,
			"phase rollback is still running"},
		{"finalize twice", finalized, events.ActionFinalize, "already finalized"},
		{"schedule after the switch", switched, events.ActionSchedule, "the switch has committed"},
		{"schedule after an abort", aborted, events.ActionSchedule, "the migration is aborted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			c.walk(d)
			before := d.rec()
			var evs []events.Envelope
			if c.action == events.ActionSchedule { // the schema refuses one without a time
				evs = d.schedule(d.w.env.Now.Add(time.Hour))
			} else {
				evs = d.act(c.action)
			}
			r := record(t, evs)
			if got := phases(evs); len(got) != 0 {
				t.Errorf("a refused %s dispatched %v", c.action, got)
			}
			if want := string(c.action) + " refused: " + c.why; !strings.HasPrefix(r.Message, want) {
				t.Errorf("message %q, want %q", r.Message, want)
			}
			r.Message = before.Message
			if r != before && !(r.ScheduledAt != nil && before.ScheduledAt != nil && r.ScheduledAt.Equal(*before.ScheduledAt)) {
				t.Errorf("a refusal changed the record:\n got %+v\nwant %+v", r, before)
			}
		})
	}
}

// A command that names no migration the coordinator knows (and does not
// create one) is ignored: the gateway answers 404 before appending one,
// so nothing is recorded, and it is not answered again.
func TestCommandForAnUnknownMigrationIsIgnored(t *testing.T) {
	t.Parallel()
	for _, a := range []events.MigrationAction{events.ActionSync, events.ActionSwitch, events.ActionPause,
		events.ActionAbort, events.ActionRollback, events.ActionFinalize} {
		d := newDriver(t)
		if evs := d.act(a); len(evs) != 0 {
			t.Errorf("%s of an unknown migration decided %d events", a, len(evs))
		}
		if d.w.st.Record("m1") != nil {
			t.Errorf("%s of an unknown migration left a record", a)
		}
		if evs := d.decide(); len(evs) != 0 {
			t.Errorf("%s answered twice", a)
		}
	}
}

// Rescheduling: a scheduled or paused migration takes the new time and
// turns automatic; a paused one that has begun waits, scheduled.
func TestReschedule(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	synced(d)
	at := d.w.env.Now.Add(2 * time.Hour)
	evs := d.schedule(at)
	d.check(evs, want{state: events.MigrationScheduled, phase: events.PhaseSync,
		message: "switch scheduled at " + at.Format(time.RFC3339)})
	if r := d.rec(); !r.Automatic || r.ScheduledAt == nil || !r.ScheduledAt.Equal(at) {
		t.Fatalf("record %+v, want automatic, scheduled at %s", r, at)
	}
	later := at.Add(time.Hour)
	d.schedule(later)
	d.w.env.Now = at
	if evs := d.decide(); len(evs) != 0 {
		t.Fatalf("at the old time a pass decided %v", phases(evs))
	}
	d.w.env.Now = later
	d.check(d.decide(), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "switching"})
}

// A queued migration aborted is over at once: nothing ran on its source.
func TestAbortWhileQueued(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	one := events.DefaultSettings()
	one.MaxRunningMigrationsPerNode = 1
	d.w.read(one)
	(&driver{t: t, w: d.w, id: "m0"}).command(events.MigrationActionRequested{Migration: "m0", Instance: "vm2",
		Action: events.ActionBegin, Target: "n2", Account: "acct", Role: events.RoleOperator})
	d.check(d.act(events.ActionBegin), want{state: events.MigrationQueued, message: "queued: 1 migrations already run from n1 (limit 1)"})
	d.check(d.act(events.ActionAbort), want{state: events.MigrationAborted, message: "aborted while queued: nothing had begun"})
}
