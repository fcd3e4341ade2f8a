// Package service is the planner service's loop: it reads the log from
// Kafka, folds it, asks the decision packages what the state calls for,
// and appends their decisions. The decisions themselves live beside it,
// pure and tested directly:
//
//   - planner/inventory folds drove.inventory into the planner's snapshot;
//   - planner/jobs is the job queue: requests become plans (validated,
//     planned with the evacuated nodes drained, a dry run refreshed on
//     approval), jobs are released within the running limits or cancelled
//     when their dependencies fail or the request is cancelled, opcodes are
//     dispatched one after another, and the request finishes with
//     RequestFinished (DESIGN.md, "The backbone", steps 2, 4 and 5);
//   - planner/migration is the RFD 34 coordinator of per-instance
//     migrations.
//
// The planner packages never import this one.
//
// # State is a fold of the log
//
// The service keeps no database and no consumer-group offsets. Each Run
// first takes the transactional id over (fencing an older instance, whose
// open transaction is aborted), then reads its topics up to their last
// stable offsets — from offset zero, or from the positions of its latest
// snapshot (snapshot.go) with the state the snapshot holds — then keeps
// following them, read-committed, with events/kafka's Reader. A consumer
// group would add nothing: where to resume belongs with the state it
// resumes, in the snapshot. Not using one also means no rebalances and no
// second instance silently sharing the partitions. Closed requests and
// ended migrations leave the state, so what a pass and a snapshot cost is
// what is active.
//
// Decisions are level-triggered: after each poll (and once after the
// replay) the loop calls jobs.Decide for every active request, oldest
// first, then migration.Decide for every migration, oldest first. Each
// decision is applied to the state at once and one request's or
// migration's events are appended in one transaction. The folds only set
// facts (a job released, an opcode ended, ...), so reading the service's
// own events back is a no-op, and the order in which topics are read
// against each other does not matter. Hence:
//
//   - a crash before a commit loses nothing: the transaction is aborted,
//     the replayed state lacks the decision, and the pass takes it again;
//   - a crash after a commit doubles nothing: the replayed state holds the
//     decision, and the pass finds nothing left to do;
//   - if an append fails for good, Run returns (ErrAppend) rather than go
//     on from a state the log does not hold.
//
// Limits: each sending node (the From nodes of a job's opcodes) runs at
// most MaxMovesPerNode jobs at once (the request's max_moves_per_node, else
// Options.MaxMovesPerNode), and the cluster MaxRunningMoves; when a job
// ends the oldest request's waiting jobs go first.
//
// Every event it writes is caused by the event that triggered it (causation
// id), belongs to the request (correlation id), and carries the reason
// {Actor: "planner", Why: what and why, with the requester's own actor and
// reason quoted}.
//
// # Per-instance migrations (RFD 34)
//
// The loop also feeds planner/migration: it folds drove.migrations,
// drove.settings and drove.progress with the rest, and wakes on a tick
// (Config.Tick, Config.Clock) even when nothing is read, so the
// coordinator's timers fire: a queued migration's free slot, a scheduled
// switch, the finalize grace period, the progress timeout (a phase is
// dispatched again Config.StallRetries times, then fails).
//
// InventoryEvents and Seed state a planner.Cluster as inventory events, for
// `drove seed` (including a Ganeti IAllocator file) and the demo.
package service
