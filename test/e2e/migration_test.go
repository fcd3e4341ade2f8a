package e2e

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
)

// Per-instance migrations (RFD 34) through the HTTP API against the whole
// system: the gateway, the coordinator in the planner service, the sim
// executors and the projector.

// movable returns n instances a per-instance migration can move (their
// data copied, zfs-local, or mirrored externally), all from the node with
// the most of them.
func (e *env) movable(n int) []instance {
	e.t.Helper()
	byNode := map[string][]instance{}
	var best string
	for _, in := range e.instances("") {
		switch in.Storage {
		case "zfs-local", "rbd", "sharedfile", "ext", "gluster", "blockdev":
		default:
			continue
		}
		byNode[in.Primary] = append(byNode[in.Primary], in)
		if len(byNode[in.Primary]) > len(byNode[best]) {
			best = in.Primary
		}
	}
	if len(byNode[best]) < n {
		e.t.Fatalf("no node has %d instances a migration can move", n)
	}
	return byNode[best][:n]
}

// migration reads a per-instance migration's record.
func (e *env) migration(id string) wire.InstanceMigration {
	e.t.Helper()
	m, err := e.api.Migration(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return *m
}

// awaitState waits until the migration's record is in one of states.
func (e *env) awaitState(id string, within time.Duration, states ...string) wire.InstanceMigration {
	e.t.Helper()
	return e.awaitRecord(id, within, strings.Join(states, " or "), func(m wire.InstanceMigration) bool {
		return slices.Contains(states, m.State)
	})
}

// awaitRecord waits until the migration's record satisfies ok.
func (e *env) awaitRecord(id string, within time.Duration, what string, ok func(wire.InstanceMigration) bool) wire.InstanceMigration {
	e.t.Helper()
	var m wire.InstanceMigration
	var err error
	deadline := time.Now().Add(within)
	for backoff := 10 * time.Millisecond; ; backoff = min(backoff*2, 250*time.Millisecond) {
		var got *wire.InstanceMigration
		if got, err = e.api.Migration(context.Background(), id); err == nil {
			m = *got
			if ok(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			// The record as last seen says where the migration stuck.
			e.t.Fatalf("timed out after %s waiting for migration %s: %s; last read: %+v (error %v)", within, id, what, m, err)
		}
		time.Sleep(backoff) // polling the API under a deadline
	}
}

// act runs a migration action and returns the migration id, failing the
// test unless it was accepted.
func (e *env) act(instance, action string, o client.MigrateOptions) string {
	e.t.Helper()
	a, err := e.api.Migrate(context.Background(), instance, action, o)
	if err != nil {
		e.t.Fatalf("%s of %s: %v", action, instance, err)
	}
	return a.Migration
}

// refused checks that an action is refused with status and a message
// holding want.
func (e *env) refused(instance, action string, status int, want string) {
	e.t.Helper()
	_, err := e.api.Migrate(context.Background(), instance, action, client.MigrateOptions{})
	var ae *wire.Error
	if !errors.As(err, &ae) || ae.Status != status || !strings.Contains(ae.Message, want) {
		e.t.Fatalf("%s of %s: %v, want %d with %q", action, instance, err, status, want)
	}
}

// awaitPrimary waits for the instances view to place name on node. The
// view and the migration record are separate projections of the log, so
// a record can show the switch a moment before the view does.
func (e *env) awaitPrimary(name, node string, within time.Duration) {
	e.t.Helper()
	e.waitFor(name+" on "+node+" in the instances view", within, func() bool {
		return e.instance(name).Primary == node
	})
}

// watchAll reads a migration watch stream to its end.
func (e *env) watchAll(instance, id string, within time.Duration) []wire.MigrationLine {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var evs []wire.MigrationLine
	err := e.api.WatchMigration(ctx, instance, id, func(ev wire.MigrationLine) bool {
		evs = append(evs, ev)
		return true
	})
	if err != nil {
		e.t.Fatalf("watching %s: %v (after %d events)", instance, err, len(evs))
	}
	return evs
}

func TestMigrationAutomaticWatchedTwice(t *testing.T) {
	t.Parallel()
	e := start(t)
	in := e.movable(1)[0]
	id := e.act(in.Name, "automatic", client.MigrateOptions{})
	var wg sync.WaitGroup
	streams := make([][]wire.MigrationLine, 2)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streams[i] = e.watchAll(in.Name, id, 2*time.Minute)
		}()
	}
	wg.Wait()
	m := e.awaitState(id, time.Minute, "successful")
	if !m.Switched || m.Syncs < 1 {
		t.Fatalf("record %+v", m)
	}
	e.awaitPrimary(in.Name, m.Target, time.Minute)
	for i, s := range streams {
		if len(s) == 0 || s[len(s)-1].Type != "end" || s[len(s)-1].Phase != "switch" {
			t.Fatalf("watcher %d: stream does not end with the switch's end: %+v", i, s)
		}
		last := map[int]float64{}
		for _, ev := range s {
			if ev.Percent != nil {
				if *ev.Percent < last[ev.Index] {
					t.Fatalf("watcher %d: percent went back from %v to %v", i, last[ev.Index], *ev.Percent)
				}
				last[ev.Index] = *ev.Percent
			}
		}
	}
	// A late watcher of the finished migration gets the whole history,
	// ending with the end event; watchers all see the same.
	replay := e.watchAll(in.Name, id, 30*time.Second)
	if len(replay) < len(streams[0]) || replay[len(replay)-1].Type != "end" {
		t.Fatalf("replay %d events, live %d", len(replay), len(streams[0]))
	}
	seqs := func(evs []wire.MigrationLine) []int64 {
		var out []int64
		for _, ev := range evs {
			out = append(out, ev.Seq)
		}
		return out
	}
	if !slices.Equal(seqs(streams[0]), seqs(streams[1])) {
		t.Fatalf("two watchers saw different events:\n%v\n%v", seqs(streams[0]), seqs(streams[1]))
	}
	if len(m.History) == 0 {
		t.Fatalf("record has no progress history")
	}
	// Finalize drops the source copy; then nothing is left to roll back.
	e.act(in.Name, "finalize", client.MigrateOptions{})
	e.waitFor("finalized", time.Minute, func() bool { return e.migration(id).Finalized })
	e.refused(in.Name, "rollback", http.StatusConflict, "finalized")
}

