// Package nodes is the planner service's fold of a node's lifecycle and
// its decisions: operators' commands (undrain, offline, online) answered
// with the node's new state or a refusal, and the nodes' leases — an
// executor renews its node's lease with heartbeats through the log, and a
// node whose lease expired is declared lost (offline), so that the job
// queue (planner/jobs) and the migration coordinator (planner/migration)
// end the moves it takes part in. No I/O: the service's loop feeds it
// events and its clock, and appends what it decides.
package nodes
