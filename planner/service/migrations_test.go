package service

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/planner"
)

// migCluster is one group of three nodes with zfs-local instances on n1:
// vm1..vm3 small (1 GiB of disk), big with 200 GiB so its full send takes
// long enough to pause or abort it.
func migCluster() *planner.Cluster {
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	c.Groups = []planner.Group{{UUID: "g1", Name: "g1", AllocPolicy: planner.Preferred, Policy: planner.DefaultIPolicy()}}
	for i := 1; i <= 3; i++ {
		c.Nodes = append(c.Nodes, planner.Node{Name: fmt.Sprintf("n%d", i), TotalMemory: 64 * 1024, FreeMemory: 64 * 1024,
			TotalDisk: 1 << 20, FreeDisk: 1 << 20, TotalCPUs: 32, TotalSpindles: 8, FreeSpindles: 8, VMCapable: true})
	}
	add := func(name string, diskMiB int64) {
		c.Instances = append(c.Instances, planner.Instance{Name: name, Memory: 1024, DiskSpace: diskMiB,
			Disks: []planner.Disk{{Size: diskMiB}}, VCPUs: 1, SpindleUse: 1, NICs: 1, Owner: "acct-1",
			Storage: planner.ZFSLocal, State: planner.Up, Primary: 0, Secondary: planner.NoNode})
	}
	add("vm1", 1024)
	add("vm2", 1024)
	add("vm3", 1024)
	add("big", 200*1024)
	return c
}

// fakeClock is wall time plus an offset the test moves forward.
type fakeClock struct{ off atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.off.Add(int64(d)) }

type migWorld struct {
	*harness
	clock *fakeClock
	sim   *sim.Driver
}

// newMigWorld runs the service (fast tick, fake clock) and, unless
// noExecutor, an executor on n1 with a simulator 1000 times faster than
// real time.
func newMigWorld(t *testing.T, noExecutor bool, settings *events.SettingsChanged) *migWorld {
	t.Helper()
	w := &migWorld{harness: newHarnessWith(t, migCluster()), clock: &fakeClock{}}
	if settings != nil {
		w.appendEvent(*settings, "operator:alice", "test settings", "")
	}
	if !noExecutor {
		d, err := sim.New(sim.Config{Clock: sim.FastClock(1000)})
		if err != nil {
			t.Fatal(err)
		}
		w.sim = d
		kc := w.kc
		kc.TransactionalID = ""
		ex, err := executor.New(executor.Config{Node: "n1", Kafka: kc, ProgressInterval: 20 * time.Millisecond,
			Retry:  executor.Retry{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
			Logger: slog.New(slog.DiscardHandler)}, d)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		ctx, cancel := contextWithCancel(w.ctx)
		go func() { done <- ex.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("executor: %v", err)
			}
		})
	}
	w.start(func(c *Config) { c.Tick = 20 * time.Millisecond; c.Clock = w.clock.now })
	return w
}

// act appends a command as the gateway would once the caller is allowed.
func (w *migWorld) act(mig, instance string, a events.MigrationAction, mod ...func(*events.MigrationActionRequested)) {
	w.t.Helper()
	c := events.MigrationActionRequested{Migration: mig, Instance: instance, Action: a, Account: "alice", Role: events.RoleOperator}
	for _, f := range mod {
		f(&c)
	}
	w.appendEvent(c, "operator:alice", string(a)+" "+instance, mig)
}

// records returns the migration's records, in log order.
func (w *migWorld) records(mig string) []events.MigrationStateChanged {
	var out []events.MigrationStateChanged
	for _, e := range w.read(events.TopicMigrations) {
		if e.Type == events.TypeMigrationStateChanged {
			if r := must[events.MigrationStateChanged](w.t, e); r.Migration == mig {
				out = append(out, r)
			}
		}
	}
	return out
}

// await waits for a record of mig that cond accepts, and returns it.
func (w *migWorld) await(mig, what string, cond func(events.MigrationStateChanged) bool) events.MigrationStateChanged {
	w.t.Helper()
	var got events.MigrationStateChanged
	w.waitFor(mig+" "+what, func() bool {
		rs := w.records(mig)
		for i := len(rs) - 1; i >= 0; i-- {
			if cond(rs[i]) {
				got = rs[i]
				return true
			}
		}
		return false
	})
	return got
}

