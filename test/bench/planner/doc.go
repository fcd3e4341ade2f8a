// Command planner measures Drove's planner against Ganeti's hail on the
// same IAllocator requests, for speed and for the quality of the plans.
//
//	go run ./test/bench/planner          # 20, 80 and 140 nodes per group, then the large case
//	go run ./test/bench/planner -quick   # 20 nodes per group only
//
// For each group size it generates one cluster (planner/clustergen: two
// groups, ten instances per node, memory 60% used, a mix of storage kinds
// hail can read) and asks both planners five things: evacuate one node,
// evacuate four nodes (mode all), move 50 mirrored instances to another
// group, allocate one new mirrored instance, and relocate one mirrored
// instance's secondary. An allocation's or relocation's chosen nodes are
// applied like moves (the new instance joins the cluster). hail runs as a process on the request file, timed by wall clock and
// killed after -budget; Drove runs in process (iallocator.Answer on the
// same bytes, best of -runs), and also as a binary when -drove-bin is given.
//
// Each tool's moves are applied to the cluster, free memory and disk are
// recounted from the new placements, and the result is scored with Ganeti's
// cluster score (planner.Score). The QUALITY check of a case passes when
// Drove moves more instances than hail, or as many with a final score no
// worse, and Drove's plan overfills no node and leaves no moved instance on
// a node being emptied. The command exits 1 when a QUALITY check fails;
// timings never fail it.
//
// The large case (one group of 5,000 nodes, 50,000 instances, evacuate four
// nodes) runs Drove only, in a child process of the same binary
// (-case large) so that its peak RSS is its own.
//
// The summary is printed as a table and written as JSON to -out.
package main
