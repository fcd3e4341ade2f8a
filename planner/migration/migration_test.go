package migration

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// RFD 34's re-sync rule, every way it can answer: switch when the last
// sync was small, when the syncs allowed are spent, or when the size
// stopped shrinking over the window; else sync again. The reason is what
// the record's message tells the operator.
func TestResyncRule(t *testing.T) {
	t.Parallel()
	s := events.SettingsChanged{ResyncMaxBytes: 100, ResyncMaxSyncs: 5, ResyncShrinkWindow: 2}
	noWindow := s
	noWindow.ResyncShrinkWindow = 0
	for _, c := range []struct {
		name  string
		sizes []int64
		s     events.SettingsChanged
		want  bool
		why   string
	}{
		{"no sync yet", nil, s, false, "no sync yet"},
		{"the full send", []int64{1000}, s, false, "the last sync sent 1000 bytes; syncing again"},
		{"a small first sync switches at once", []int64{99}, s, true, "the last sync sent 99 bytes, under 100"},
		{"under ResyncMaxBytes", []int64{1000, 99}, s, true, "the last sync sent 99 bytes, under 100"},
		{"exactly ResyncMaxBytes is not under", []int64{1000, 100}, s, false, "syncing again"},
		{"ResyncMaxSyncs syncs", []int64{1000, 500, 300, 200, 150}, s, true, "5 syncs done, the most the settings allow"},
		{"one short of ResyncMaxSyncs", []int64{1000, 500, 300, 200}, s, false, "syncing again"},
		{"stopped shrinking over the window", []int64{1000, 500, 600, 500}, s, true,
			"the sync size stopped shrinking over the last 2 syncs (500, then 500 bytes)"},
		{"grew over the window", []int64{1000, 300, 200, 400}, s, true, "(300, then 400 bytes)"},
		{"still shrinking", []int64{1000, 500, 400}, s, false, "the last sync sent 400 bytes; syncing again"},
		{"no older sync to compare within the window", []int64{1000, 1000}, s, false, "syncing again"},
		{"a window of 0 never compares", []int64{1000, 500, 600, 500}, noWindow, false, "syncing again"},
		{"small wins over the count", []int64{1000, 500, 300, 200, 50}, s, true, "under 100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := switchNow(c.sizes, c.s)
			if v.Switch != c.want || !strings.Contains(v.Why, c.why) {
				t.Errorf("switchNow(%v) = %v, %q; want %v, %q", c.sizes, v.Switch, v.Why, c.want, c.why)
			}
		})
	}
}

type world struct {
	inv *inventory.Inventory
	st  *State
	env Env
}

func newWorld(t *testing.T) *world {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &world{inv: inventory.New(), st: NewState(func() time.Time { return now })}
	w.env = Env{Inv: w.inv, Busy: func() map[string]string { return map[string]string{"held": "r1"} },
		Apply: func(e events.Envelope, p events.Payload) { w.apply(e, p) }, Options: planner.DefaultOptions(),
		StallRetries: 2, Producer: "test", Now: now, Log: slog.New(slog.DiscardHandler)}
	w.read(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred})
	for _, n := range []string{"n1", "n2"} {
		w.read(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
			Total: events.Resources{MemoryMiB: 8192, DiskMiB: 100 << 10, CPUs: 8, Spindles: 4}})
	}
	for name, kind := range map[string]events.StorageKind{"vm": events.StorageZFSLocal, "vm2": events.StorageZFSLocal,
		"held":     events.StorageZFSLocal,
		"mirrored": events.StorageDRBD} {
		in := events.InstanceDeclared{Name: name, Owner: "acct", Storage: kind, RunState: events.RunRunning,
			PrimaryNode: "n1", Size: events.Size{MemoryMiB: 1024, VCPUs: 1, DisksMiB: []int64{1024}}}
		if kind.InternallyMirrored() {
			in.SecondaryNode = "n2"
		}
		w.read(in)
	}
	return w
}