func (w *migWorld) awaitState(mig string, st events.MigrationState) events.MigrationStateChanged {
	w.t.Helper()
	return w.await(mig, "to be "+string(st), func(r events.MigrationStateChanged) bool { return r.State == st })
}

func (w *migWorld) awaitMessage(mig, part string) events.MigrationStateChanged {
	w.t.Helper()
	return w.await(mig, "to say "+part, func(r events.MigrationStateChanged) bool { return strings.Contains(r.Message, part) })
}

// placements lists the primaries InstancePlaced gave instance, in order.
func (w *migWorld) placements(instance string) []string {
	var out []string
	for _, e := range w.read(events.TopicInventory) {
		if e.Type == events.TypeInstancePlaced {
			if p := must[events.InstancePlaced](w.t, e); p.Instance == instance {
				out = append(out, p.PrimaryNode)
			}
		}
	}
	return out
}

// dispatches lists the phases dispatched to n1 (one partition: in order).
func (w *migWorld) dispatches() []events.MigrationPhaseDispatched {
	var out []events.MigrationPhaseDispatched
	for _, e := range w.read(events.TopicOpcodes) {
		if e.Type == events.TypeMigrationPhaseDispatched {
			out = append(out, must[events.MigrationPhaseDispatched](w.t, e))
		}
	}
	return out
}

func TestMigrationAutomaticSwitchesThenFinalizes(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, false, nil)
	w.act("m1", "vm1", events.ActionAutomatic)
	r := w.awaitState("m1", events.MigrationSuccessful)
	if !r.Switched || r.Finalized || r.Target == "" || r.Target == "n1" || r.Source != "n1" || r.Syncs < 2 ||
		r.PriorRunState != events.RunRunning || !r.Automatic {
		t.Fatalf("after the switch: %+v", r)
	}
	if got := w.placements("vm1"); !slices.Equal(got, []string{r.Target}) {
		t.Fatalf("placements %v, want [%s]", got, r.Target)
	}
	states := []events.MigrationState{}
	for _, x := range w.records("m1") {
		if len(states) == 0 || states[len(states)-1] != x.State {
			states = append(states, x.State)
		}
	}
	if !slices.Equal(states, []events.MigrationState{events.MigrationRunning, events.MigrationSuccessful}) {
		t.Fatalf("states %v", states)
	}
	if p, _, _ := w.sim.Locate(w.ctx, "vm1"); p != r.Target {
		t.Fatalf("the simulator has vm1 on %s", p)
	}
	w.act("m1", "vm1", events.ActionFinalize)
	f := w.await("m1", "finalized", func(r events.MigrationStateChanged) bool { return r.Finalized })
	if f.State != events.MigrationSuccessful {
		t.Fatalf("finalized record %+v", f)
	}
}

func TestMigrationOnDemandInOrderThenRollback(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, false, nil)
	w.act("m1", "vm1", events.ActionBegin, func(a *events.MigrationActionRequested) { a.Target = "n3" })
	r := w.await("m1", "begun", func(r events.MigrationStateChanged) bool {
		return r.State == events.MigrationPaused && r.Phase == events.PhaseBegin
	})
	if r.Target != "n3" || r.Automatic {
		t.Fatalf("after begin: %+v", r)
	}
	w.act("m1", "vm1", events.ActionSwitch)
	w.awaitMessage("m1", "switch refused: switch before any sync")
	w.act("m1", "vm1", events.ActionPause)
	w.awaitMessage("m1", "pause refused: pause only during sync")
	w.act("m1", "vm1", events.ActionSync)
	r = w.await("m1", "synced", func(r events.MigrationStateChanged) bool {
		return r.State == events.MigrationPaused && r.Syncs == 1
	})
	if r.LastSyncBytes != 1<<30 {
		t.Fatalf("first sync sent %d bytes, want the whole disk", r.LastSyncBytes)
	}
	w.act("m1", "vm1", events.ActionSwitch)
	w.awaitState("m1", events.MigrationSuccessful)
	w.act("m1", "vm1", events.ActionAbort)
	w.awaitMessage("m1", "abort refused: the switch has committed")
	w.act("m1", "vm1", events.ActionRollback)
	r = w.awaitState("m1", events.MigrationAborted)
	if r.Switched || !strings.Contains(r.Message, "rolled back") {
		t.Fatalf("after rollback: %+v", r)
	}
	if got := w.placements("vm1"); !slices.Equal(got, []string{"n3", "n1"}) {
		t.Fatalf("placements %v, want [n3 n1]", got)
	}
	if p, _, _ := w.sim.Locate(w.ctx, "vm1"); p != "n1" {
		t.Fatalf("the simulator has vm1 on %s after the rollback", p)
	}
}

