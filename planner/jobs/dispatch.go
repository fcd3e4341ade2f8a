package jobs

import (
	"fmt"

	"github.com/drovehq/drove/events"
)

// advance moves a running job on: dispatch its next opcode, ask its
// executor to cancel the running one, or end the job.
func (p *pass) advance(i int) {
	r := p.r
	j, spec := r.jobs[i], r.planJob(i)
	var prev events.Envelope // the end of the opcode before, the natural cause
	for k, op := range spec.Opcodes {
		o := j.ops[k]
		switch {
		case o != nil && o.ended == events.JobSuccess:
			prev = o.endEnv
			continue
		case o != nil && o.ended != "":
			msg := o.endErr
			if msg == "" {
				msg = fmt.Sprintf("opcode %d (%s) ended %s", k, op.OpID, o.ended)
			}
			p.emit(events.JobEnded{Request: r.id, Job: i, Status: o.ended, Error: msg},
				fmt.Sprintf("job %d ended %s: opcode %d ended %s", i, o.ended, k, o.ended), o.endEnv)
		case o == nil || o.dispatched == "":
			if r.cancelled != nil {
				p.emit(events.JobEnded{Request: r.id, Job: i, Status: events.JobCanceled, Error: "request cancelled"},
					fmt.Sprintf("job %d ended canceled before opcode %d: the request was cancelled", i, k), *r.cancelled)
				return
			}
			node := op.From
			if op.IgnoreConsistency && op.To != "" {
				// A failover away from an offline primary: nobody answers
				// there, so the target starts the instance from its replica.
				node = op.To
			}
			if node == "" { // the planner names it; an instance's primary runs it otherwise
				if in := p.env.Inv.Instances[op.Instance]; in != nil {
					node = in.PrimaryNode
				}
			}
			if p.lostBeforeDispatch(i, k, op, node, prev) { // lost.go
				return
			}
			p.emit(events.OpcodeDispatched{Request: r.id, Job: i, Index: k, Node: node, Opcode: op,
				Facts: p.facts(spec.Opcodes, k)},
				fmt.Sprintf("dispatch opcode %d of job %d (%s of %s) to %s", k, i, op.OpID, op.Instance, node), prev)
		default: // dispatched and not ended
			if p.lostWhileRunning(i, k, op, o) { // lost.go
				return
			}
			if r.cancelled != nil && !o.cancelSent {
				p.emit(events.OpcodeCancelled{Request: r.id, Job: i, Index: k, Node: o.dispatched,
					Reason: cancelReason(r)},
					fmt.Sprintf("cancel opcode %d of job %d on %s: the request was cancelled", k, i, o.dispatched), *r.cancelled)
			}
		}
		return
	}
	p.emit(events.JobEnded{Request: r.id, Job: i, Status: events.JobSuccess},
		fmt.Sprintf("job %d ended success: all %d opcodes succeeded", i, len(spec.Opcodes)), prev)
}

func cancelReason(r *request) string {
	return fmt.Sprintf("request cancelled by %s: %s", r.cancelled.Reason.Actor, r.cancelled.Reason.Why)
}

// facts are what the dispatch of ops[k] tells its executor of the
// instance (events.InstanceFacts): the inventory's, except that a later
// opcode of a job starts from the placement the one before it leaves.
// That placement is in the log (the previous opcode's InstancePlaced,
// written with its end), but the service may read the end before it, in
// another partition; the job's opcodes say it without waiting.
func (p *pass) facts(ops []events.Opcode, k int) *events.InstanceFacts {
	op := ops[k]
	f := p.env.Inv.Facts(op.Instance, op.From, op.To)
	if f == nil || k == 0 || ops[k-1].Instance != op.Instance {
		return f
	}
	f.Primary, f.Secondary = ops[k-1].Leaves(f.Storage.InternallyMirrored())
	for _, n := range []string{f.Primary, f.Secondary} {
		if nd := p.env.Inv.Nodes[n]; nd != nil {
			f.Groups[n] = nd.Group
		}
	}
	return f
}
