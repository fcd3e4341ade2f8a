package jobs

import (
	"reflect"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

// planEvent turns the planner's plan into the event that records it.
// Dependencies become Ganeti's relative indices (-1 is the job just
// before). Empty lists are nil throughout, so a plan converted now and one
// decoded from the log compare equal (see samePlan).
func planEvent(request string, p *planner.Plan) events.PlanComputed {
	out := events.PlanComputed{Request: request, ScoreBefore: p.ScoreBefore, ScoreAfter: p.ScoreAfter}
	for _, m := range p.Moved {
		out.Moved = append(out.Moved, events.Moved{Instance: m.Instance, Group: m.Group, Nodes: m.Nodes})
	}
	for _, f := range p.Failed {
		out.Failed = append(out.Failed, events.Failed{Instance: f.Instance, Reason: f.Reason})
	}
	for i, j := range p.Jobs {
		ej := events.Job{Index: i}
		for _, op := range j.Opcodes {
			ej.Opcodes = append(ej.Opcodes, events.Opcode{
				OpID: events.OpID(op.Kind), Instance: op.Instance,
				TargetNode: op.TargetNode, RemoteNode: op.RemoteNode, Mode: op.Mode,
				AllowFailover: op.AllowFailover, IgnoreConsistency: op.IgnoreConsistency,
				From: op.From, To: op.To,
			})
		}
		for _, d := range j.Depends {
			dep := events.Dependency{Job: d.Job - i}
			for _, st := range d.Statuses {
				dep.Statuses = append(dep.Statuses, events.JobStatus(st))
			}
			ej.Depends = append(ej.Depends, dep)
		}
		out.Jobs = append(out.Jobs, ej)
	}
	return out
}

// SamePlan compares what a plan decides (moves, failures, jobs), not its
// scores: an approval re-plans and appends a new plan only when a decision
// changed.
func SamePlan(a, b *events.PlanComputed) bool {
	return reflect.DeepEqual(normPlan(a), normPlan(b))
}

type planCore struct {
	Moved  []events.Moved
	Failed []events.Failed
	Jobs   []events.Job
}

func normPlan(p *events.PlanComputed) planCore {
	c := planCore{}
	for _, m := range p.Moved {
		m.Nodes = nilIfEmpty(m.Nodes)
		c.Moved = append(c.Moved, m)
	}
	c.Failed = append(c.Failed, p.Failed...)
	for _, j := range p.Jobs {
		nj := events.Job{Index: j.Index, Opcodes: append([]events.Opcode(nil), j.Opcodes...)}
		for _, d := range j.Depends {
			nj.Depends = append(nj.Depends, events.Dependency{Job: d.Job, Statuses: nilIfEmpty(d.Statuses)})
		}
		c.Jobs = append(c.Jobs, nj)
	}
	return c
}

func nilIfEmpty[T any](xs []T) []T {
	if len(xs) == 0 {
		return nil
	}
	return xs
}