func (w *world) apply(e events.Envelope, p events.Payload) {
	switch p.(type) {
	case events.GroupDeclared, events.NodeAnnounced, events.InstanceDeclared, events.InstancePlaced:
		w.inv.Apply(p, inventory.Unread(e))
	default:
		w.st.Apply(e, p, inventory.Unread(e))
	}
}

func (w *world) read(p events.Payload) {
	w.apply(events.New(p, events.WithReason(events.Reason{Actor: "operator:test", Why: "test"})), p)
}

// record is the last record a decision wrote.
func record(t *testing.T, evs []events.Envelope) events.MigrationStateChanged {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if r, err := events.As[events.MigrationStateChanged](evs[i]); err == nil {
			return r
		}
	}
	t.Fatalf("no record among %d decisions", len(evs))
	return events.MigrationStateChanged{}
}

func TestBeginDispatchesToTheSourceOrRefuses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	begin := func(id, instance string) events.MigrationActionRequested {
		return events.MigrationActionRequested{Migration: id, Instance: instance, Action: events.ActionBegin,
			Target: "n2", Account: "acct", Role: events.RoleOperator}
	}
	w.read(begin("m1", "vm"))
	evs := Decide(w.env, w.st, "m1")
	d, err := events.As[events.MigrationPhaseDispatched](evs[0])
	if err != nil || d.Phase != events.PhaseBegin || d.Node != "n1" || d.Target != "n2" {
		t.Fatalf("begin decided %+v (%v), want the begin phase dispatched to n1 for n2", evs[0], err)
	}
	// The executor reads no inventory: the phase carries the facts.
	if f := d.Facts; f == nil || f.Primary != "n1" || f.Storage == "" || f.RunState != events.RunRunning {
		t.Fatalf("begin carries facts %+v, want the instance's, on n1", f)
	}
	if r := record(t, evs); r.State != events.MigrationRunning {
		t.Fatalf("record %+v, want running", r)
	}
	for _, c := range []struct{ id, instance, why string }{
		{"m2", "vm", "already migrating"},
		{"m3", "held", "being moved by request r1"},
		{"m4", "mirrored", "mirrored to a secondary"},
	} {
		w.read(begin(c.id, c.instance))
		r := record(t, Decide(w.env, w.st, c.id))
		if r.State != events.MigrationFailed || !strings.Contains(r.Error, c.why) {
			t.Errorf("%s of %s: record %s %q, want failed with %q", c.id, c.instance, r.State, r.Error, c.why)
		}
	}
	if evs := Decide(w.env, w.st, "m1"); len(evs) != 0 {
		t.Errorf("a second pass with nothing new decided %d events", len(evs))
	}
}

// A target an operator names is checked with the planner's own rules, not
// only for free memory and disk: here the group's vCPU ratio, which n2's
// 8 CPUs cannot meet for a 16-vCPU instance though memory and disk fit.
// The refusal gives the planner's reason.
func TestBeginChecksTheTargetWithThePlannersRules(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.read(events.InstanceDeclared{Name: "wide", Owner: "acct", Storage: events.StorageZFSLocal, RunState: events.RunRunning,
		PrimaryNode: "n1", Size: events.Size{MemoryMiB: 1024, VCPUs: 40, DisksMiB: []int64{1024}}})
	w.read(events.MigrationActionRequested{Migration: "m1", Instance: "wide", Action: events.ActionBegin,
		Target: "n2", Account: "acct", Role: events.RoleOperator})
	r := record(t, Decide(w.env, w.st, "m1"))
	if r.State != events.MigrationFailed || !strings.Contains(r.Error, "no target") || !strings.Contains(strings.ToLower(r.Error), "cpu") {
		t.Fatalf("record %s %q; want failed with the planner's CPU reason", r.State, r.Error)
	}
}

