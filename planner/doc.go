// Package planner turns a cluster snapshot and a request into a plan: which
// instances move where, which cannot move and why, and the jobs of opcodes
// that carry the moves out, linked by dependencies so that they can run in
// parallel without ever overfilling a node.
//
// The planner is pure: it does no I/O, reads only the Cluster value it is
// given and returns a Plan value. The same input always gives the same plan.
// It speaks Ganeti's vocabulary (node-evacuate, change-group, disk templates,
// instance policies, the IAllocator result shape) so that it can stand in for
// Ganeti's hail; the iallocator subpackage does the JSON.
//
// How a plan is made (see DESIGN.md for the invariants):
//
//  1. state.go builds mutable per-node books from the snapshot, with Ganeti's
//     memory, disk, CPU and spindle accounting (nodestate.go).
//  2. For each requested instance in order, search.go enumerates the move
//     families its storage kind allows (moves.go), applies each candidate to a
//     scratch overlay of the few nodes it touches, rejects it with a reason
//     if a node check fails, and scores it with the group's cluster score,
//     updated incrementally (score.go).
//  3. The best candidate is committed; the reasons of the rejected ones
//     become the instance's failure explanation (reasons.go).
//  4. schedule.go links the jobs with dependencies: memory and disk flow
//     from jobs that free them to jobs that use them, and each node sends at
//     most Options.MaxMovesPerNode moves at once.
//
// New instances (Allocate, MultiAllocate) and Relocate follow hail exactly:
// allocate.go tries every node or pair of every group against the group's
// instance policy (policy.go), scores with the whole cluster's score, keeps
// the best that leaves the cluster N+1 redundant (capacity.go), and uses
// hail's lost-allocations metric on dedicated clusters (dedicated.go).
// Location and migration tags (location.go) weigh on every request.
package planner