func TestMigrationPauseDuringSyncThenSyncThenSwitch(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, false, nil)
	w.act("m1", "big", events.ActionBegin)
	w.await("m1", "begun", func(r events.MigrationStateChanged) bool { return r.State == events.MigrationPaused })
	w.act("m1", "big", events.ActionSync)
	w.await("m1", "syncing", func(r events.MigrationStateChanged) bool {
		return r.State == events.MigrationRunning && r.Phase == events.PhaseSync
	})
	w.act("m1", "big", events.ActionPause)
	// The pause stops the running sync at once: no sync completes.
	r := w.await("m1", "paused, its sync stopped", func(r events.MigrationStateChanged) bool {
		return r.State == events.MigrationPaused && strings.Contains(r.Message, "sync 1 stopped")
	})
	if r.Syncs != 0 || r.Phase != events.PhaseSync {
		t.Fatalf("paused record %+v, want no sync complete and phase sync", r)
	}
	var ends []events.End
	for _, e := range w.read(events.TopicProgress) {
		if e.Type == events.TypeEnd {
			if x := must[events.End](t, e); x.Request == "m1" && x.Phase == events.PhaseSync {
				ends = append(ends, x)
			}
		}
	}
	if len(ends) != 1 || ends[0].State != events.EndPaused {
		t.Fatalf("the sync's end events %+v, want one: paused", ends)
	}
	w.act("m1", "big", events.ActionPause)
	w.awaitMessage("m1", "pause refused")
	w.act("m1", "big", events.ActionSync)
	w.await("m1", "synced again", func(r events.MigrationStateChanged) bool {
		return r.State == events.MigrationPaused && r.Syncs == 1
	})
	w.act("m1", "big", events.ActionSwitch)
	r = w.awaitState("m1", events.MigrationSuccessful)
	if !r.Switched || r.Syncs != 1 {
		t.Fatalf("after the switch: %+v", r)
	}
}

func TestMigrationAbortDuringSyncRestoresTheSource(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, false, nil)
	w.act("m1", "big", events.ActionAutomatic)
	w.await("m1", "syncing", func(r events.MigrationStateChanged) bool { return r.Phase == events.PhaseSync })
	w.act("m1", "big", events.ActionAbort)
	r := w.awaitState("m1", events.MigrationAborted)
	if r.Switched || r.PriorRunState != events.RunRunning || !strings.Contains(r.Message, "back on n1, running") {
		t.Fatalf("aborted record %+v", r)
	}
	if got := w.placements("big"); len(got) != 0 {
		t.Fatalf("an aborted migration placed big: %v", got)
	}
	if p, _, _ := w.sim.Locate(w.ctx, "big"); p != "n1" {
		t.Fatalf("the simulator has big on %s", p)
	}
	w.act("m1", "big", events.ActionSync)
	w.awaitMessage("m1", "sync refused: the migration is aborted")
}

func TestMigrationScheduledWaitsRescheduledAborted(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, false, nil)
	at := w.clock.now().Add(time.Hour)
	w.act("m1", "vm1", events.ActionSchedule, func(a *events.MigrationActionRequested) { a.ScheduledAt = &at })
	r := w.awaitState("m1", events.MigrationScheduled)
	if r.Syncs != 1 || r.Switched {
		t.Fatalf("scheduled record %+v", r)
	}
	later := at.Add(time.Hour)
	w.act("m1", "vm1", events.ActionSchedule, func(a *events.MigrationActionRequested) { a.ScheduledAt = &later })
	r = w.awaitMessage("m1", "switch scheduled at")
	if r.ScheduledAt == nil || !r.ScheduledAt.Equal(later) || r.State != events.MigrationScheduled {
		t.Fatalf("rescheduled record %+v", r)
	}
	w.act("m1", "vm1", events.ActionAbort)
	r = w.awaitState("m1", events.MigrationAborted)
	if r.PriorRunState != events.RunRunning || len(w.placements("vm1")) != 0 {
		t.Fatalf("aborted record %+v, placements %v", r, w.placements("vm1"))
	}

	// Another one switches once its time comes.
	at2 := w.clock.now().Add(time.Hour)
	w.act("m2", "vm2", events.ActionSchedule, func(a *events.MigrationActionRequested) { a.ScheduledAt = &at2 })
	w.awaitState("m2", events.MigrationScheduled)
	w.clock.advance(2 * time.Hour)
	r = w.awaitState("m2", events.MigrationSuccessful)
	if !r.Switched {
		t.Fatalf("scheduled switch: %+v", r)
	}
}

