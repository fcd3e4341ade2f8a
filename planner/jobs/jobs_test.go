package jobs

import (
	"slices"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// world is a fold and the Env that applies decisions to it, as the
// service wires them.
type world struct {
	inv *inventory.Inventory
	st  *State
	env Env
}

func newWorld() *world {
	w := &world{inv: inventory.New(), st: NewState()}
	w.env = Env{Inv: w.inv, Apply: func(e events.Envelope, p events.Payload) { w.apply(e, p) },
		Options: planner.DefaultOptions(), MaxRunningMoves: 5, Producer: "test"}
	return w
}

func (w *world) apply(e events.Envelope, p events.Payload) {
	if !w.st.Apply(e, p, inventory.Unread(e)) {
		w.inv.Apply(p, inventory.Unread(e))
	}
}

func (w *world) read(p events.Payload) {
	w.apply(events.New(p, events.WithReason(events.Reason{Actor: "operator:test", Why: "test"})), p)
}

func types(d Decision) []string {
	var out []string
	for _, e := range d.Events {
		out = append(out, e.Type)
	}
	return out
}

func migrate(instance, from, to string) events.Opcode {
	return events.Opcode{OpID: events.OpInstanceMigrate, Instance: instance, From: from, To: to}
}

// A failed job cancels the job that needs its success, which cascades to
// the job depending on that one; the request then finishes with both.
func TestFailureCancelsDependentsInCascade(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.read(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1"}, Mode: events.EvacAll})
	success := []events.JobStatus{events.JobSuccess}
	w.read(events.PlanComputed{Request: "r1", Jobs: []events.Job{
		{Index: 0, Opcodes: []events.Opcode{migrate("a", "n1", "n2")}},
		{Index: 1, Opcodes: []events.Opcode{migrate("b", "n1", "n3")}, Depends: []events.Dependency{{Job: -1, Statuses: success}}},
		{Index: 2, Opcodes: []events.Opcode{migrate("c", "n1", "n3")}, Depends: []events.Dependency{{Job: -1}}},
	}})
	d := Decide(w.env, w.st, "r1")
	if want := []string{events.TypeJobReleased, events.TypeOpcodeDispatched}; !slices.Equal(types(d), want) {
		t.Fatalf("first pass decided %v, want %v", types(d), want)
	}
	w.read(events.OpcodeEnded{Request: "r1", Job: 0, Index: 0, Node: "n1", Status: events.JobError, Error: "disk gone"})
	d = Decide(w.env, w.st, "r1")
	want := []string{events.TypeJobEnded, events.TypeJobCancelled, events.TypeJobReleased, events.TypeOpcodeDispatched}
	if !slices.Equal(types(d), want) {
		t.Fatalf("after the failure decided %v, want %v", types(d), want)
	}
	w.read(events.OpcodeEnded{Request: "r1", Job: 2, Index: 0, Node: "n1", Status: events.JobSuccess})
	d = Decide(w.env, w.st, "r1")
	if want := []string{events.TypeJobEnded, events.TypeRequestFinished}; !slices.Equal(types(d), want) || d.Outcome != "partial" {
		t.Fatalf("at the end decided %v (outcome %q), want %v, partial", types(d), d.Outcome, want)
	}
	fin, _ := events.As[events.RequestFinished](d.Events[len(d.Events)-1])
	if len(fin.Moved) != 0 || len(fin.Failed) != 2 {
		t.Errorf("finished with moved %v, failed %v; want nothing moved (the plan named no moves) and a, b failed", fin.Moved, fin.Failed)
	}
}

// Jobs wait for a free slot: at most MaxMovesPerNode jobs send from one
// node, and a cancelled request cancels every job not released.
func TestReleaseWithinLimitsThenCancel(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.read(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1"}, Mode: events.EvacAll, MaxMovesPerNode: 1})
	w.read(events.PlanComputed{Request: "r1", Jobs: []events.Job{
		{Index: 0, Opcodes: []events.Opcode{migrate("a", "n1", "n2")}},
		{Index: 1, Opcodes: []events.Opcode{migrate("b", "n1", "n3")}},
	}})
	d := Decide(w.env, w.st, "r1")
	if want := []string{events.TypeJobReleased, events.TypeOpcodeDispatched}; !slices.Equal(types(d), want) {
		t.Fatalf("decided %v, want one job released (one move per node)", types(d))
	}
	w.read(events.RequestCancelled{Request: "r1"})
	d = Decide(w.env, w.st, "r1")
	if want := []string{events.TypeOpcodeCancelled, events.TypeJobCancelled}; !slices.Equal(types(d), want) {
		t.Fatalf("on cancel decided %v, want %v", types(d), want)
	}
}

// A plan counts the room other active requests' moves still need: a lands
// on n3 for r1, whose job has not ended, so r2 cannot put b there too
// although the inventory still shows n3 empty (test/chaos found two plans
// filling one node before this).
func TestPlanReservesTheRoomOfMovesInFlight(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.read(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred})
	for _, n := range []string{"n1", "n2", "n3"} {
		w.read(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
			Total: events.Resources{MemoryMiB: 8192, DiskMiB: 100 << 10, CPUs: 16, Spindles: 4}})
	}
	for name, node := range map[string]string{"a": "n1", "b": "n2"} {
		w.read(events.InstanceDeclared{Name: name, Owner: "acct", Storage: events.StorageRBD, RunState: events.RunRunning,
			PrimaryNode: node, Size: events.Size{MemoryMiB: 6144, VCPUs: 1, DisksMiB: []int64{1024}}})
	}
	plan := func(id, node string) events.PlanComputed {
		t.Helper()
		w.read(events.EvacuationRequested{Request: id, Nodes: []string{node}, Mode: events.EvacAll})
		for _, e := range Decide(w.env, w.st, id).Events {
			if p, err := events.As[events.PlanComputed](e); err == nil {
				return p
			}
		}
		t.Fatalf("%s: no plan", id)
		return events.PlanComputed{}
	}
	if p := plan("r1", "n1"); len(p.Moved) != 1 || p.Moved[0].Nodes[0] != "n3" {
		t.Fatalf("r1 planned %+v, want a moved to n3 (n2 has 2 GiB free)", p.Moved)
	}
	p := plan("r2", "n2")
	if len(p.Moved) != 0 || len(p.Failed) != 1 || p.Failed[0].Instance != "b" {
		t.Fatalf("r2 planned moved %+v, failed %+v; want b failed: n3's room is a's, n1 is drained", p.Moved, p.Failed)
	}
}

// With auto concurrency a node's link decides: one move fills n1's link
// by the model, so the second waits; once the executor measures the first
// far below the link (a slower path than announced), the second goes.
func TestAutoReleasesOnMeasuredRoom(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.env.AutoMovesPerNode = true
	const mib = 1 << 20
	for _, n := range []string{"n1", "n2", "n3"} {
		w.read(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true, SendBytesPerSecond: 1000 * mib, ReceiveBytesPerSecond: 1000 * mib})
	}
	for _, name := range []string{"a", "b"} {
		w.read(events.InstanceDeclared{Name: name, Owner: "acct", Storage: events.StorageZFSLocal, RunState: events.RunRunning,
			PrimaryNode: "n1", Size: events.Size{MemoryMiB: 1024, VCPUs: 1, DisksMiB: []int64{10240}}})
	}
	w.read(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1"}, Mode: events.EvacAll})
	w.read(events.PlanComputed{Request: "r1", Jobs: []events.Job{
		{Index: 0, Opcodes: []events.Opcode{migrate("a", "n1", "n2")}},
		{Index: 1, Opcodes: []events.Opcode{migrate("b", "n1", "n3")}},
	}})
	if d := Decide(w.env, w.st, "r1"); !slices.Equal(types(d), []string{events.TypeJobReleased, events.TypeOpcodeDispatched}) {
		t.Fatalf("decided %v, want one job released: it fills n1's link", types(d))
	}
	w.read(events.Progress{Request: "r1", Job: 0, Index: 0, Instance: "a", Node: "n1", Phase: events.PhaseSync,
		State: events.ProgressRunning, Current: 1, Total: 10, BytesPerSecond: 100 * mib})
	if d := Decide(w.env, w.st, "r1"); !slices.Equal(types(d), []string{events.TypeJobReleased, events.TypeOpcodeDispatched}) {
		t.Fatalf("after a measured 100 MiB/s decided %v, want the second job released", types(d))
	}
}
