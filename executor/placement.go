package executor

import (
	"fmt"

	"github.com/drovehq/drove/events"
)

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
// (events.Opcode.Leaves, the rule the planner service dispatches a job's
// next opcode from). The previous primary is From, the node the opcode
// was dispatched to; the dispatch's facts supply the previous secondary
// where the opcode does not say, and the nodes' groups.
func planMoves(op events.Opcode, f *events.InstanceFacts) moves {
	mirrored := f.Storage.InternallyMirrored()
	m := moves{prevPrimary: op.From, prevSecondary: f.Secondary}
	m.primary, m.secondary = op.Leaves(mirrored)
	if op.OpID != events.OpInstanceReplaceDisks {
		m.prevSecondary = m.primary // with mirrored storage the disks were on To
		if !mirrored {
			m.prevSecondary = ""
		}
	}
	m.prevGroup, m.group = f.Groups[m.prevPrimary], f.Groups[m.primary]
	return m
}

// factsOf checks that a dispatch carries what an opcode needs to know of
// its instance and of nodes: without storage kind and size there is
// nothing a driver can safely do.
func factsOf(f *events.InstanceFacts, instance string, nodes ...string) (*events.InstanceFacts, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: the dispatch carries no facts of instance %q", ErrUnknownInstance, instance)
	}
	for _, n := range nodes {
		if _, ok := f.Groups[n]; !ok {
			return nil, fmt.Errorf("%w: the dispatch knows no group of node %q", ErrUnknownInstance, n)
		}
	}
	return f, nil
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