func TestMigrationOnDemandPhasesInOrder(t *testing.T) {
	t.Parallel()
	e := start(t)
	in := e.movable(1)[0]
	e.refused(in.Name, "sync", http.StatusConflict, "action=begin")
	e.refused(in.Name, "switch", http.StatusConflict, "action=begin")
	id := e.act(in.Name, "begin", client.MigrateOptions{})
	e.awaitState(id, time.Minute, "paused")
	e.refused(in.Name, "switch", http.StatusConflict, "switch needs at least one completed sync")
	e.refused(in.Name, "pause", http.StatusConflict, "only possible during a sync")
	e.refused(in.Name, "begin", http.StatusConflict, id)
	if err := e.api.Stop(context.Background(), in.Name); err == nil || !strings.Contains(err.Error(), id) {
		t.Fatalf("stop of a migrating instance: %v, want 409 naming %s", err, id)
	}
	e.act(in.Name, "sync", client.MigrateOptions{})
	e.awaitRecord(id, time.Minute, "paused after one sync", func(m wire.InstanceMigration) bool {
		return m.State == "paused" && m.Syncs == 1
	})
	e.act(in.Name, "switch", client.MigrateOptions{})
	m := e.awaitState(id, time.Minute, "successful")
	if !m.Switched {
		t.Fatalf("after the switch: %+v", m)
	}
	e.awaitPrimary(in.Name, m.Target, time.Minute)
	e.refused(in.Name, "abort", http.StatusConflict, "rollback")
	e.act(in.Name, "rollback", client.MigrateOptions{})
	m = e.awaitState(id, time.Minute, "aborted")
	e.awaitPrimary(in.Name, m.Source, time.Minute)
}

func TestMigrationEstimate(t *testing.T) {
	t.Parallel()
	e := start(t)
	in := e.movable(1)[0]
	est, err := e.api.Estimate(context.Background(), in.Name, client.MigrateOptions{})
	if err != nil || est.TotalSeconds <= 0 || est.Bytes <= 0 || !strings.Contains(est.How, "link") {
		t.Fatalf("estimate %+v, %v", est, err)
	}
}

// settings changes the operators' settings through the API.
func (e *env) settings(changes map[string]any) {
	e.t.Helper()
	if _, err := e.api.UpdateSettings(context.Background(), changes); err != nil {
		e.t.Fatal(err)
	}
}

// runState reads where and how an instance runs.
func (e *env) runState(name string) (string, string) {
	e.t.Helper()
	var in struct {
		Primary  string `json:"primary"`
		RunState string `json:"run_state"`
	}
	if err := e.api.Get(context.Background(), "/v1/instances/"+name, &in); err != nil {
		e.t.Fatal(err)
	}
	return in.Primary, in.RunState
}

