package process_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/drivertest"
	"github.com/drovehq/drove/executor/process"
)

// shared is the storage the process driver's suite runs on: its data is
// not the process driver's business, so the fixture's shared instance.
var shared = []events.StorageKind{events.StorageRBD}

// TestDriverContract runs drivertest's opcode part and its migration
// part against three process drivers, wired as their executors would.
func TestDriverContract(t *testing.T) {
	drivertest.RunFor(t, shared, func(t *testing.T) executor.Driver { return newProcWorld(t) })
	drivertest.RunMigrations(t, shared, func(t *testing.T) executor.Migrator { return newProcWorld(t) })
}

// procWorld is one process driver per node of the suite, joined into one
// driver as the nodes' executors join them: the target's Receive runs
// beside the source's Run or Phase and learns nothing but its address.
type procWorld struct {
	order []string
	nodes map[string]*process.Driver
}

func newProcWorld(t *testing.T) *procWorld {
	t.Helper()
	out := filepath.Join(t.TempDir(), "where")
	w := &procWorld{order: []string{drivertest.Node1, drivertest.Node2, drivertest.Node3}, nodes: map[string]*process.Driver{}}
	for _, n := range w.order {
		w.nodes[n] = newNode(t, n, sleeper(out))
	}
	for _, in := range drivertest.FixtureFor(shared) {
		if in.RunState == events.RunRunning {
			if err := w.nodes[in.Primary].Start(t.Context(), in.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

// pair runs src on from with to's Receive serving it (drivertest.Pair).
func (w *procWorld) pair(ctx context.Context, from, to string, rop executor.Op, settle bool, src func(await func(context.Context) (string, error)) error) error {
	if w.nodes[from] == nil || w.nodes[to] == nil || from == to {
		return executor.Fatal(fmt.Errorf("world: no move from %q to %q", from, to))
	}
	return drivertest.Pair(ctx, w.nodes[to], rop, settle, src)
}

func (w *procWorld) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (res executor.Result, err error) {
	err = w.pair(ctx, op.From, op.To, op, false, func(await func(context.Context) (string, error)) error {
		op.AwaitReceiver = await
		res, err = w.nodes[op.From].Run(ctx, op, report)
		return err
	})
	return res, err
}

func (w *procWorld) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (res executor.PhaseResult, err error) {
	rop := executor.Op{Request: mp.Migration, Index: mp.Seq, Kind: events.OpInstanceMigrate,
		Mode: executor.MigrationModePrefix + mp.Phase, Instance: mp.Instance, Storage: mp.Storage,
		RunState: mp.RunState, From: mp.Source, To: mp.Target}
	err = w.pair(ctx, mp.Source, mp.Target, rop, false, func(await func(context.Context) (string, error)) error {
		mp.AwaitReceiver = await
		res, err = w.nodes[mp.Source].Phase(ctx, mp, report)
		return err
	})
	return res, err
}

func (w *procWorld) Estimate(ctx context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	return w.nodes[mp.Source].Estimate(ctx, mp)
}

// Locate: the node whose process runs the instance; a stopped instance
// is nowhere the process driver can tell.
func (w *procWorld) Locate(ctx context.Context, instance string) (string, string, error) {
	var running []string
	for _, n := range w.order {
		st, err := w.nodes[n].Status(ctx, instance)
		if err != nil {
			return "", "", err
		}
		if st.Running {
			running = append(running, n)
		}
	}
	if len(running) != 1 {
		return "", "", fmt.Errorf("%s runs on %v", instance, running)
	}
	return running[0], "", nil
}

var (
	_ executor.Driver    = (*procWorld)(nil)
	_ executor.Migrator  = (*procWorld)(nil)
	_ drivertest.Locator = (*procWorld)(nil)
)
