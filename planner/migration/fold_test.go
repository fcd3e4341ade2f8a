package migration

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// InFlight is the room active migrations still need beyond where the
// inventory places their instance: the target until the switch, the
// source after it until finalize; nothing once it ended.
func TestInFlightFollowsTheSwitch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		walk func(d *driver)
		want []string // vm's nodes; nil: none
	}{
		{"begin running", func(d *driver) { d.act(events.ActionBegin) }, []string{"n2"}},
		{"paused between syncs", synced, []string{"n2"}},
		{"switched, not finalized", switched, []string{"n1"}},
		{"finalized", func(d *driver) { switched(d); d.act(events.ActionFinalize); d.end(events.JobSuccess, 0) }, nil},
		{"rolled back", func(d *driver) { switched(d); d.act(events.ActionRollback); d.end(events.JobSuccess, 0) }, nil},
		{"aborted", func(d *driver) { synced(d); d.act(events.ActionAbort); d.end(events.JobSuccess, 0) }, nil},
		{"failed", func(d *driver) { syncing(d); d.fail("disk full") }, nil},
		{"refused", func(d *driver) {
			d.command(events.MigrationActionRequested{Migration: "m1", Instance: "vm", Action: events.ActionBegin,
				Target: "n1", Account: "acct", Role: events.RoleOperator})
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			c.walk(d)
			if got := d.w.st.InFlight()["vm"]; !slices.Equal(got, c.want) {
				t.Fatalf("InFlight[vm] = %v, want %v", got, c.want)
			}
			if got, active := d.w.st.ActiveOn("vm"), c.want != nil; (got == "m1") != active {
				t.Fatalf("ActiveOn(vm) = %q, want active %t", got, active)
			}
		})
	}
}

// The coordinator's own decisions, read back from the log, change
// nothing: they were applied when taken, and a later pass decides nothing.
func TestReadingBackDecisionsIsANoOp(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	var taken []events.Envelope
	keep := func(evs []events.Envelope) { taken = append(taken, evs...) }
	keep(d.act(events.ActionBegin))
	keep(d.end(events.JobSuccess, 0))
	keep(d.act(events.ActionSync))
	before := d.rec()
	for _, e := range taken { // as the log returns them: encoded, decoded
		b, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		env, p, err := events.DecodeWithPayload(b)
		if err != nil {
			t.Fatal(err)
		}
		d.w.apply(env, p)
	}
	if got := d.rec(); got != before {
		t.Fatalf("reading back changed the record:\n got %+v\nwant %+v", got, before)
	}
	if evs := d.decide(); len(evs) != 0 {
		t.Fatalf("after reading back a pass decided %v", phases(evs))
	}
}

// A record read after a newer one of the same migration (a replay that
// meets the coordinator's own records late) does not move the migration
// back in time.
func TestAnOlderRecordReadLateIsSkipped(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	old := record(t, d.act(events.ActionBegin))
	evs := d.end(events.JobSuccess, 0)
	newer := record(t, evs)
	if old.State == newer.State {
		t.Fatalf("the walk did not change the state (%s)", old.State)
	}
	// The first record again, by its own event: applied already.
	first := d.w.st.byID["m1"].records[0]
	d.w.st.Apply(events.Envelope{ID: first, Type: events.TypeMigrationStateChanged}, old, inventory.Pos{})
	if got := d.rec(); got.State != newer.State || got.Message != newer.Message {
		t.Fatalf("record %s %q after the old one was read again, want %s %q", got.State, got.Message, newer.State, newer.Message)
	}
}

// A migration that ended leaves the fold but for its last record, which
// still answers a command naming it.
func TestAnEndedMigrationLeavesTheFold(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	synced(d)
	d.act(events.ActionAbort)
	d.end(events.JobSuccess, 0)
	if _, in := d.w.st.byID["m1"]; in || slices.Contains(d.w.st.Sorted(), "m1") {
		t.Fatal("an aborted migration stays in the fold")
	}
	for id := range d.w.st.seen {
		t.Errorf("seen still holds %s", id)
	}
	d.check(d.act(events.ActionSync), want{state: events.MigrationAborted, message: "sync refused: the migration is aborted"})
	if _, in := d.w.st.byID["m1"]; in {
		t.Fatal("the answered command kept the migration in the fold")
	}
}

// A snapshot of the fold restores a state the coordinator goes on from
// as if it had never stopped, timers included.
func TestSnapshotRestoresTheFold(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	synced(d)
	other := &driver{t: t, w: d.w, id: "m2"}
	other.command(events.MigrationActionRequested{Migration: "m2", Instance: "vm2", Action: events.ActionAutomatic,
		Target: "n2", Account: "acct", Role: events.RoleOperator})
	b, err := json.Marshal(d.w.st)
	if err != nil {
		t.Fatal(err)
	}
	restored := NewState(nil)
	if err := json.Unmarshal(b, restored); err != nil {
		t.Fatal(err)
	}
	restored.SetClock(d.w.st.now)
	if !slices.Equal(restored.Sorted(), d.w.st.Sorted()) || !maps.EqualFunc(restored.InFlight(), d.w.st.InFlight(), slices.Equal) {
		t.Fatalf("restored %v %v, want %v %v", restored.Sorted(), restored.InFlight(), d.w.st.Sorted(), d.w.st.InFlight())
	}
	d.w.st = restored
	d.check(d.act(events.ActionSwitch), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "switch asked for after 1 syncs"})
	// m2's begin is still running: its stall timer carried over.
	other.w.env.Now = other.w.env.Now.Add(150 * time.Second)
	if got := phases(other.decide()); !slices.Equal(got, []string{events.PhaseBegin}) {
		t.Fatalf("the restored stall timer dispatched %v, want begin again", got)
	}
}

// Migrations are decided in the order they were asked for, by log
// position, whatever order their events were read in.
func TestSortedByCreation(t *testing.T) {
	t.Parallel()
	st := NewState(time.Now)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(id string, offset int64) {
		a := events.MigrationActionRequested{Migration: id, Instance: "vm-" + id, Action: events.ActionBegin,
			Account: "acct", Role: events.RoleOperator}
		st.Apply(events.New(a), a, inventory.Pos{Time: t0, Partition: 0, Offset: offset})
	}
	at("m3", 30)
	at("m1", 10)
	at("m2", 20)
	if got := st.Sorted(); !slices.Equal(got, []string{"m1", "m2", "m3"}) {
		t.Fatalf("Sorted() = %v, want m1, m2, m3", got)
	}
}
