// Package process is the executor's runtime driver for instances that are
// plain OS processes (one command per instance, Config.Command) — enough
// for containers run by a CLI such as podman or runc.
//
// A process cannot move live, so a migrate or failover of a running
// instance is a handoff: the target's Receive listens and announces its
// address; the source's Run connects, stops its process (SIGTERM to the
// process group, SIGKILL after StopTimeout), says so, and the target
// starts the process and answers "up". Invariants:
//
//   - one side runs the instance at any time: the target starts only after
//     the source said it stopped, and a source that hears no "up" starts
//     its own again (source up, target down, oVirt's failure statuses);
//   - once the source has stopped, the handoff finishes whatever the
//     contexts say — cancelling half-way would leave the instance nowhere;
//   - processes outlive the executor (own process group, pid files in
//     Dir), and a second Run of an opcode that already moved the instance
//     succeeds at once (a marker in Dir names it).
//
// Data is the storage driver's business: a composite runs storage first,
// then this driver's Run on the source and Receive on the target. With
// ZFSRuntime the ZFS storage driver runs the processes itself, each in
// its instance's dataset, and moves them with the data.
//
// Per-instance migrations (executor.Migrator) go by stop and start
// (StopStart, which the QEMU driver uses too for VMs on shared storage):
// begin notes the prior run state, a sync has nothing to send, the switch
// is a handoff, a rollback the handoff back (the target stops, the source
// starts), abort restores the prior state, finalize has nothing to drop.
package process
