// Package allinone runs the whole of Drove in one process: the projector,
// the planner service, one executor per node and the gateway, over the
// brokers and database it is given. Each executor runs a simulated driver,
// or, with the ZFS demo (zfsdemo.go, `drove dev --driver zfs`), the ZFS
// driver over the node's own pool with the instances' processes as its
// runtime. `drove dev` (make run) runs it on the embedded broker and
// Postgres (deploy/embedded) with the demo cluster; the end-to-end tests
// run it on the test helpers' ones, and stop and restart single parts of
// it mid-flight.
package allinone
