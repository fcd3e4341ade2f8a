// Package chaos runs Drove as separate OS processes built from the drove
// binary — the broker, two planner services, the projector, the gateway
// and one executor per node (simulated driver) — over an embedded
// Postgres, under a workload of evacuations, a group change and
// per-instance migrations, while a random process gets SIGKILL every few
// seconds and is started again, and the broker and Postgres are each
// restarted once. At the end every request and migration has ended,
// `drove verify` passes on the log and `drove replay` finds the views
// equal to the log. The test prints what it survived.
package chaos
