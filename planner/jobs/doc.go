// Package jobs is the job queue of the planner service: the fold of
// requests, their plans, jobs and opcodes (State), and the decisions that
// fold calls for (Decide). It does no I/O: the planner service reads the
// log, applies each event, calls Decide for every active request, oldest
// first, and appends what it returns in one transaction.
//
// Decisions are level-triggered: the same pass runs after an event is read
// live and after a restart's replay, so a decision lost in a crash is
// taken again and one that reached the log is not taken twice. Each
// decision is applied to the state as soon as it is made (through
// Env.Apply), so the pass's later decisions see it.
//
// Where each decision lives:
//
//   - plan.go: plan acceptance — a request is validated against the
//     inventory (unknown node or instance, an instance held by another
//     active request: rejected), planned with planner.Compute, its
//     evacuated nodes drained; a dry run's approval re-plans and appends a
//     new plan only if a decision changed.
//   - release.go: job release and cancellation — a job whose dependencies
//     all ended as it accepts is ready; one whose dependency ended
//     otherwise is cancelled (Ganeti's semantics, cascading in index
//     order); a cancelled request cancels every unreleased job.
//   - makespan.go: which ready jobs are released, within the per-node (or
//     auto) and per-cluster caps, for the shortest makespan (Choose): the
//     job on the busiest link (or with the longest chain) first, only where
//     the links have room; what a move sends (MoveBytes); estimate.go: the
//     same release run forward in time (EstimatePlan).
//   - dispatch.go: a running job's next step — dispatch its next opcode,
//     ask the executor to cancel the running one, or end the job.
//   - finish.go: the request's end (RequestFinished) once every job has a
//     fate.
//   - state.go: the fold itself; convert.go: plans as events.
package jobs
