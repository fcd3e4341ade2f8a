// Command makespan measures how close an evacuation's wall-clock time
// comes to the lower bound (issue 17): evacuating 1 node, 4 nodes and a
// 40-node rack of a 100-node group with mixed instance sizes and mixed
// link speeds. For each case it writes the makespan, the lower bound
// (planner.LowerBound), their ratio, and the ratio the same plan reached
// under Drove's fixed rules before (plan order, 2 moves per node, 5 per
// cluster).
//
// Method: a discrete-event simulation (test/evacsim) that runs the planner
// service's own decisions (planner/jobs.Decide: the plan, its
// dependencies, the release) and models the executors by the simulated
// driver's bandwidth model (planner.ShareLinks: a move limited by its
// sending and its receiving link, concurrent moves sharing them), with
// time jumping from one opcode's end to the next. The whole system on the
// embedded broker would take hours of this 2-core machine for the 40-node
// rack at the compression the sim driver's step allows; the decisions are
// the same code.
//
//	go run ./test/bench/makespan [-out test/bench/results/makespan.json]
package main
