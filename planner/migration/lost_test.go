package migration

import (
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

func (w *world) offline(node string) {
	n := w.inv.NodeState(node)
	n.Offline = true
	w.inv.Apply(n, inventory.Unread(events.New(n)))
}

// A switched migration whose target is lost says an operator must act,
// once, and nothing more happens by itself (no finalize: the source copy
// may be the only one left).
func TestSwitchedMigrationTargetLost(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.read(events.MigrationStateChanged{Migration: "m1", Instance: "vm", Account: "acct", Role: events.RoleOperator,
		Source: "n1", Target: "n2", State: events.MigrationSuccessful, Phase: events.PhaseSwitch,
		Switched: true, PriorRunState: events.RunRunning})
	w.offline("n2")
	r := record(t, Decide(w.env, w.st, "m1"))
	if !strings.Contains(r.ErrorDetail, "operator action needed") || !strings.Contains(r.Error, "n2 lost") || !r.Switched {
		t.Fatalf("record %+v", r)
	}
	if evs := Decide(w.env, w.st, "m1"); len(evs) != 0 {
		t.Fatalf("decided again: %d events", len(evs))
	}
}

// Target lost during a sync: failed, and an abort goes to the source,
// superseding the sync.
func TestTargetLostBeforeTheSwitchAborts(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.read(events.MigrationStateChanged{Migration: "m1", Instance: "vm", Account: "acct", Role: events.RoleOperator,
		Source: "n1", Target: "n2", State: events.MigrationRunning, Phase: events.PhaseSync, Syncs: 1,
		PriorRunState: events.RunRunning})
	w.read(events.MigrationPhaseDispatched{Migration: "m1", Instance: "vm", Node: "n1", Seq: 1, Phase: events.PhaseSync,
		Source: "n1", Target: "n2", Sync: 2})
	w.offline("n2")
	evs := Decide(w.env, w.st, "m1")
	var d *events.MigrationPhaseDispatched
	for _, e := range evs {
		if x, err := events.As[events.MigrationPhaseDispatched](e); err == nil {
			d = &x
		}
	}
	if r := record(t, evs); d == nil || d.Phase != "abort" || d.Node != "n1" || d.Seq != 2 || r.State != events.MigrationFailed {
		t.Fatalf("decided %d events, dispatch %+v, record %+v", len(evs), d, r)
	}
}
