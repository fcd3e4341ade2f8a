package process_test

import (
	"context"
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

// newProcWorld is one process driver per node of the suite, joined into
// one driver as the nodes' executors join them (drivertest.World).
func newProcWorld(t *testing.T) *drivertest.World {
	t.Helper()
	out := filepath.Join(t.TempDir(), "where")
	nodes := map[string]*process.Driver{}
	w := &drivertest.World{Order: []string{drivertest.Node1, drivertest.Node2, drivertest.Node3}, Nodes: map[string]drivertest.Node{},
		// A stopped instance is nowhere the process driver can tell.
		Runs: func(ctx context.Context, node, instance string) (bool, error) {
			st, err := nodes[node].Status(ctx, instance)
			return st.Running, err
		}}
	for _, n := range w.Order {
		nodes[n] = newNode(t, n, sleeper(out))
		w.Nodes[n] = nodes[n]
	}
	for _, in := range drivertest.FixtureFor(shared) {
		if in.RunState == events.RunRunning {
			if err := nodes[in.Primary].Start(t.Context(), in.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}
