package migration

import (
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// The first command of a migration is refused, queued or begun. A refusal
// is a failed record naming why, with nothing dispatched; a target asked
// for is checked before anything runs.
func TestBeginRefusals(t *testing.T) {
	t.Parallel()
	big := events.InstanceDeclared{Name: "big", Owner: "acct", Storage: events.StorageZFSLocal, RunState: events.RunRunning,
		PrimaryNode: "n1", Size: events.Size{MemoryMiB: 16384, VCPUs: 1, DisksMiB: []int64{1024}}}
	fat := events.InstanceDeclared{Name: "fat", Owner: "acct", Storage: events.StorageZFSLocal, RunState: events.RunStopped,
		PrimaryNode: "n1", Size: events.Size{MemoryMiB: 1024, VCPUs: 1, DisksMiB: []int64{200 << 10}}}
	for _, c := range []struct {
		name, instance, target string
		setup                  func(w *world)
		why                    string
	}{
		{"unknown instance", "nope", "n2", nil, `unknown instance "nope"`},
		{"unknown target", "vm", "n9", nil, `no target: unknown node "n9"`},
		{"its own node", "vm", "n1", nil, "no target: n1 is the instance's own node"},
		{"an offline target", "vm", "n2", func(w *world) { w.offline("n2") }, "node n2 is offline, drained or not VM capable"},
		{"a drained target", "vm", "n2", func(w *world) {
			n := w.inv.NodeState("n2")
			n.Drained = true
			w.inv.Apply(n, inventory.Unread(events.New(n)))
		}, "node n2 is offline, drained or not VM capable"},
		{"too little memory for a running instance", "big", "n2", func(w *world) { w.read(big) }, "of memory free, the instance needs 16384"},
		{"too little disk for local storage", "fat", "n2", func(w *world) { w.read(fat) }, "of disk free, the instance needs 204800"},
		{"held by a request", "held", "n2", nil, "instance held is being moved by request r1"},
		{"a storage kind that cannot migrate alone", "mirrored", "n2", nil, "storage drbd"},
		{"no node in the group has room", "big", "", func(w *world) { w.read(big) }, "no target"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			if c.setup != nil {
				c.setup(w)
			}
			w.read(events.MigrationActionRequested{Migration: "m1", Instance: c.instance, Action: events.ActionBegin,
				Target: c.target, Account: "acct", Role: events.RoleOperator})
			evs := Decide(w.env, w.st, "m1")
			r := record(t, evs)
			if len(dispatches(evs)) != 0 || r.State != events.MigrationFailed || !strings.Contains(r.Error, c.why) ||
				!strings.HasPrefix(r.Message, "begin refused: ") {
				t.Fatalf("decided %v, record %s %q (%q); want failed with %q, nothing dispatched",
					phases(evs), r.State, r.Error, r.Message, c.why)
			}
		})
	}
}

// With no target asked for, the planner picks the best node of the
// instance's group, as a primary-only evacuation of its source would.
func TestBeginPicksATarget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.read(events.NodeAnnounced{Name: "n3", Group: "g1", VMCapable: true,
		Total: events.Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 64, Spindles: 12}})
	w.read(events.MigrationActionRequested{Migration: "m1", Instance: "vm", Action: events.ActionAutomatic,
		Account: "acct", Role: events.RoleOperator})
	evs := Decide(w.env, w.st, "m1")
	ds := dispatches(evs)
	if len(ds) != 1 || ds[0].Phase != events.PhaseBegin || ds[0].Target == "" || ds[0].Target == "n1" {
		t.Fatalf("dispatched %+v, want begin to a node other than n1", ds)
	}
	if r := record(t, evs); r.Target != ds[0].Target || r.Source != "n1" || !r.Automatic || r.PriorRunState != events.RunRunning {
		t.Fatalf("record %+v", r)
	}
}

// The room other moves still need is taken before a target is checked
// (Env.Reserve): a node a request's move will fill cannot be a target.
func TestBeginChecksTheTargetAgainstMovesInFlight(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env.Reserve = func(c *planner.Cluster) {
		if i := c.NodeIndex("n2"); i >= 0 {
			c.Nodes[i].FreeMemory = 512 // a request's move lands there
		}
	}
	w.read(events.MigrationActionRequested{Migration: "m1", Instance: "vm", Action: events.ActionBegin, Target: "n2",
		Account: "acct", Role: events.RoleOperator})
	r := record(t, Decide(w.env, w.st, "m1"))
	if r.State != events.MigrationFailed || !strings.Contains(r.Error, "of memory free") {
		t.Fatalf("record %s %q; want the target refused for the memory moves in flight hold", r.State, r.Error)
	}
}

// Migrations beyond the per-node slot limit queue, in the order asked
// for, and start as slots free: a slot is held until the switch (or the
// end), and the limit is read from the settings at each start.
func TestQueueAndStartAsSlotsFree(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := events.DefaultSettings()
	s.MaxRunningMigrationsPerNode = 1
	w.read(s)
	first := &driver{t: t, w: w, id: "m0"}
	first.command(events.MigrationActionRequested{Migration: "m0", Instance: "vm2", Action: events.ActionBegin,
		Target: "n2", Account: "acct", Role: events.RoleOperator})
	d := &driver{t: t, w: w, id: "m1"}
	d.check(d.act(events.ActionBegin), want{state: events.MigrationQueued, message: "queued: 1 migrations already run from n1 (limit 1)"})
	if evs := d.decide(); len(evs) != 0 {
		t.Fatalf("while the slot is held a pass decided %v", phases(evs))
	}
	first.end(events.JobSuccess, 0) // begun: still holds its slot
	if evs := d.decide(); len(evs) != 0 {
		t.Fatalf("while the slot is held a pass decided %v", phases(evs))
	}
	first.act(events.ActionSync)
	first.end(events.JobSuccess, 100)
	first.act(events.ActionSwitch)
	first.end(events.JobSuccess, 0) // switched: the slot is free
	d.check(d.decide(), want{state: events.MigrationRunning, phase: events.PhaseBegin,
		dispatched: []string{events.PhaseBegin}, running: true, message: "begin: reserving vm on n2"})
}

// Raising the limit starts a queued migration at the next pass.
func TestRaisingTheLimitStartsTheQueued(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := events.DefaultSettings()
	s.MaxRunningMigrationsPerNode = 1
	w.read(s)
	(&driver{t: t, w: w, id: "m0"}).command(events.MigrationActionRequested{Migration: "m0", Instance: "vm2",
		Action: events.ActionBegin, Target: "n2", Account: "acct", Role: events.RoleOperator})
	d := &driver{t: t, w: w, id: "m1"}
	d.check(d.act(events.ActionBegin), want{state: events.MigrationQueued, message: "queued"})
	s.MaxRunningMigrationsPerNode = 2
	w.read(s)
	d.check(d.decide(), want{state: events.MigrationRunning, phase: events.PhaseBegin,
		dispatched: []string{events.PhaseBegin}, running: true})
}
