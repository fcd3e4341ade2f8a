// Package downtime is the one model of a switch's downtime, shared by the
// gateway's estimate (action=estimate, before a move) and the migration
// coordinator's downtime budget (planner/migration, after each sync): a
// prediction built from parts, each measured where it can be.
//
//	downtime = overhead                       stop and start of the runtime
//	         + final delta / link rate        what is sent while the instance is down
//	         + final delta / checksum rate    the check of that delta (copied disks only)
//
// The overhead is measured from earlier switches when there are any (the
// callers find them); otherwise DefaultOverhead states what is assumed.
// No I/O.
package downtime
