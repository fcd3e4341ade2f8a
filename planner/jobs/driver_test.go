package jobs

import (
	"slices"
	"testing"

	"github.com/drovehq/drove/events"
)

// The helpers below walk requests through Decide as the service would:
// an event is read, then one pass decides for the request. They know
// nothing of the queue's rules; each test says what the decisions must be.

// planned is a plan's job i running ops, with deps.
func planned(i int, deps []events.Dependency, ops ...events.Opcode) events.Job {
	return events.Job{Index: i, Opcodes: ops, Depends: deps}
}

// after is a dependency on the job rel places before (rel < 0), accepting
// the statuses given (none: any end).
func after(rel int, statuses ...events.JobStatus) []events.Dependency {
	return []events.Dependency{{Job: rel, Statuses: statuses}}
}

// evacuate reads an evacuation of nodes and the plan given (the plan a
// test needs, not one the planner computes), then decides.
func (w *world) evacuate(id string, perNode int, nodes []string, jobs ...events.Job) Decision {
	w.read(events.EvacuationRequested{Request: id, Nodes: nodes, Mode: events.EvacAll, MaxMovesPerNode: perNode})
	w.read(events.PlanComputed{Request: id, Jobs: jobs})
	return Decide(w.env, w.st, id)
}

// end reads the end of opcode index of job i and decides.
func (w *world) end(id string, i, index int, status events.JobStatus, msg string) Decision {
	node := ""
	if r := w.st.requests[id]; r != nil {
		if j := r.jobs[i]; j != nil && j.ops[index] != nil {
			node = j.ops[index].dispatched
		}
	}
	w.read(events.OpcodeEnded{Request: id, Job: i, Index: index, Node: node, Status: status, Error: msg})
	return Decide(w.env, w.st, id)
}

// released lists the jobs a pass released, in order.
func released(d Decision) []int {
	var out []int
	for _, e := range d.Events {
		if p, err := events.As[events.JobReleased](e); err == nil {
			out = append(out, p.Job.Index)
		}
	}
	return out
}

// cancelledJobs maps the jobs a pass cancelled to the reason.
func cancelledJobs(d Decision) map[int]string {
	out := map[int]string{}
	for _, e := range d.Events {
		if p, err := events.As[events.JobCancelled](e); err == nil {
			out[p.Job] = p.Reason
		}
	}
	return out
}

// endedJobs maps the jobs a pass ended to their end.
func endedJobs(d Decision) map[int]events.JobEnded {
	out := map[int]events.JobEnded{}
	for _, e := range d.Events {
		if p, err := events.As[events.JobEnded](e); err == nil {
			out[p.Job] = p
		}
	}
	return out
}

// dispatches lists the opcodes a pass dispatched, in order.
func dispatches(d Decision) []events.OpcodeDispatched {
	var out []events.OpcodeDispatched
	for _, e := range d.Events {
		if p, err := events.As[events.OpcodeDispatched](e); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// finished is the RequestFinished a pass wrote; the test fails if none.
func finished(t *testing.T, d Decision) events.RequestFinished {
	t.Helper()
	for _, e := range d.Events {
		if p, err := events.As[events.RequestFinished](e); err == nil {
			return p
		}
	}
	t.Fatalf("no RequestFinished among %v", types(d))
	return events.RequestFinished{}
}

// sameInts compares two lists of job indexes, nil equal to empty.
func sameInts(a, b []int) bool { return slices.Equal(a, b) || (len(a) == 0 && len(b) == 0) }

// n1 is the node the tests' requests evacuate.
var n1 = []string{"n1"}
