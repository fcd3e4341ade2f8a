package drivertest

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Pair runs the source side of a move, src, with dst's Receive serving it
// beside it, as the target node's executor runs it: src gets the function
// the executor puts in Op.AwaitReceiver (or MigrationPhase.AwaitReceiver).
// A world that joins one driver per node into the one driver the suite
// drives uses it for Run and Phase. With settle, a source that succeeded
// leaves the receiver up to 30 s to finish its side (an incoming VM
// resumes the guest a moment after the source saw the migration end).
// Once src has returned the receiver is stopped and awaited: as cancelled
// when an opcode's source failed for good (the target rolls back), as
// merely ended for a migration phase, whose end never rolls anything back
// on the target by itself (executor/migration_receive.go).
func Pair(ctx context.Context, dst executor.Receiver, rop executor.Op, settle bool,
	src func(await func(context.Context) (string, error)) error) error {
	rctx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	var addr string
	announced, ended := make(chan struct{}), make(chan struct{})
	rop.ListenAddr = "127.0.0.1:0"
	go func() {
		defer close(ended)
		_ = dst.Receive(rctx, rop, func(a string) { addr = a; close(announced) }, func(executor.Progress) {})
	}()
	err := src(func(ctx context.Context) (string, error) {
		select {
		case <-announced:
			return addr, nil
		case <-ended:
			return "", fmt.Errorf("drivertest: the receiver on %s ended before it listened", rop.To)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	if err == nil && settle {
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
		}
	}
	if _, phase := rop.MigrationPhaseOf(); err != nil && !executor.IsTransient(err) && !phase {
		stop(fmt.Errorf("%w: the source's side failed", executor.ErrCanceled))
	} else {
		stop(fmt.Errorf("the source's side ended"))
	}
	<-ended
	return err
}

// PairPhase runs mp on its source, src, with dst's Receive serving it as
// the target node's executor would: on the Op it derives from the phase's
// dispatch (executor.MigrationPhaseOf: the migration as Request, the
// phase's seq as Index).
func PairPhase(ctx context.Context, dst executor.Receiver, mp executor.MigrationPhase,
	src func(executor.MigrationPhase) (executor.PhaseResult, error)) (executor.PhaseResult, error) {
	rop := executor.Op{Request: mp.Migration, Index: mp.Seq, Kind: events.OpInstanceMigrate,
		Mode: executor.MigrationModePrefix + mp.Phase, Instance: mp.Instance, Size: mp.Size, Storage: mp.Storage,
		RunState: mp.RunState, From: mp.Source, To: mp.Target}
	var res executor.PhaseResult
	err := Pair(ctx, dst, rop, false, func(await func(context.Context) (string, error)) error {
		mp.AwaitReceiver = await
		var err error
		res, err = src(mp)
		return err
	})
	return res, err
}
