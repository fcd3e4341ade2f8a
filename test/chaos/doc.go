// Package chaos runs Drove as separate OS processes built from the drove
// binary — two planner services, the projector, the gateway and one
// executor per node (simulated driver) — over three Apache Kafka brokers
// and a Postgres of its own, under a workload of evacuations, a group
// change, an undrain and per-instance migrations, while a random process
// gets SIGKILL every few seconds and is started again, the busiest
// partition's leader and then every broker are killed, and Postgres
// crashes once. At the end every request and migration has ended,
// `drove verify` passes on the log and `drove replay` finds the views
// equal to the log. The test prints what it survived.
package chaos