func TestMigrationAbortAndPause(t *testing.T) {
	t.Parallel()
	e := start(t)
	ins := e.movable(3)
	// Slow sends, so that a sync is still running when we act on it.
	e.settings(map[string]any{"send_mbps_limit": 1})
	syncing := func(m wire.InstanceMigration) bool { return m.State == "running" && m.Phase == "sync" }

	// Abort during a sync: the instance is back where and how it was.
	a := ins[0]
	id := e.act(a.Name, "automatic", client.MigrateOptions{})
	e.awaitRecord(id, time.Minute, "syncing", syncing)
	e.act(a.Name, "abort", client.MigrateOptions{})
	m := e.awaitState(id, time.Minute, "aborted", "failed")
	if node, run := e.runState(a.Name); m.State != "aborted" || node != m.Source || run != "running" {
		t.Fatalf("after abort during sync: record %s, instance on %s %s (source %s)", m.State, node, run, m.Source)
	}
	e.refused(a.Name, "sync", http.StatusConflict, "no migration in progress")

	// Abort during a scheduled wait.
	b := ins[1]
	at := time.Now().Add(time.Hour)
	sm, err := e.api.Schedule(context.Background(), b.Name, client.MigrateOptions{ScheduledAt: &at})
	if err != nil || sm.ScheduledAt == nil {
		t.Fatalf("schedule: %+v %v", sm, err)
	}
	e.settings(map[string]any{"send_mbps_limit": 0})
	e.awaitState(sm.ID, time.Minute, "scheduled")
	e.refused(b.Name, "switch", http.StatusConflict, "scheduled")
	e.act(b.Name, "abort", client.MigrateOptions{})
	m = e.awaitState(sm.ID, time.Minute, "aborted", "failed")
	if node, run := e.runState(b.Name); m.State != "aborted" || node != m.Source || run != "running" {
		t.Fatalf("after abort of a scheduled wait: record %s, instance on %s %s", m.State, node, run)
	}

	// Pause during a sync, then sync, then switch.
	c := ins[2]
	e.settings(map[string]any{"send_mbps_limit": 1})
	id = e.act(c.Name, "begin", client.MigrateOptions{})
	e.awaitState(id, time.Minute, "paused")
	e.act(c.Name, "sync", client.MigrateOptions{})
	e.awaitRecord(id, time.Minute, "syncing", syncing)
	e.act(c.Name, "pause", client.MigrateOptions{})
	// The pause stops the running sync at once (at 1 Mbit/s it would run
	// for minutes): paused with no sync complete.
	e.awaitRecord(id, time.Minute, "the sync stopped by the pause", func(m wire.InstanceMigration) bool {
		return m.State == "paused" && m.Syncs == 0 && strings.Contains(m.Message, "sync 1 stopped")
	})
	e.refused(c.Name, "pause", http.StatusConflict, "only possible during a sync")
	e.settings(map[string]any{"send_mbps_limit": 0})
	e.act(c.Name, "sync", client.MigrateOptions{})
	e.awaitRecord(id, time.Minute, "paused after a whole sync", func(m wire.InstanceMigration) bool {
		return m.State == "paused" && m.Syncs == 1
	})
	e.act(c.Name, "switch", client.MigrateOptions{})
	m = e.awaitState(id, time.Minute, "successful")
	if node, _ := e.runState(c.Name); node != m.Target {
		t.Fatalf("after the switch the instance is on %s, want %s", node, m.Target)
	}
}

// Three migrations from one node with a limit of one run one after the
// other, in the order they were created. The check reads each record once
// its migration has ended, so it does not depend on catching the states
// in between: a migration that waited for the one before it was created
// before that one finished and started after it.
func TestMigrationsQueuePerNode(t *testing.T) {
	t.Parallel()
	e := start(t)
	ins := e.movable(3)
	e.settings(map[string]any{"max_running_migrations_per_node": 1, "send_mbps_limit": 40})
	var ids []string
	for _, in := range ins {
		ids = append(ids, e.act(in.Name, "automatic", client.MigrateOptions{}))
		// Created in this order: wait until the coordinator recorded it.
		e.awaitState(ids[len(ids)-1], time.Minute, "running", "queued")
	}
	var ms []wire.InstanceMigration
	for _, id := range ids {
		m := e.awaitState(id, 3*time.Minute, "successful", "failed", "aborted")
		if m.State != "successful" {
			t.Fatalf("migration %s ended %s: %s", id, m.State, m.Error)
		}
		ms = append(ms, m)
	}
	for i := 1; i < len(ms); i++ {
		prev, cur := ms[i-1], ms[i]
		if cur.CreatedAt == nil || cur.StartedAt == nil || prev.FinishedAt == nil {
			t.Fatalf("migration %d or %d lacks its times: %+v %+v", i-1, i, prev, cur)
		}
		if cur.StartedAt.Before(*prev.FinishedAt) {
			t.Fatalf("2 migrations ran from one node at once (the limit is 1): migration %d started at %v, before migration %d finished at %v",
				i, cur.StartedAt, i-1, prev.FinishedAt)
		}
	}
	if !ms[1].CreatedAt.Before(*ms[0].FinishedAt) {
		t.Fatalf("no migration was ever queued: the second was created at %v, after the first finished at %v",
			ms[1].CreatedAt, ms[0].FinishedAt)
	}
}
