package executor

import (
	"strings"

	"github.com/drovehq/drove/events"
)

// The target side of per-instance migrations. Every phase runs on the
// source node (the coordinator dispatches it there), but a storage driver
// that copies data needs the target too: a `zfs receive`, a checksum, a
// runtime to start or stop. So the executor of a phase's Target runs the
// driver's Receive for each phase dispatched to another node, exactly as
// it does for an opcode (receive.go): the rendezvous key is the migration
// as Request, Job 0 and the phase's seq as Index (the key of the phase's
// progress events), the receiver announces itself with ReceiverReady, and
// the source's Migrator learns the address through
// MigrationPhase.AwaitReceiver. The receiver is stopped when the phase's
// MigrationPhaseEnded arrives. Only a driver that is a Migrator too gets
// these Ops: another's Receive would take them for opcodes. A phase's
// end, whatever its status, never rolls anything back on the target by
// itself: pausing keeps the last snapshot received, and an abort is a
// phase of its own.

// MigrationModePrefix starts Op.Mode of the Op a Receiver gets for a phase
// of a per-instance migration; the phase's name follows it.
const MigrationModePrefix = "migration-phase:"

// MigrationPhaseOf says whether op is the target side of a migration
// phase, and which phase (begin, sync, switch, abort, rollback, finalize).
// Its Request is then the migration and its Index the phase's seq.
func (o Op) MigrationPhaseOf() (string, bool) {
	return strings.CutPrefix(o.Mode, MigrationModePrefix)
}

// migrationReceive is the opcode dispatch a migration phase stands for on
// its target: what startReceiver and the rendezvous work from.
func migrationReceive(d events.MigrationPhaseDispatched) events.OpcodeDispatched {
	return events.OpcodeDispatched{Request: d.Migration, Job: 0, Index: d.Seq, Node: d.Node,
		Opcode: events.Opcode{OpID: events.OpInstanceMigrate, Mode: MigrationModePrefix + d.Phase,
			Instance: d.Instance, From: d.Source, To: d.Target},
		Facts: d.Facts}
}

// observePhase folds the target side's share of a migration record.
func (e *Executor) observePhase(env events.Envelope, p events.Payload, replay bool, off int64) {
	switch v := p.(type) {
	case events.MigrationPhaseDispatched:
		if _, ok := e.driver.(Migrator); !ok || v.Target == "" || v.Target == v.Node {
			return // a driver that runs no migration phase has no target side for them
		}
		e.observeOpcode(env, migrationReceive(v), replay, off)
	case events.MigrationPhaseEnded:
		e.stopReceiver(opKey{v.Migration, 0, v.Seq}, v.Node, &sourceEnded{v.Status})
	}
}
