// Package evacsim runs an evacuation through the planner service's own
// decisions (planner/jobs.Decide: the real planner, plan acceptance and
// job release) in simulated time, with the executors replaced by the
// simulated driver's bandwidth model: each dispatched opcode sends
// jobs.MoveBytes at the rate planner.ShareLinks gives it among the moves
// running at once (each limited by its sending and its receiving node's
// link), with no re-syncs and no stop or start time. It is a discrete-event
// simulation: time jumps from one opcode's end to the next, so a 40-node
// rack evacuates in a second of CPU. The makespan benchmark and the
// release tests of planner/jobs use it; it records every release so the
// tests can check the rules (dependencies, caps) at every step.
package evacsim
