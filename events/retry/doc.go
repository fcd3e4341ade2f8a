// Package retry is how Drove tries a step again: [Backoff] (a number of
// tries, a first wait doubling up to a cap, a predicate for what is worth
// another try) and [ErrPermanent], the one sentinel every error no retry
// cures wraps, so a supervisor can tell "restart it" from "stop" without
// knowing the services it runs.
//
// It sits under events, beside the schema every service imports, so the
// Kafka code (events/kafka), the executor's drivers, the planner service
// and the supervisor (deploy/supervise) all reach it without an arrow
// pointing out of events. Standard library only.
package retry
