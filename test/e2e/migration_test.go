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
)

// Per-instance migrations (RFD 34) through the HTTP API against the whole
// system: the gateway, the coordinator in the planner service, the sim
// executors and the projector.

// movable returns n running zfs-local instances (moved by per-instance
// migrations), the first from the node with the most of them.
func (e *env) movable(n int) []instance {
	e.t.Helper()
	byNode := map[string][]instance{}
	var best string
	for _, in := range e.instances("") {
		if in.Storage != "zfs-local" {
			continue
		}
		byNode[in.Primary] = append(byNode[in.Primary], in)
		if len(byNode[in.Primary]) > len(byNode[best]) {
			best = in.Primary
		}
	}
	if len(byNode[best]) < n {
		e.t.Fatalf("no node has %d zfs-local instances", n)
	}
	return byNode[best][:n]
}

// migration reads a per-instance migration's record.
func (e *env) migration(id string) client.Migration {
	e.t.Helper()
	m, err := e.api.Migration(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return *m
}

// awaitState waits until the migration's record is in one of states.
func (e *env) awaitState(id string, within time.Duration, states ...string) client.Migration {
	e.t.Helper()
	return e.awaitRecord(id, within, strings.Join(states, " or "), func(m client.Migration) bool {
		return slices.Contains(states, m.State)
	})
}

// awaitRecord waits until the migration's record satisfies ok.
func (e *env) awaitRecord(id string, within time.Duration, what string, ok func(client.Migration) bool) client.Migration {
	e.t.Helper()
	var m client.Migration
	e.waitFor("migration "+id+": "+what, within, func() bool {
		got, err := e.api.Migration(context.Background(), id)
		if err == nil {
			m = *got
		}
		return err == nil && ok(m)
	})
	return m
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
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != status || !strings.Contains(ae.Message, want) {
		e.t.Fatalf("%s of %s: %v, want %d with %q", action, instance, err, status, want)
	}
}

// watchAll reads a migration watch stream to its end.
func (e *env) watchAll(instance, id string, within time.Duration) []client.MigrationEvent {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var evs []client.MigrationEvent
	err := e.api.WatchMigration(ctx, instance, id, func(ev client.MigrationEvent) bool {
		evs = append(evs, ev)
		return true
	})
	if err != nil {
		e.t.Fatalf("watching %s: %v (after %d events)", instance, err, len(evs))
	}
	return evs
}

func TestMigrationAutomaticWatchedTwice(t *testing.T) {
	e := start(t)
	in := e.movable(1)[0]
	id := e.act(in.Name, "automatic", client.MigrateOptions{})
	var wg sync.WaitGroup
	streams := make([][]client.MigrationEvent, 2)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streams[i] = e.watchAll(in.Name, id, 2*time.Minute)
		}()
	}
	wg.Wait()
	m := e.awaitState(id, time.Minute, "successful")
	if !m.Switched || m.Syncs < 1 || e.instance(in.Name).Primary != m.Target {
		t.Fatalf("record %+v; instance on %s", m, e.instance(in.Name).Primary)
	}
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
	seqs := func(evs []client.MigrationEvent) []int64 {
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
	e.awaitRecord(id, time.Minute, "paused after one sync", func(m client.Migration) bool {
		return m.State == "paused" && m.Syncs == 1
	})
	e.act(in.Name, "switch", client.MigrateOptions{})
	m := e.awaitState(id, time.Minute, "successful")
	if !m.Switched || e.instance(in.Name).Primary != m.Target {
		t.Fatalf("after the switch: %+v", m)
	}
	e.refused(in.Name, "abort", http.StatusConflict, "rollback")
	e.act(in.Name, "rollback", client.MigrateOptions{})
	m = e.awaitState(id, time.Minute, "aborted")
	if e.instance(in.Name).Primary != m.Source {
		t.Fatalf("after the rollback the instance is on %s, want %s", e.instance(in.Name).Primary, m.Source)
	}
}

func TestMigrationEstimate(t *testing.T) {
	e := start(t)
	in := e.movable(1)[0]
	est, err := e.api.Estimate(context.Background(), in.Name, client.MigrateOptions{})
	if err != nil || est.TotalSeconds <= 0 || est.Bytes <= 0 || !strings.Contains(est.How, "link") {
		t.Fatalf("estimate %+v, %v", est, err)
	}
}
