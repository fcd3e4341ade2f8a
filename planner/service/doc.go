// Package service is the planner service: it turns requests into plans and
// plans into released jobs and dispatched opcodes, over Kafka. It is the
// I/O beside the pure planner (package planner), which it calls; the
// planner packages never import it.
//
// What it owns (DESIGN.md, "The backbone", steps 2, 4 and 5):
//
//   - On EvacuationRequested or GroupChangeRequested it re-validates the
//     request against its state (unknown node or instance, an instance
//     held by an unfinished job of another active request: RequestRejected),
//     computes the plan with the evacuated nodes given explicitly and
//     appends, in one transaction, NodeUpdated{drained} for each evacuated
//     node not drained yet, PlanComputed, and unless it is a dry run
//     JobReleased + OpcodeDispatched for every job whose dependencies are
//     met, within the running limits. A dry run waits for RequestApproved,
//     which re-plans on the current inventory and appends a new plan first
//     if a decision changed.
//   - On OpcodeEnded it dispatches the job's next opcode or ends the job;
//     a job's end releases the jobs it unblocks and cancels those it dooms
//     (Ganeti's dependency semantics); the last fate closes the request
//     with RequestFinished.
//   - On RequestCancelled it cancels every unreleased job and asks the
//     executors of running opcodes to stop (OpcodeCancelled).
//
// # State is a fold of the log
//
// The service keeps no database and no consumer-group offsets. Each Run
// first takes the transactional id over (fencing an older instance, whose
// open transaction is aborted), then reads drove.inventory, drove.requests,
// drove.plans, drove.jobs and drove.opcodes from offset zero up to their
// last stable offsets, then keeps following the same topics from there,
// read-committed, with one plain client. A consumer group would add
// nothing: its committed offsets would only say where to resume, and the
// service must re-read everything anyway to know every request's story.
// Not using one also means no rebalances and no second instance silently
// sharing the partitions.
//
// Decisions are level-triggered: after each poll (and once after the
// replay) a pass looks at every active request and takes whatever
// decisions its state calls for now. Each decision is applied to the state
// at once and a pass's events are appended in one transaction. The fold
// only sets facts (a job released, an opcode ended, ...), so reading the
// service's own events back is a no-op, and the order in which topics are
// read against each other does not matter. Hence:
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
// The service is also the migration coordinator (migrations*.go): it folds
// drove.migrations, drove.settings and drove.progress with the rest, and
// answers each MigrationActionRequested (appended by the gateway once the
// caller was allowed) with the migration's whole record,
// MigrationStateChanged, caused by the command — a refused command too,
// with why in Message (a refused new migration is recorded failed). Phases
// go to the source node's executor as MigrationPhaseDispatched (seq 0, 1,
// ...); their MigrationPhaseEnded moves the migration on: automatic mode
// follows the re-sync rule (settings.go), on-demand mode pauses after each
// phase. A successful switch appends InstancePlaced (primary = target)
// with its record, a rollback the way back. Timers fire on a tick
// (Config.Tick, Config.Clock): a queued migration starts when its source
// has a free slot (max_running_migrations_per_node, creation order), a
// scheduled one switches at its time, a switched one is finalized after
// the grace period, and a phase with no progress for the progress timeout
// is dispatched again (Config.StallRetries times) and then fails.
//
// InventoryEvents and Seed state a planner.Cluster as inventory events, for
// `drove seed` (including a Ganeti IAllocator file) and the demo.
package service
