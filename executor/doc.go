// Package executor is the agent on each node: it runs the opcodes the
// planner service dispatches to its node, and the phases of per-instance
// migrations (RFD 34) its coordinator dispatches, through a Driver — the
// simulator (executor/sim), ZFS storage (executor/zfs), the QEMU and
// process runtimes (executor/qemu, executor/process) — and reports them on
// the log, as DESIGN.md's protocol says.
//
// # Where a task goes
//
// One Executor, one file per stage of a task's path:
//
//   - read.go: what the executor reads (its node's partition of the
//     opcodes, from its checkpoint) and the checkpoint, held back by the
//     work still owed;
//   - executor.go: New, Run (start-up recovery, then following), and
//     handle, which routes each record: a dispatch to submit, a cancel to
//     cancel, a migration phase to migration.go, a settings change;
//   - slots.go: the Concurrency slots, granted in dispatch order;
//   - task.go: one opcode from its start events through the driver (with
//     retries of transient faults) to its end events, and the progress and
//     status appends of the running opcode;
//   - progress.go: the pump that turns a driver's reports into Progress
//     events, at most one per ProgressInterval;
//   - placement.go: the placement an opcode starts from (the facts its
//     dispatch carries) and the one its success leaves;
//   - receive.go: the target side of a move (Receiver) and its rendezvous
//     with the source, and dropping replicas a node no longer holds;
//   - migration.go: the phases of per-instance migrations.
//
// # What it writes
//
// For each OpcodeDispatched with Node equal to its node, caused by the
// dispatch, in its request, with actor "executor/<node>":
//
//   - at start, in one transaction: OpcodeStarted, and MoveStatusReported
//     for From ("migration source") and To ("migration destination");
//   - while the driver works: Progress events, at most one per
//     ProgressInterval, with Current never going backwards across retries
//     and a message when Total grows (re-syncs) or a retry resends data;
//     each transient fault adds "retrying (attempt n/N) after transient
//     fault: ...", and the next attempt starts after exponential backoff;
//   - at the end, in one transaction: OpcodeEnded (success, error or
//     canceled), End (successful or failed), the final MoveStatusReported
//     of From and To, and on success InstancePlaced with the placement
//     before and after. Watchers therefore never see an opcode ended
//     without its placement, or placed without its end.
//
// # Reading, restarts and idempotence
//
// The executor reads (read.go) only the partition of drove.opcodes its
// node's name maps to (kafka.PartitionOf, the producers' partitioner:
// every event an executor acts on is keyed by the node it is for), plus
// drove.settings whole (one small record per operator change); it reads
// no inventory. The target side of a move
// lies in the source's partition, so the source's executor relays the
// dispatch (with its start) and the end to the target, keyed by it
// (TargetNotified). Its handler never waits for an opcode: an
// OpcodeCancelled arrives on the same partition after the dispatch it
// cancels, so a handler blocked on the dispatch would never read it, and
// Concurrency opcodes could never run at once. The handler queues the
// opcode (a goroutine that waits for one of Concurrency slots, granted in
// dispatch order) and returns.
//
// Where a start reads from is the executor's checkpoint, the committed
// offset of its consumer group events.ExecutorGroup(node), which it keeps
// itself (kafka.Checkpoint) and never moves past a record of work it
// still owes: an opcode dispatched and not ended, a receiver not done, a
// migration phase not ended. At start it reads from the checkpoint to
// where the log stood: every opcode dispatched to its node without an
// OpcodeEnded from its node is owed, and is run again (or ended as
// canceled if an OpcodeCancelled came for it). So an opcode whose end
// events never made it to the log before a crash is run again, and one
// that ended is not; a restart costs the node's records since its oldest
// unfinished work, not the cluster's history. A dispatch may be in the
// log twice (the planner appends again, same event, when Kafka could not
// confirm a commit); a copy whose opcode has ended or is running is
// ignored, keyed by (request, job, index). Because such a copy may land
// after the end, the checkpoint stays before a finished opcode for
// CheckpointLinger (a minute), longer than the planner retries an append;
// past it, the executor forgets the opcode. Drivers must still tolerate
// a second Run of an opcode that half happened (see Driver); the
// simulator checks whether the instance already sits at the target.
//
// Shutting down is not cancelling: when Run's context ends, running
// opcodes are aborted through their contexts but no end events are written
// for them, so they stay owed and run again at the next start. Only an
// OpcodeCancelled ends an opcode as canceled. An opcode whose driver
// already succeeded still gets its end events written, on a detached
// context, because the move happened.
//
// # Placement
//
// The dispatch says From and To, and carries the rest an opcode needs
// (events.InstanceFacts): storage kind, size, run state, the placement
// it starts from and the groups of the nodes involved, as the planner
// service's inventory held them when it dispatched — for a job's later
// opcodes, the placement the opcode before leaves (events.Opcode.Leaves),
// which the planner may dispatch before it has read that opcode's
// InstancePlaced. A migration phase carries them too, and the target side
// of a move gets them in the relayed dispatch. So the executor reads no
// inventory and holds no other instance's facts: drove.inventory is keyed
// by instance, no partition of it is one node's, and reading it would
// cost every executor the whole cluster's traffic. A dispatch without
// facts (older than them) ends with ErrUnknownInstance. Dropping a
// replica is the one thing an executor learned from another node's
// placement: the executor that moves a replica away relays the
// InstancePlaced to the old secondary (TargetNotified), whose executor
// drops its copy (ReplicaDropper). The placement after success follows
// Ganeti's meaning of the opcode (placement.go), not the driver's say-so.
package executor
