// Package inventory folds drove.inventory into the cluster as the planner
// sees it: every group, node and instance in its last whole state, in the
// order each first appeared in the log, with free space derived from the
// placements. Cluster turns it into the planner's snapshot.
//
// It is the shared ground of the planner service's decisions (planner/jobs
// plans requests on it, planner/migration picks targets and checks nodes on
// it) and does no I/O: the service reads the log and calls Apply.
//
// Pos, an event's place in the log, orders every fold of the service, so
// that a replay rebuilds the same state whatever order the partitions were
// read in.
package inventory