// Pause stops the running sync at once: a pause phase supersedes it on
// the source, the record says paused and keeps phase sync, and when the
// pause has ended the record counts only the syncs that completed and one
// End says paused.
func TestPauseStopsTheRunningSync(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	act := func(a events.MigrationAction) []events.Envelope {
		w.read(events.MigrationActionRequested{Migration: "m1", Instance: "vm", Action: a, Target: "n2",
			Account: "acct", Role: events.RoleOperator})
		return Decide(w.env, w.st, "m1")
	}
	ended := func(seq int, phase string, status events.JobStatus) []events.Envelope {
		w.read(events.MigrationPhaseEnded{Migration: "m1", Instance: "vm", Node: "n1", Seq: seq, Phase: phase, Status: status})
		return Decide(w.env, w.st, "m1")
	}
	act(events.ActionBegin)
	ended(0, events.PhaseBegin, events.JobSuccess)
	act(events.ActionSync)
	evs := act(events.ActionPause)
	d, err := events.As[events.MigrationPhaseDispatched](evs[0])
	if err != nil || d.Phase != events.PhasePause || d.Seq != 2 || d.Node != "n1" {
		t.Fatalf("pause decided %+v (%v), want a pause phase (seq 2) on n1", evs[0], err)
	}
	// Paused at once, yet the pause phase still runs, and the record says
	// so: the gateway refuses a next step on that alone.
	if r := record(t, evs); r.State != events.MigrationPaused || r.Phase != events.PhaseSync || !r.PhaseRunning {
		t.Fatalf("record %s in phase %s, phase running %t; want paused in sync, a phase running", r.State, r.Phase, r.PhaseRunning)
	}
	ended(1, events.PhaseSync, events.JobCanceled) // the superseded sync
	evs = ended(2, events.PhasePause, events.JobSuccess)
	r := record(t, evs)
	if r.State != events.MigrationPaused || r.Syncs != 0 || !strings.Contains(r.Message, "sync 1 stopped") || r.PhaseRunning {
		t.Fatalf("after the pause: %s, %d syncs, %q, phase running %t", r.State, r.Syncs, r.Message, r.PhaseRunning)
	}
	var ends []events.End
	for _, e := range evs {
		if end, err := events.As[events.End](e); err == nil {
			ends = append(ends, end)
		}
	}
	if len(ends) != 1 || ends[0].State != events.EndPaused || ends[0].Phase != events.PhaseSync {
		t.Fatalf("ends %+v, want one paused end of the sync", ends)
	}
}

// Once a live move's source reports paused (post-copy), an abort is
// refused with a message that says the guest already runs on the target,
// and the switch's record says it went post-copy.
func TestAbortRefusedAfterPostCopy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	act := func(a events.MigrationAction) []events.Envelope {
		w.read(events.MigrationActionRequested{Migration: "m1", Instance: "vm", Action: a, Target: "n2",
			Account: "acct", Role: events.RoleOperator})
		return Decide(w.env, w.st, "m1")
	}
	ended := func(seq int, phase string) []events.Envelope {
		w.read(events.MigrationPhaseEnded{Migration: "m1", Instance: "vm", Node: "n1", Seq: seq, Phase: phase, Status: events.JobSuccess})
		return Decide(w.env, w.st, "m1")
	}
	act(events.ActionBegin)
	ended(0, events.PhaseBegin)
	act(events.ActionSync)
	ended(1, events.PhaseSync)
	act(events.ActionSwitch)
	w.read(events.MoveStatusReported{Request: "m1", Instance: "vm", Node: "n1", Status: events.StatusPaused})
	r := record(t, act(events.ActionAbort))
	if r.State != events.MigrationRunning || !strings.Contains(r.Message, "abort refused") ||
		!strings.Contains(r.Message, "post-copy") || !strings.Contains(r.Message, "already runs on n2") {
		t.Fatalf("abort in post-copy: %s %q", r.State, r.Message)
	}
	r = record(t, ended(2, events.PhaseSwitch))
	if r.State != events.MigrationSuccessful || !strings.Contains(r.Message, "post-copy") {
		t.Fatalf("after the switch: %s %q", r.State, r.Message)
	}
}
