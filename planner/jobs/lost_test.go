package jobs

import (
	"slices"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
)

// lostWorld: nodes n1..n3, a request moving a to n2 (job 0) and b to n3
// (job 1), both released and dispatched to n1.
func lostWorld(t *testing.T) *world {
	w := newWorld()
	w.read(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred})
	for _, n := range []string{"n1", "n2", "n3"} {
		w.read(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
			Total: events.Resources{MemoryMiB: 8192, DiskMiB: 1 << 20, CPUs: 8}})
	}
	w.read(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1"}, Mode: events.EvacAll})
	w.read(events.PlanComputed{Request: "r1", Jobs: []events.Job{
		{Index: 0, Opcodes: []events.Opcode{migrate("a", "n1", "n2")}},
		{Index: 1, Opcodes: []events.Opcode{migrate("b", "n1", "n3")}},
	}})
	d := Decide(w.env, w.st, "r1")
	if n := strings.Count(strings.Join(types(d), ","), events.TypeOpcodeDispatched); n != 2 {
		t.Fatalf("first pass %v; want both jobs dispatched", types(d))
	}
	return w
}

func (w *world) offline(node string) {
	n := w.inv.NodeState(node)
	n.Offline = true
	w.read(n)
}

// Target lost: the opcode is cancelled on its source (which keeps the
// instance); the job then ends canceled with the executor's end.
func TestTargetLostCancelsTheRunningOpcode(t *testing.T) {
	t.Parallel()
	w := lostWorld(t)
	w.offline("n2")
	d := Decide(w.env, w.st, "r1")
	if !slices.Equal(types(d), []string{events.TypeOpcodeCancelled}) {
		t.Fatalf("target lost: decided %v, want one opcode.cancelled", types(d))
	}
	c, _ := events.As[events.OpcodeCancelled](d.Events[0])
	if c.Job != 0 || c.Node != "n1" || !strings.Contains(c.Reason, "n2 lost") {
		t.Fatalf("cancel %+v", c)
	}
	if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
		t.Fatalf("cancelled twice: %v", types(d))
	}
	w.read(events.OpcodeEnded{Request: "r1", Job: 0, Index: 0, Node: "n1", Status: events.JobCanceled, Error: c.Reason})
	w.read(events.OpcodeEnded{Request: "r1", Job: 1, Index: 0, Node: "n1", Status: events.JobSuccess})
	d = Decide(w.env, w.st, "r1")
	fin, err := events.As[events.RequestFinished](d.Events[len(d.Events)-1])
	if err != nil || len(fin.Failed) != 1 || fin.Failed[0].Instance != "a" {
		t.Fatalf("finished %v %+v; want a failed", types(d), fin)
	}
}

// Source lost: the job ends error at once, saying an operator must act;
// a job not dispatched yet to a lost node is not dispatched.
func TestSourceLostEndsTheJobForAnOperator(t *testing.T) {
	t.Parallel()
	w := lostWorld(t)
	w.offline("n1")
	d := Decide(w.env, w.st, "r1")
	want := []string{events.TypeOpcodeCancelled, events.TypeJobEnded, events.TypeOpcodeCancelled, events.TypeJobEnded, events.TypeRequestFinished}
	if !slices.Equal(types(d), want) {
		t.Fatalf("source lost: decided %v, want %v", types(d), want)
	}
	// The lost node is told too: an executor started afresh there must
	// not run the move again.
	c, _ := events.As[events.OpcodeCancelled](d.Events[0])
	if c.Job != 0 || c.Node != "n1" || !strings.Contains(c.Reason, "n1 lost") {
		t.Fatalf("cancel %+v", c)
	}
	je, _ := events.As[events.JobEnded](d.Events[1])
	if je.Status != events.JobError || !strings.Contains(je.Error, "operator action needed") || !strings.Contains(je.Error, "n1") {
		t.Fatalf("job end %+v", je)
	}
	// A late end from the executor, once its node is back, changes nothing.
	w.read(events.OpcodeEnded{Request: "r1", Job: 0, Index: 0, Node: "n1", Status: events.JobCanceled})
	if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
		t.Fatalf("after the late end: %v", types(d))
	}

	w2 := newWorld()
	w2.read(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred})
	for _, n := range []string{"n1", "n2"} {
		w2.read(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true, Total: events.Resources{MemoryMiB: 8192, DiskMiB: 1 << 20, CPUs: 8}})
	}
	w2.offline("n2")
	w2.read(events.EvacuationRequested{Request: "r2", Nodes: []string{"n1"}, Mode: events.EvacAll})
	w2.read(events.PlanComputed{Request: "r2", Jobs: []events.Job{{Index: 0, Opcodes: []events.Opcode{migrate("a", "n1", "n2")}}}})
	d = Decide(w2.env, w2.st, "r2")
	if slices.Contains(types(d), events.TypeOpcodeDispatched) || !slices.Contains(types(d), events.TypeJobEnded) {
		t.Fatalf("to an offline target: decided %v; want the job ended, nothing dispatched", types(d))
	}
}
