// Package qemu is the executor's QEMU runtime driver: it starts, stops
// and reports the instance VMs of one node (qemu-system-x86_64 driven over
// QMP, software emulation by default), and moves a running VM live to
// another node — Run on the source, Receive on the target, joined by the
// executor's receiver rendezvous (Op.AwaitReceiver).
//
// # A live migrate
//
// The target's Receive starts an incoming VM (-incoming defer, same
// memory and vCPUs, the instance's disk on the target node) listening on
// an ephemeral port, and announces it. The source's Run sets the rate cap
// (max-bandwidth) and downtime limit, issues `migrate`, and polls
// query-migrate (woken early by MIGRATION events), reporting RAM sent,
// remaining, dirty rate and expected downtime as Progress. When pre-copy
// has not completed within the completion timeout — CompletionTimeoutPerGiB
// times the guest's GiB of RAM, KubeVirt's setting — it switches to
// post-copy if allowed, otherwise aborts; a pre-copy whose remaining bytes
// make no new low for ProgressTimeout is aborted too. On completion the
// downtime QEMU measured is the Result's Downtime.
//
// # Per-instance live migration (RFD 34 phases, live.go)
//
// A running VM on shared storage migrates live one phase at a time, one
// QEMU migration spread over the phases: begin starts the incoming VM on
// the target (its executor's Receive, ReceiveLive) and notes its address;
// the first sync issues `migrate` and each sync lasts one pre-copy pass
// (a dirty-bitmap sync), its size the bytes that pass sent — what the
// coordinator's re-sync rule reads; between phases and after a pause the
// send holds at a trickle with a 1 ms downtime limit, so QEMU does not
// finish by itself. pause-before-switchover makes QEMU stop the guest
// and wait (pre-switchover) before it sends the device state; the switch
// raises the downtime limit to DowntimeLimit, answers pre-switchover
// with migrate-continue (after a SwitchHook: a storage hand-over), and
// goes post-copy after the completion timeout per GiB (counted from the
// switch) when allowed. An abort before the switch cancels QEMU's
// migration (the source runs on, the incoming VM is destroyed); in
// post-copy it is refused, by the driver and the coordinator. Rollback
// is StopStart's (a boot on the source). ZFSRuntime does the same for a
// VM on zfs-local inside the zfs driver's switch (zfs.LiveRuntime:
// Incoming on the target, HandOver on the source, the final delta in
// the pre-switchover pause).
//
// # Status model (oVirt)
//
//   - during the move: source "migration source", target "migration
//     destination" (written by the executor at start);
//   - success: the source VM is shut down (down), the target runs (up);
//   - pre-copy failure or abort: the source VM runs on (up; cont if it was
//     stopped at the switch), the incoming VM exits or is destroyed (down);
//   - post-copy: the source reports "paused" through Op.Status and the
//     move can no longer be cancelled: a cancelled ctx is logged and the
//     move finishes, and the Result says so. A post-copy failure leaves
//     both sides down (ErrPostCopyFailed).
//
// # Invariants
//
//   - One VM per instance per node; its QMP socket, pid file and log live
//     in Config.Dir named after the instance, so a restarted driver finds
//     its VMs again. VMs outlive the executor process.
//   - A second Run of an opcode whose migration completed succeeds at once
//     (a marker in Dir names the opcode that moved the instance away).
//   - Source and target decide from the same Op whether there is memory
//     to move: a migrate of a running instance. Anything else is the
//     storage driver's business; this driver succeeds without work.
package qemu
