// Package sim is the simulated executor.Driver, for the demo and for tests:
// it moves nothing, but takes the time, reports the bytes and fails the way
// a real move would.
//
// The model, RFD 34 style, in simulated time (Config.Clock) at
// Config.Bandwidth — or, with Config.Links (one Links shared by every
// node's driver), at the move's share of its sending and its receiving
// node's links among the transfers running at once, recomputed every step
// (planner.ShareLinks) — with a running instance dirtying
// Config.DirtyRate:
//
//   - replace-disks (mirrored storage): begin reserves the new replica;
//     sync is a full send of the disks, then incrementals of what was
//     dirtied meanwhile until the re-sync rule says switch (the last
//     delta under SwitchBelow, MaxSyncs passes, or no shrinking over
//     ShrinkWindow passes); switch sends the final delta, makes To the
//     secondary and drops the old replica.
//   - migrate: mirrored storage first catches the replica up (its lag,
//     DirtyRate × ReplicationLag); zfs-local storage is synced as above;
//     shared storage sends nothing. A running instance then pre-copies its
//     memory in rounds under the same rule and pauses only for the last
//     pages — except zfs-local, which RFD 34 moves offline: stop, final
//     delta, start on the target. A stopped instance is just handed over.
//   - failover: stop on the primary, start on the target; progress counts
//     these two steps, as nothing is copied.
//
// Progress is cumulative over a Run: Total grows with each incremental,
// Current only rises, rates and ETAs are in simulated seconds.
//
// Faults (Config.Faults, Driver.Inject) strike halfway through the first
// transfer of a phase. A transient one fails the attempt and keeps what the
// target received, so the next attempt resumes the send (ZFS's resumable
// receive); a fatal one, like a cancelled context, rolls back: the partial
// replica is dropped and the instance stays where it was. Past the point
// of no return (the last memory pages, the start on the target) a move
// finishes even if cancelled.
//
// The driver keeps its own world (Locate): where each instance it has seen
// runs and where its replica is, learnt from the first Op naming it. A Run
// of an opcode whose effect is already in place succeeds at once, as a
// real driver must after a crash between the move and its end events, and
// an instance accepts one move at a time.
package sim
