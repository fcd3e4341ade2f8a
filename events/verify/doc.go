// Package verify is an independent checker of Drove's log: it folds the
// events of every topic, from offset zero, and reports every place where
// the log breaks one of the system's promises.
//
// It re-derives each decision it checks from the events alone, with its own
// rules, and imports nothing of Drove's but the events schema: a bug in the
// planner service, the projector or an executor cannot hide itself by being
// shared with the checker. What it checks (see the Invariant constants):
//
//   - placement: no instance is placed on two nodes at once (each
//     InstancePlaced starts from where the instance was), and after a move
//     ended at most one of its two sides reports the instance running;
//   - once: no opcode and no migration phase ran twice or ended twice, and
//     each ended on the node it was dispatched to;
//   - dependencies: no job was released before every job it depends on had
//     ended in a status the dependency accepts (Ganeti's depends: a relative
//     index and a list of statuses, empty meaning any end), and every
//     released job and dispatched opcode is the plan's;
//   - capacity: no plan put a node over its memory or disk, and no placement
//     left a node over them, recomputed from the inventory;
//   - requests: every request ended, and every instance a finished request
//     says it moved is where the result says;
//   - migrations: every per-instance migration's record agrees with the
//     phases dispatched and ended for it and with its placements;
//   - fencing: a node the planner declared lost starts and finishes
//     nothing until an operator brings it online; a move past its point
//     of no return when the node was cut off, whose success comes after
//     the loss, is listed for operator action instead (fencing.go).
//
// A dry run nobody approved is not open work: nothing runs until an
// approval. Options.AllowOpen accepts requests and migrations still under
// way, for auditing a running system; without it they are violations.
//
// # Order
//
// Kafka orders the events of one partition, not of a topic or of the whole
// log. Check takes the records of each partition in offset order, which it
// never changes, and interleaves partitions by the producers' event times.
// Checks whose events share a partition (an instance's placements, a
// request's jobs, a node's opcodes) are therefore exact; the ones that read
// several topics (capacity at plan time) rely on the producers' clocks, and
// the ones that cannot (a request's result against its placements, a
// migration's record against its phases) compare final facts at the end of
// the log instead.
//
// # Retries and re-dispatches
//
// Kafka delivers at least once, so an event id read twice is one event:
// Check counts the copy and ignores it. An executor that stops in the
// middle of an opcode runs it again when it restarts, so an opcode may be
// started several times; what must never happen is a start after its end,
// or two ends (each run ends once, so two ends are two runs). A migration
// phase that stalls is dispatched again under a new sequence number, which
// is a new phase here; one sequence number is dispatched once and ended
// once.
package verify
