// Package migration is the RFD 34 coordinator of per-instance migrations:
// the fold of their commands, records, phases and progress (State), and
// the decisions that fold calls for (Decide). It does no I/O: the planner
// service reads the log, applies each event, calls Decide for every
// migration and appends what it returns in one transaction.
//
// A migration runs phase by phase on the source node's executor (begin,
// sync..., switch, then finalize, or abort, or rollback). Decisions are
// level-triggered: after every poll and every tick a pass looks at each
// migration and takes what its state calls for now — the end of its latest
// phase first, then its commands not yet answered, then its timers. Every
// decision writes the migration's whole record (MigrationStateChanged),
// caused by what it answers, so the record's causation is how a restart
// knows a command or a phase end was already handled.
//
// Where each decision lives:
//
//   - begin.go: a new migration — refused (instance unknown, busy,
//     storage that cannot migrate), queued for a slot on its source, or
//     begun; the target choice (pickTarget: the one asked for, checked,
//     else the planner's pick for a primary-only evacuation of the
//     instance alone); the dispatch of a phase to the source node.
//   - commands.go: answers to sync, switch, automatic, pause, abort,
//     rollback, finalize and schedule, each refused with why when the
//     migration's state does not allow it; advance, the automatic mode's
//     next step after a phase.
//   - resync.go: RFD 34's re-sync rule (switch now, or sync again).
//   - phases.go: the end of a phase — what each phase's success or failure
//     makes of the record, and InstancePlaced for a switch or a rollback.
//   - timers.go: a queued migration's free slot, a scheduled switch, the
//     finalize grace period, and the progress timeout (dispatch again,
//     then fail).
//   - state.go: the fold itself.
package migration
