// Package zfs is the executor's ZFS storage driver: it moves an instance's
// dataset, <Parent>/<instance>, from the source node's executor to the
// target node's executor as RFD 34 describes, over executor/transfer
// streams.
//
// One Driver serves one node. On the source it is an executor.Driver
// (Run); on the target an executor.Receiver (Receive), which listens, is
// announced by the executor (ReceiverReady) and does what the source's
// streams ask: hello (what do you hold), recv (a `zfs send` stream piped
// into `zfs receive -F`), checksum, commit, abort.
//
// A move, for migrate, failover and replace-disks (replace_new_secondary):
//
//   - begin: hello; the newest @migrate-snap-N both sides hold is the base.
//   - sync: snapshot @migrate-snap-N+1 and send it, full (-R where the ZFS
//     has it) without a base, `-I` from the base otherwise; once the target
//     holds N+1 both sides destroy the older migration snapshots. migrate
//     re-syncs until the ResyncRule says switch; replace-disks sends one
//     incremental after the full send.
//   - verify ahead (a running instance that the move stops): compare the
//     content checksums of the last synced snapshot on both sides while the
//     instance still runs, then sync once more (checksum.go).
//   - switch: stop the instance (migrate, failover; not replace-disks),
//     send the final delta, compare content checksums of the final snapshot
//     on both sides, re-reading only the files changed since the checksum
//     ahead (a mismatch is fatal and keeps the source), commit: the
//     target starts the instance if it ran. zfs-local leaves nothing on the
//     source; zfs-replicated keeps the final snapshot on both sides as the
//     base of the replica's next incremental, and the source's dataset
//     becomes the replica.
//
// Invariants:
//
//   - A transient fault (a cut stream, a restarting receiver) keeps every
//     snapshot both sides hold, so the next attempt continues from the last
//     one the target received; where ZFS has resumable receive it resumes
//     from the receive token instead.
//   - A fatal fault or a cancel restarts the instance on the source if the
//     move stopped it, tells the target to roll back (a dataset the move
//     created is destroyed, an existing replica goes back to its base), and
//     destroys the move's snapshots on the source.
//   - The target marks the datasets it receives into with one user
//     property, drove:migration ("KEY created=yes base=N", saved in one
//     `zfs set`), so a restarted receiver or an abort after a restart
//     knows what the move added; a committed
//     move leaves drove:committed=<opcode key>, and a second Run of the
//     opcode then succeeds at once.
//   - Progress counts the bytes sent, except that a finished send counts
//     at least its estimate: Total, the sum of the estimates, never
//     shrinks and Current ends at it (executor.Driver); Result.Bytes is
//     what was sent.
//   - Features are detected at start (Detect) and every progress message
//     says which mode ran. Old ZFS (zfs-fuse, pool version 23) has -R only:
//     no resume tokens, no bookmarks, no `send -nP`, no written@; sizes are
//     then estimated from referenced and used.
//   - Send and receive are stopped by closing their pipe: zfs-fuse runs
//     them in its daemon, which a killed zfs command does not stop (cli.go).
//     Where a cut send leaves its snapshot busy (zfs-fuse, not
//     Features.SendStopsCleanly), a stopped send stops writing to the
//     target at once and is read to its end locally instead.
//   - go-zfs v3 cannot list datasets on old ZFS (it asks for `list -p` and
//     properties it lacks), so listing, get, snapshot, rollback, send and
//     receive run the zfs command directly (cli.go); go-zfs does set and
//     destroy.
//
// A failover whose primary is offline runs on the target alone (Run with
// From another node): the instance starts from the replica as of its
// newest migration snapshot.
//
// Per-instance migrations (RFD 34, one phase at a time) make the Driver an
// executor.Migrator too (migrate.go, migrate_back.go): begin notes the
// prior run state on the dataset (drove:migrating, drove:prior) and has
// the target reserve room; each sync is one sendWith of the bulk path;
// switch is the bulk path's verify ahead, stop, final delta, checksum and
// commit; abort, rollback (the target sends what changed since the switch
// back) and finalize end it. The target side (migrate_target.go) is the
// Receive the target's executor runs for every phase
// (executor.MigrationPhaseOf), serving the same streams plus reserve,
// runtime, sendback and drop; it never rolls back when a phase ends, so a
// cancelled sync (a pause) keeps the last snapshot received as the next
// base. Only zfs-local instances migrate one by one; a zfs-replicated one
// moves with its replica, by evacuation.
//
// A runtime that is a LiveRuntime (a QEMU VM, executor/qemu's ZFSRuntime)
// makes the switch of a running zfs-local instance — a migration's, or a
// bulk migrate's — a live hand-over (migrate_live.go): the incoming VM on
// the target, one more incremental, the memory pre-copy while the guest
// runs, and in QEMU's pre-switchover pause the write-back, final delta and
// checksum; then the guest resumes on the target and the target commits.
// A bulk migrate with allow_failover falls back to the offline switch when
// the hand-over fails.
package zfs
