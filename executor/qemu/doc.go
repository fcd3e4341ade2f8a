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
