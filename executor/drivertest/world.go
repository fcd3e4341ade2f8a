package drivertest

import (
	"context"
	"fmt"

	"github.com/drovehq/drove/executor"
)

// Node is one node's driver in a World: a runtime driver that runs both
// sides of an opcode and of a migration phase.
type Node interface {
	executor.Driver
	executor.Migrator
	executor.Receiver
}

// World joins one driver per node into the one driver the suite drives,
// as the nodes' executors join them: the target's Receive runs beside
// the source's Run or Phase (Pair, PairPhase) and learns nothing but its
// address. The process and QEMU drivers' suites run on one.
type World struct {
	Order []string // the nodes, Node1 to Node3
	Nodes map[string]Node
	// Settle: a Run that succeeded waits for the target to finish its
	// side (Pair's settle: an incoming VM resumes a moment later).
	Settle bool
	// Runs says whether node runs instance, for Locate: the one node
	// that does is its primary.
	Runs func(ctx context.Context, node, instance string) (bool, error)
}

func (w *World) pair(from, to string) error {
	if w.Nodes[from] == nil || w.Nodes[to] == nil || from == to {
		return executor.Fatal(fmt.Errorf("world: no move from %q to %q", from, to))
	}
	return nil
}

// Run runs op on op.From with op.To's Receive serving it.
func (w *World) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (res executor.Result, err error) {
	if err := w.pair(op.From, op.To); err != nil {
		return res, err
	}
	err = Pair(ctx, w.Nodes[op.To], op, w.Settle, func(await func(context.Context) (string, error)) error {
		op.AwaitReceiver = await
		res, err = w.Nodes[op.From].Run(ctx, op, report)
		return err
	})
	return res, err
}

// Phase runs mp on its source with its target's Receive serving it.
func (w *World) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	if err := w.pair(mp.Source, mp.Target); err != nil {
		return executor.PhaseResult{}, err
	}
	return PairPhase(ctx, w.Nodes[mp.Target], mp, func(mp executor.MigrationPhase) (executor.PhaseResult, error) {
		return w.Nodes[mp.Source].Phase(ctx, mp, report)
	})
}

// Estimate asks the source's driver.
func (w *World) Estimate(ctx context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	return w.Nodes[mp.Source].Estimate(ctx, mp)
}

// Locate is the one node that runs the instance; a runtime driver keeps
// no secondary.
func (w *World) Locate(ctx context.Context, instance string) (string, string, error) {
	var running []string
	for _, n := range w.Order {
		runs, err := w.Runs(ctx, n, instance)
		if err != nil {
			return "", "", err
		}
		if runs {
			running = append(running, n)
		}
	}
	if len(running) != 1 {
		return "", "", fmt.Errorf("%s runs on %v", instance, running)
	}
	return running[0], "", nil
}

var (
	_ executor.Driver   = (*World)(nil)
	_ executor.Migrator = (*World)(nil)
	_ Locator           = (*World)(nil)
)
