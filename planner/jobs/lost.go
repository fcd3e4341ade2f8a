package jobs

import (
	"fmt"

	"github.com/drovehq/drove/events"
)

// A node that is offline — marked so by an operator, or declared lost when
// its lease expired (planner/nodes) — answers nothing, so a job does not
// wait for it (DESIGN.md, "Node lifecycle"):
//
//   - an opcode not yet dispatched whose executor's node or target is
//     offline is not dispatched: the job ends error, the instance where
//     it is;
//   - a running opcode whose target is lost is cancelled on its source,
//     whose executor aborts it and keeps (or restarts) the instance there:
//     the job ends canceled, the move failed;
//   - a running opcode whose executor's node (the source) is lost ends
//     the job error at once, saying an operator must act: the instance's
//     data is on the lost node, and its executor, fenced (it cannot renew
//     its lease), does not switch and rolls back if it is only cut off.
//     The opcode is cancelled on that node as well: an executor that
//     starts afresh (its process restarted, or its producer fenced) has
//     no memory of its fence, and would otherwise run again, on a node
//     the rest of the system gave up on, a move whose job already ended.

// offline reports whether node is known and offline.
func (p *pass) offline(node string) bool {
	n := p.env.Inv.Nodes[node]
	return n != nil && n.Offline
}

// lostBeforeDispatch ends job i instead of dispatching opcode k to node
// when node or the opcode's target is offline; it reports whether it did.
func (p *pass) lostBeforeDispatch(i, k int, op events.Opcode, node string, prev events.Envelope) bool {
	lost := ""
	switch {
	case p.offline(node):
		lost = node
	case op.To != "" && op.To != node && p.offline(op.To):
		lost = op.To
	default:
		return false
	}
	msg := fmt.Sprintf("node %s is offline: opcode %d (%s of %s) not dispatched; %s stays where it is",
		lost, k, op.OpID, op.Instance, op.Instance)
	p.emit(events.JobEnded{Request: p.r.id, Job: i, Status: events.JobError, Error: msg},
		fmt.Sprintf("job %d ended error: %s", i, msg), prev)
	return true
}

// lostWhileRunning answers running opcode k of job i when a node it
// involves is offline; it reports whether the job is answered for now.
func (p *pass) lostWhileRunning(i, k int, op events.Opcode, o *opcode) bool {
	r := p.r
	switch {
	case p.offline(o.dispatched):
		msg := fmt.Sprintf("node %s was lost while it ran opcode %d (%s of %s): operator action needed: "+
			"bring %s back or recover %s from it; the instance's data is on %s", o.dispatched, k, op.OpID,
			op.Instance, o.dispatched, op.Instance, o.dispatched)
		if op.To != "" && op.To != o.dispatched {
			msg += fmt.Sprintf(" and %s may hold a partial copy", op.To)
		}
		if !o.cancelSent {
			reason := fmt.Sprintf("node %s lost: its job ended; do not run %s of %s again", o.dispatched, op.OpID, op.Instance)
			p.emit(events.OpcodeCancelled{Request: r.id, Job: i, Index: k, Node: o.dispatched, Reason: reason},
				fmt.Sprintf("cancel opcode %d of job %d on %s: %s", k, i, o.dispatched, reason))
		}
		p.emit(events.JobEnded{Request: r.id, Job: i, Status: events.JobError, Error: msg},
			fmt.Sprintf("job %d ended error: %s", i, msg))
		return true
	case op.To != "" && op.To != o.dispatched && p.offline(op.To):
		if !o.cancelSent {
			reason := fmt.Sprintf("target node %s lost: abort and keep %s on %s", op.To, op.Instance, o.dispatched)
			p.emit(events.OpcodeCancelled{Request: r.id, Job: i, Index: k, Node: o.dispatched, Reason: reason},
				fmt.Sprintf("cancel opcode %d of job %d on %s: %s", k, i, o.dispatched, reason))
		}
		return true
	}
	return false
}
