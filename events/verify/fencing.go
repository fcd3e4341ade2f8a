package verify

import (
	"fmt"

	"github.com/drovehq/drove/events"
)

// fencing checks the lease's promise (DESIGN.md, "Node lifecycle"): once
// the planner has declared a node lost, the node's executor starts and
// finishes nothing there until an operator brings the node online. Its
// executor fenced itself before the planner gave up on it, so a start
// stamped inside that span is an executor acting on moves the rest of the
// system had given up on.
//
// One finish is expected: a move whose driver had passed its point of no
// return when the node was cut off ends, and its success (an opcode's end
// with its InstancePlaced, a migration's switch) reaches the log when the
// node reconnects, after the loss. That is the "operator action needed"
// case the planner reports (it ended the job or the migration as failed
// at the loss): it is listed in Report.OperatorAction, not a violation,
// when the move began before the loss — an opcode started, a phase
// dispatched. A move that began after the loss is a violation.
//
// A node is lost when it turns offline by the planner's own decision: a
// NodeUpdated offline that no request caused (an operator's offline is
// the planner's answer to a NodeActionRequested, so it names the request
// and is caused by it). It is back when a NodeUpdated says it is online.
// The spans come from drove.inventory and the executors' events from
// drove.opcodes, so their order is the producers' clocks (see Order in
// the package doc); the fence leaves a margin of the lease less the fence
// (15 s by default) for clocks to differ.
type fencing struct {
	rep    *Report
	nodes  map[string]*lease
	starts map[opKey]Ref    // each opcode's first start
	phases map[phaseKey]Ref // each phase's dispatch
}

// lease is what the log says of one node's lease.
type lease struct {
	offline bool
	lost    *Ref // the declaration, while the node is lost
}

func newFencing(rep *Report) *fencing {
	return &fencing{rep: rep, nodes: map[string]*lease{}, starts: map[opKey]Ref{}, phases: map[phaseKey]Ref{}}
}

// node folds a node's restated state. A node first stated offline (a
// seeded cluster) was never lost: it was never online.
func (f *fencing) node(p events.NodeUpdated, e *event) {
	l, known := f.nodes[p.Name]
	if !known {
		f.nodes[p.Name] = &lease{offline: p.Offline}
		return
	}
	switch {
	case p.Offline && !l.offline && e.env.Reason.RequestID == "" && e.env.CausationID == "":
		ref := e.ref
		l.lost = &ref
		f.rep.Counts.Lost++
	case !p.Offline:
		l.lost = nil
	}
	l.offline = p.Offline
}

// lostAt returns the declaration that node is lost under, if it is.
func (f *fencing) lostAt(node string) (Ref, bool) {
	if l, ok := f.nodes[node]; ok && l.lost != nil {
		return *l.lost, true
	}
	return Ref{}, false
}

func (f *fencing) observe(e *event) {
	switch p := e.p.(type) {
	case events.OpcodeStarted:
		k := opKey{p.Request, p.Job, p.Index}
		if lost, ok := f.lostAt(p.Node); ok {
			f.rep.add(Fencing, []Ref{lost, e.ref}, "opcode %d of job %d of %s started on %s after the planner declared %s lost, before it was brought online",
				p.Index, p.Job, p.Request, p.Node, p.Node)
		} else if _, seen := f.starts[k]; !seen {
			f.starts[k] = e.ref
		}
	case events.OpcodeEnded:
		lost, ok := f.lostAt(p.Node)
		if !ok || p.Status != events.JobSuccess {
			return
		}
		start, began := f.starts[opKey{p.Request, p.Job, p.Index}]
		what := fmt.Sprintf("opcode %d of job %d of %s ended success on %s after the planner declared %s lost",
			p.Index, p.Job, p.Request, p.Node, p.Node)
		f.finished(began, start, lost, e.ref, what, "it started before the loss")
	case events.MigrationPhaseDispatched:
		f.phases[phaseKey{p.Migration, p.Seq}] = e.ref
	case events.MigrationPhaseEnded:
		lost, ok := f.lostAt(p.Node)
		if !ok || p.Status != events.JobSuccess {
			return
		}
		d, began := f.phases[phaseKey{p.Migration, p.Seq}]
		what := fmt.Sprintf("phase %d (%s) of migration %s ended success on %s after the planner declared %s lost",
			p.Seq, p.Phase, p.Migration, p.Node, p.Node)
		// Only a switch has a point of no return: any other phase the
		// fence supersedes, so it cannot succeed after the loss.
		f.finished(began && p.Phase == events.PhaseSwitch, d, lost, e.ref, what, "its switch was dispatched before the loss")
	}
}

// finished judges a success ended on a lost node: the operator-action
// case when the move began (at from) before the loss — a start is kept
// only while its node is not lost, so one kept came before — else a
// violation.
func (f *fencing) finished(began bool, from, lost, end Ref, what, why string) {
	if began {
		f.rep.OperatorAction = append(f.rep.OperatorAction, Violation{Invariant: Fencing,
			Message: what + ": " + why + " and passed its point of no return while the node was cut off; operator action needed",
			Events:  []Ref{from, lost, end}})
		return
	}
	f.rep.add(Fencing, []Ref{lost, end}, "%s: it began after the loss, so the node acted while the rest of the system had given up on it", what)
}
