package executor

import "github.com/drovehq/drove/events"

// moves is an opcode's effect on placement: where the instance was and
// where it is after success. It is computed from the opcode, not asked of
// the driver, because the planner's bookkeeping must match the opcode's
// meaning (Ganeti's) whatever the driver did inside.
type moves struct {
	prevPrimary, prevSecondary string
	prevGroup                  string
	primary, secondary         string
	group                      string
}

// planMoves applies Ganeti's meaning of op to the instance's placement:
//
//   - migrate and failover make To the primary. With internally mirrored
//     storage To is the old secondary (the only place the disks are), and
//     the old primary becomes the secondary: the two swap. With any other
//     storage the instance simply moves and has no secondary.
//   - replace-disks (new secondary) keeps the primary, From, and makes To
//     the secondary; the old replica is dropped.
//
// The previous primary is From, the node the opcode was dispatched to; the
// inventory supplies the previous secondary where the opcode does not say.
func planMoves(op events.Opcode, pl placement) moves {
	f := pl.facts
	m := moves{prevPrimary: op.From, prevSecondary: f.Secondary}
	switch op.OpID {
	case events.OpInstanceReplaceDisks:
		m.primary, m.secondary = op.From, op.To
	default:
		m.primary = op.To
		if f.Storage.InternallyMirrored() {
			m.prevSecondary, m.secondary = op.To, op.From
		} else {
			m.prevSecondary, m.secondary = "", ""
		}
	}
	m.prevGroup, m.group = pl.groups[m.prevPrimary], pl.groups[m.primary]
	return m
}

// placed is the InstancePlaced event of a successful opcode.
func (m moves) placed(request, instance string) events.InstancePlaced {
	return events.InstancePlaced{
		Instance: instance, Group: m.group, PrimaryNode: m.primary, SecondaryNode: m.secondary,
		PreviousGroup: m.prevGroup, PreviousPrimary: m.prevPrimary, PreviousSecondary: m.prevSecondary,
		Request: request,
	}
}

// finalStatuses is what From and To report after the opcode (oVirt's
// model). A migrate or failover that succeeded leaves the source down and
// the target up; one that failed leaves them as they were, source up and
// target down. Replace-disks never moves the running instance: whatever
// the outcome it runs on its primary (From) and the replica node (To) runs
// nothing, so it reports the "as they were" pair in both cases; reporting
// the primary down would tell the views the instance stopped.
func finalStatuses(kind events.OpID, success bool) (from, to events.NodeMoveStatus) {
	if success && kind != events.OpInstanceReplaceDisks {
		return events.StatusDown, events.StatusUp
	}
	return events.StatusUp, events.StatusDown
}
