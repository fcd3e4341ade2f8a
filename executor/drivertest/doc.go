// Package drivertest is the suite an executor.Driver passes so the
// executor can rely on one contract whatever moves the bytes. The
// simulator, the ZFS storage driver and the QEMU and process runtimes run
// it (the runtimes on shared storage, one driver per node joined by a
// World):
//
//	func TestDriver(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T) executor.Driver { return newDriver(t) })
//	}
//
// newDriver is called once per subtest and must return a driver whose
// world holds the instances of Fixture where Fixture places them (a real
// driver creates the datasets and domains; the simulator learns them from
// the first Op). A driver that also implements Locator has its placements
// checked after every move, success or abort.
//
// A driver that moves only some storage kinds runs the suite with RunFor,
// naming them; the cases whose instance has another kind are not
// generated, and its world need hold only FixtureFor(those kinds). The
// ZFS driver, which refuses shared storage, does so:
//
//	drivertest.RunFor(t, []events.StorageKind{events.StorageZFSReplicated, events.StorageZFSLocal}, newWorld)
//
// Run is RunFor with every storage kind of Fixture.
//
// The suite checks, for migrate (mirrored, copied and shared storage),
// failover and replace-disks: success, progress that is monotonic and ends
// at its Total, tolerance of a second Run of an opcode already done, and
// that a cancelled context aborts with executor.ErrCanceled and leaves the
// instance where it was, ready to be moved again.
//
// Drivers that implement executor.Migrator also run the migration part,
// RunMigrations (migration.go), with a newDriver that does for each Phase
// what the target node's executor does (runs the target's Receive for
// the phase, executor.MigrationPhaseOf). It checks every phase of an RFD
// 34 per-instance migration (begin, sync, sync, switch, finalize;
// rollback), each phase run again for the same seq, an abort after
// begin, during a sync, after a sync and after a cancelled switch, a
// pause (a sync cut mid-transfer stops within PauseWithin and the next
// sync and the switch go on), monotonic progress and the estimate. A
// world that implements Leftovers has the snapshots and copies a
// migration leaves checked too. The sim, zfs, process and qemu drivers
// run it; the last two migrate by stop and start (process.StopStart).
package drivertest
