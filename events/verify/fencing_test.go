package verify

import (
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
)

// n1Total is n1's inventory figure, restated by every NodeUpdated of it.
var n1Total = events.Resources{MemoryMiB: 4 * mem, DiskMiB: 4 * disk, CPUs: 8}

// lostN1 is the planner's own declaration: n1 offline, caused by no request.
func lostN1() step {
	return s(events.NodeUpdated{Name: "n1", Group: "g1", Total: n1Total, Free: n1Total, VMCapable: true, Offline: true})
}

// onlineN1 is an operator's online of n1: the planner's answer, caused by
// the request it answers.
func onlineN1() []step {
	return []step{
		{p: events.NodeActionRequested{Request: "na-1", Node: "n1", Action: events.NodeOnline}, label: "online"},
		{p: events.NodeUpdated{Name: "n1", Group: "g1", Total: n1Total, Free: n1Total, VMCapable: true}, cause: "online"},
		{p: events.NodeActionEnded{Request: "na-1", Node: "n1", Action: events.NodeOnline, Reason: "back"}, cause: "online"},
	}
}

// cutSource is an evacuation of n1 whose source is cut off while job 0
// runs: the planner declares n1 lost, ends job 0 with "operator action
// needed" and cancels job 1; on reconnection the executor appends what its
// driver, past the point of no return, finished meanwhile: the opcode's
// success and i1's placement on n2. Then an operator brings n1 online.
func cutSource() []step {
	ev := evac{statuses: []events.JobStatus{events.JobSuccess}}
	pl := ev.plan()
	op := pl.Jobs[0].Opcodes[0]
	out := append(cluster(4*mem),
		s(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1"}, Mode: events.EvacAll}),
		s(pl),
		s(events.JobReleased{Request: "r1", Job: pl.Jobs[0]}),
		s(events.OpcodeDispatched{Request: "r1", Job: 0, Node: "n1", Opcode: op}),
		s(events.OpcodeStarted{Request: "r1", Job: 0, Node: "n1"}),
		s(events.MoveStatusReported{Request: "r1", Instance: "i1", Node: "n1", Status: events.StatusMigrationSource}),
		s(events.MoveStatusReported{Request: "r1", Instance: "i1", Node: "n2", Status: events.StatusMigrationDestination}),
		lostN1(),
		s(events.JobEnded{Request: "r1", Job: 0, Status: events.JobError}),
		s(events.JobCancelled{Request: "r1", Job: 1, Reason: "job 0 failed"}),
		s(events.RequestFinished{Request: "r1", Moved: []events.Moved{},
			Failed: []events.Failed{{Instance: "i1", Reason: "operator action needed"}, {Instance: "i2", Reason: "cancelled"}}}),
		s(events.OpcodeEnded{Request: "r1", Job: 0, Node: "n1", Status: events.JobSuccess}),
		s(events.MoveStatusReported{Request: "r1", Instance: "i1", Node: "n1", Status: events.StatusDown}),
		s(events.MoveStatusReported{Request: "r1", Instance: "i1", Node: "n2", Status: events.StatusUp}),
		s(events.InstancePlaced{Instance: "i1", Group: "g1", PrimaryNode: "n2", PreviousGroup: "g1", PreviousPrimary: "n1", Request: "r1"}))
	return append(out, onlineN1()...)
}

// A source cut off past its point of no return, whose success reaches the
// log after the planner declared it lost, is the operator-action case:
// listed, not a violation. So is a switch dispatched before the loss of
// its source and ended after it.
func TestFencingOperatorActionIsNoViolation(t *testing.T) {
	rep := Check(build(t, cutSource()), Options{})
	expect(t, rep, nil, "1 nodes declared lost, 1 moves ended on them")
	if len(rep.OperatorAction) != 1 || !strings.Contains(rep.OperatorAction[0].Message, "opcode 0 of job 0 of r1 ended success on n1") {
		t.Fatalf("operator action: %+v", rep.OperatorAction)
	}

	mig := append(cluster(4*mem), migration()...)
	sw := find(mig, func(p events.Payload) bool {
		e, ok := p.(events.MigrationPhaseEnded)
		return ok && e.Phase == events.PhaseSwitch
	})
	lost := s(events.NodeUpdated{Name: "n2", Group: "g1", Total: n1Total, Free: n1Total, VMCapable: true, Offline: true})
	rep = Check(build(t, with(mig, sw, lost)), Options{})
	expect(t, rep, nil, "[operator action] phase 2 (switch) of migration m1 ended success on n2")
}

// Nothing starts on a lost node, and nothing begun after the loss
// finishes there; an operator's offline is not a loss, and once the node
// is online again it works as before.
func TestFencingViolations(t *testing.T) {
	cut := cutSource()
	lostAt := find(cut, func(p events.Payload) bool { e, ok := p.(events.NodeUpdated); return ok && e.Offline })
	// The executor, restarted while n1 is lost, runs its opcode again.
	rep := Check(build(t, with(cut, lostAt+1, s(events.OpcodeStarted{Request: "r1", Job: 0, Node: "n1"}))), Options{})
	expect(t, rep, []Invariant{Fencing}, "opcode 0 of job 0 of r1 started on n1 after the planner declared n1 lost")

	// A second evacuation moving i2 from n1 once n1 is online again, or
	// after an operator's offline (caused by the request it answers), is
	// no violation.
	pl := events.PlanComputed{Request: "r2", Moved: []events.Moved{{Instance: "i2", Group: "g1", Nodes: []string{"n3"}}},
		Failed: []events.Failed{}, Jobs: []events.Job{{Index: 0, Opcodes: []events.Opcode{migrate("i2", "n1", "n3")}}}}
	second := append([]step{
		s(events.EvacuationRequested{Request: "r2", Nodes: []string{"n1"}, Mode: events.EvacAll}),
		s(pl), s(events.JobReleased{Request: "r2", Job: pl.Jobs[0]})},
		run("r2", 0, pl.Jobs[0].Opcodes[0], true)...)
	second = append(second, s(events.JobEnded{Request: "r2", Job: 0, Status: events.JobSuccess}),
		s(events.RequestFinished{Request: "r2", Moved: pl.Moved, Failed: []events.Failed{}}))
	rep = Check(build(t, append(cut, second...)), Options{})
	expect(t, rep, nil, "")
	byHand := replaced(onlineN1(), 1, events.NodeUpdated{Name: "n1", Group: "g1", Total: n1Total, Free: n1Total, VMCapable: true, Offline: true})
	rep = Check(build(t, append(append(cluster(4*mem), byHand...), second...)), Options{})
	expect(t, rep, nil, "0 nodes declared lost")
	// Without the operator's request it is the planner's loss.
	rep = Check(build(t, append(append(cluster(4*mem), lostN1()), second...)), Options{})
	expect(t, rep, []Invariant{Fencing}, "opcode 0 of job 0 of r2 started on n1 after the planner declared n1 lost")

	// A phase dispatched after its node was lost cannot succeed there.
	mig := append(cluster(4*mem), migration()...)
	sync := find(mig, func(p events.Payload) bool {
		e, ok := p.(events.MigrationPhaseDispatched)
		return ok && e.Phase == events.PhaseSync
	})
	lost := s(events.NodeUpdated{Name: "n2", Group: "g1", Total: n1Total, Free: n1Total, VMCapable: true, Offline: true})
	rep = Check(build(t, with(mig, sync, lost)), Options{})
	expect(t, rep, []Invariant{Fencing}, "phase 1 (sync) of migration m1 ended success on n2 after the planner declared n2 lost: it began after the loss")
}
