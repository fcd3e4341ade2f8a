// Command fleet measures Drove at fleet scale: it seeds 10,000 nodes and
// 100,000 instances into the embedded broker (kfake, through the Kafka
// protocol), runs the planner service (a `drove planner` subprocess, so its
// restart and its peak RSS are its own), simulated executors (goroutines,
// each with its own Kafka client and a sim driver on compressed time) and
// the projector, and writes test/bench/results/fleet.json and a table:
//
//   - plan latency: request appended → PlanComputed seen, for evacuating 10
//     nodes and for a change-group of a whole 500-node group;
//   - executor fetch fraction: the bytes one executor receives from the
//     broker while an evacuation runs, as a fraction of what a reader of
//     the whole of the executor's topics receives over the same window;
//   - planner restart to ready, at two log sizes (the seeded inventory, and
//     at least 1,000,000 events of history);
//   - the projector's events/s, live (catching up from zero) and in replay,
//     and each as a ratio to Postgres's COPY of the same event_log rows in
//     the same run (test/bench/copylimit: issue 32's physical limit), the
//     fold reading a copy of the log on a real Apache Kafka broker
//     (mirror.go; -kafka embedded reads the fleet's own kfake);
//   - peak RSS (VmHWM) of the planner service and of one executor process.
//
// A figure that cannot be measured (a plan that does not come within the
// timeout, a process that does not start) is written as null, and the
// reason is printed and kept in the JSON's notes. -quick runs a smaller
// fleet (2,000 nodes, 20,000 instances, a 200,000-event log).
package main
