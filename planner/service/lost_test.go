package service

import (
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
)

// markOffline restates node as offline, as planner/nodes does when its
// lease expires or an operator marks it so.
func (h *harness) markOffline(node string) {
	h.t.Helper()
	n, _, err := h.node(node)
	if err != nil {
		h.t.Fatal(err)
	}
	n.Offline = true
	h.appendEvent(events.NodeUpdated(n), "planner", "node "+node+" lost (test)", "")
}

// Target lost in the middle of a sync: the migration fails, an abort runs
// on the source, and the instance stays there, running.
func TestMigrationTargetLostAbortsToTheSource(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, false, nil)
	w.act("m1", "big", events.ActionAutomatic, func(a *events.MigrationActionRequested) { a.Target = "n2" })
	w.await("m1", "syncing", func(r events.MigrationStateChanged) bool { return r.Phase == events.PhaseSync })
	w.markOffline("n2")
	r := w.await("m1", "back on n1", func(r events.MigrationStateChanged) bool {
		return strings.Contains(r.Message, "back on n1")
	})
	if r.State != events.MigrationFailed || r.Switched || !strings.Contains(r.Error, "n2 lost") {
		t.Fatalf("record %+v; want failed, not switched, target lost", r)
	}
	if got := w.placements("big"); len(got) != 0 {
		t.Fatalf("placed %v", got)
	}
	if p, _, _ := w.sim.Locate(w.ctx, "big"); p != "n1" {
		t.Fatalf("the simulator has big on %s", p)
	}
}

// Source lost: the record fails at once and says an operator must act.
func TestMigrationSourceLostNeedsAnOperator(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, true, nil) // nobody runs n1's phases: it is "lost"
	w.act("m1", "big", events.ActionAutomatic, func(a *events.MigrationActionRequested) { a.Target = "n2" })
	w.await("m1", "begun", func(r events.MigrationStateChanged) bool { return r.State == events.MigrationRunning })
	w.markOffline("n1")
	r := w.awaitState("m1", events.MigrationFailed)
	if !strings.Contains(r.Error, "n1") || !strings.Contains(r.ErrorDetail, "operator action needed") {
		t.Fatalf("record %+v; want the source's loss and operator action", r)
	}
}