func TestSecondMigrationOfAMigratingInstanceRefused(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, false, nil)
	w.act("m1", "vm1", events.ActionBegin)
	w.awaitState("m1", events.MigrationPaused)
	w.act("m2", "vm1", events.ActionAutomatic)
	r := w.awaitState("m2", events.MigrationFailed)
	if !strings.Contains(r.Error, "already migrating: migration m1") {
		t.Fatalf("refused record %+v", r)
	}
	if got := len(w.records("m2")); got != 1 {
		t.Fatalf("%d records of the refused migration", got)
	}
}

func TestMaxRunningMigrationsPerNodeQueuesInCreationOrder(t *testing.T) {
	t.Parallel()
	s := events.DefaultSettings()
	s.MaxRunningMigrationsPerNode = 1
	w := newMigWorld(t, false, &s)
	w.act("m1", "vm1", events.ActionAutomatic)
	w.act("m2", "vm2", events.ActionAutomatic)
	w.act("m3", "vm3", events.ActionAutomatic)
	for _, m := range []string{"m1", "m2", "m3"} {
		w.awaitState(m, events.MigrationSuccessful)
	}
	// Each later migration was first recorded queued; its later states
	// may come and go faster than a poll, so the records are read after.
	for _, m := range []string{"m2", "m3"} {
		if rs := w.records(m); rs[0].State != events.MigrationQueued {
			t.Fatalf("%s first recorded %s, want queued", m, rs[0].State)
		}
	}
	// One partition (n1) holds every dispatch: each migration's phases
	// all come before the next migration's first.
	var order []string
	for _, d := range w.dispatches() {
		if len(order) == 0 || order[len(order)-1] != d.Migration {
			order = append(order, d.Migration)
		}
	}
	if !slices.Equal(order, []string{"m1", "m2", "m3"}) {
		t.Fatalf("dispatch order by migration %v, want one at a time in creation order", order)
	}
}

func TestStalledPhaseIsRetriedThenFails(t *testing.T) {
	s := events.DefaultSettings()
	s.ProgressTimeoutSeconds = 5
	w := newMigWorld(t, true, &s) // no executor: nothing ever reports progress
	w.act("m1", "vm1", events.ActionAutomatic)
	count := func() int { return len(w.dispatches()) }
	w.waitFor("begin dispatched", func() bool { return count() == 1 })
	for i := 1; i <= 2; i++ {
		w.clock.advance(6 * time.Second)
		w.waitFor(fmt.Sprintf("retry %d", i), func() bool { return count() == i+1 })
		w.awaitMessage("m1", fmt.Sprintf("retry %d of 2", i))
	}
	w.clock.advance(6 * time.Second)
	r := w.awaitState("m1", events.MigrationFailed)
	if !strings.Contains(r.Error, "phase begin stalled") {
		t.Fatalf("failed record %+v", r)
	}
	ds := w.dispatches()
	var phases []string
	for _, d := range ds {
		phases = append(phases, fmt.Sprintf("%d:%s", d.Seq, d.Phase))
	}
	if !slices.Equal(phases, []string{"0:begin", "1:begin", "2:begin", "3:abort"}) {
		t.Fatalf("dispatches %v", phases)
	}
}

func contextWithCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}

// An evacuation that would move an instance a migration is moving is
// rejected, naming the migration: the two would move it at once (test/chaos
// found an instance placed twice that way).
func TestEvacuationOfAMigratingInstanceRejected(t *testing.T) {
	t.Parallel()
	w := newMigWorld(t, false, nil)
	w.act("m1", "vm1", events.ActionBegin)
	w.awaitState("m1", events.MigrationPaused)
	evacuate(w.harness, "r1", false, "n1")
	rej, err := events.As[events.RequestRejected](w.closed("r1"))
	if err != nil {
		t.Fatalf("r1 closed by something else than a rejection: %v", err)
	}
	if !strings.Contains(rej.Reason, `"vm1" is being migrated by migration m1`) {
		t.Fatalf("rejected for %q; want the migration named", rej.Reason)
	}
}
