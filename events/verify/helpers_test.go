package verify

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// step is one event of a hand-written log. label names it so that a later
// step can give it as its cause; cause names the step that caused it.
type step struct {
	p     events.Payload
	label string
	cause string
}

func s(p events.Payload) step { return step{p: p} }

// build turns steps into records, one partition per topic, one
// millisecond apart in step order.
func build(t testing.TB, steps []step) []Record {
	t.Helper()
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	byLabel := map[string]events.Envelope{}
	next := map[string]int64{}
	var out []Record
	for i, st := range steps {
		opts := []events.Option{events.WithTime(t0.Add(time.Duration(i) * time.Millisecond)),
			events.WithProducer("test"), events.WithReason(events.Reason{Actor: "operator:test", Why: "a hand-written log"})}
		if st.cause != "" {
			c, ok := byLabel[st.cause]
			if !ok {
				t.Fatalf("step %d: unknown cause %q", i, st.cause)
			}
			opts = append(opts, events.CausedBy(c), events.WithReason(c.Reason))
		}
		env := events.New(st.p, opts...)
		if _, err := events.Encode(env); err != nil {
			t.Fatalf("step %d (%s): %v", i, env.Type, err)
		}
		if st.label != "" {
			byLabel[st.label] = env
		}
		topic, err := events.TopicOf(env.Type)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Record{Topic: topic, Offset: next[topic], Event: env})
		next[topic]++
	}
	return out
}

const (
	mem  = 1024
	disk = 10240
)

// cluster declares group g1, nodes n1..n3 (4 GiB, 40 GiB each) and
// instances i1, i2 (plain, 1 GiB, 10 GiB) on n1 and i3 (zfs-local) on n2.
func cluster(nodeMem int64) []step {
	var out []step
	out = append(out, s(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred}))
	for _, n := range []string{"n1", "n2", "n3"} {
		r := events.Resources{MemoryMiB: nodeMem, DiskMiB: 4 * disk, CPUs: 8}
		out = append(out, s(events.NodeAnnounced{Name: n, Group: "g1", Total: r, Free: r, VMCapable: true}))
	}
	for _, in := range []struct{ name, node string }{{"i1", "n1"}, {"i2", "n1"}} {
		out = append(out, s(events.InstanceDeclared{Name: in.name, Owner: "acct", Storage: events.StoragePlain,
			RunState: events.RunRunning, PrimaryNode: in.node,
			Size: events.Size{MemoryMiB: mem, VCPUs: 1, DisksMiB: []int64{disk}}}))
	}
	out = append(out, s(events.InstanceDeclared{Name: "i3", Owner: "acct", Storage: events.StorageZFSLocal,
		RunState: events.RunRunning, PrimaryNode: "n2", Size: events.Size{MemoryMiB: mem, VCPUs: 1, DisksMiB: []int64{disk}}}))
	return out
}

func migrate(instance, from, to string) events.Opcode {
	return events.Opcode{OpID: events.OpInstanceMigrate, Instance: instance, TargetNode: to, From: from, To: to}
}

// evac describes an evacuation of n1: job 0 moves i1 to n2, job 1 (which
// depends on job 0 with statuses) moves i2 to n3.
type evac struct {
	statuses []events.JobStatus
	j0Fails  bool
}

func (ev evac) plan() events.PlanComputed {
	return events.PlanComputed{Request: "r1",
		Moved:  []events.Moved{{Instance: "i1", Group: "g1", Nodes: []string{"n2"}}, {Instance: "i2", Group: "g1", Nodes: []string{"n3"}}},
		Failed: []events.Failed{},
		Jobs: []events.Job{
			{Index: 0, Opcodes: []events.Opcode{migrate("i1", "n1", "n2")}},
			{Index: 1, Opcodes: []events.Opcode{migrate("i2", "n1", "n3")},
				Depends: []events.Dependency{{Job: -1, Statuses: ev.statuses}}},
		}}
}

// run is the events of one opcode's run on its source node, success or
// error, as the executor writes them.
func run(request string, job int, op events.Opcode, ok bool) []step {
	status, from, to := events.JobSuccess, events.StatusDown, events.StatusUp
	if !ok {
		status, from, to = events.JobError, events.StatusUp, events.StatusDown
	}
	out := []step{
		s(events.OpcodeDispatched{Request: request, Job: job, Node: op.From, Opcode: op}),
		s(events.OpcodeStarted{Request: request, Job: job, Node: op.From}),
		s(events.MoveStatusReported{Request: request, Instance: op.Instance, Node: op.From, Status: events.StatusMigrationSource}),
		s(events.MoveStatusReported{Request: request, Instance: op.Instance, Node: op.To, Status: events.StatusMigrationDestination}),
		s(events.OpcodeEnded{Request: request, Job: job, Node: op.From, Status: status}),
		s(events.MoveStatusReported{Request: request, Instance: op.Instance, Node: op.From, Status: from}),
		s(events.MoveStatusReported{Request: request, Instance: op.Instance, Node: op.To, Status: to}),
	}
	if ok {
		out = append(out, s(events.InstancePlaced{Instance: op.Instance, Group: "g1", PrimaryNode: op.To,
			PreviousGroup: "g1", PreviousPrimary: op.From, Request: request}))
	}
	return out
}

func (ev evac) steps() []step {
	pl := ev.plan()
	out := []step{
		s(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1"}, Mode: events.EvacAll}),
		s(events.NodeUpdated{Name: "n1", Group: "g1", Total: events.Resources{MemoryMiB: 4 * mem, DiskMiB: 4 * disk}, Drained: true}),
		s(pl),
		s(events.JobReleased{Request: "r1", Job: pl.Jobs[0]}),
	}
	out = append(out, run("r1", 0, pl.Jobs[0].Opcodes[0], !ev.j0Fails)...)
	fin := events.RequestFinished{Request: "r1", Moved: pl.Moved, Failed: []events.Failed{}}
	j0 := events.JobSuccess
	if ev.j0Fails {
		j0 = events.JobError
		fin.Moved = pl.Moved[1:]
		fin.Failed = []events.Failed{{Instance: "i1", Reason: "job failed"}}
	}
	out = append(out, s(events.JobEnded{Request: "r1", Job: 0, Status: j0}))
	out = append(out, s(events.JobReleased{Request: "r1", Job: pl.Jobs[1]}))
	out = append(out, run("r1", 1, pl.Jobs[1].Opcodes[0], true)...)
	out = append(out, s(events.JobEnded{Request: "r1", Job: 1, Status: events.JobSuccess}))
	out = append(out, s(fin))
	return out
}

// cancelledFirst is the evacuation with job 0 cancelled before it ran: in
// Ganeti's terms it ended "canceled", which job 1 may or may not accept.
func cancelledFirst(statuses ...events.JobStatus) []step {
	ev := evac{statuses: statuses}
	pl := ev.plan()
	out := append(cluster(4*mem),
		s(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1"}, Mode: events.EvacAll}),
		s(pl),
		s(events.JobCancelled{Request: "r1", Job: 0, Reason: "operator said so"}),
		s(events.JobReleased{Request: "r1", Job: pl.Jobs[1]}))
	out = append(out, run("r1", 1, pl.Jobs[1].Opcodes[0], true)...)
	return append(out, s(events.JobEnded{Request: "r1", Job: 1, Status: events.JobSuccess}),
		s(events.RequestFinished{Request: "r1", Moved: pl.Moved[1:], Failed: []events.Failed{{Instance: "i1", Reason: "job cancelled"}}}))
}

// goodEvac is the successful evacuation of n1 on the cluster.
func goodEvac() []step {
	return append(cluster(4*mem), evac{statuses: []events.JobStatus{events.JobSuccess}}.steps()...)
}

// migration is an automatic per-instance migration m1 of i3 from n2 to
// n3: begin, one sync of 100 bytes, switch; each record answers the end
// of the phase before.
func migration() []step {
	rec := events.MigrationStateChanged{Migration: "m1", Instance: "i3", Account: "ops", Role: events.RoleOperator,
		Source: "n2", Target: "n3", Automatic: true, State: events.MigrationRunning, Phase: events.PhaseBegin,
		PriorRunState: events.RunRunning}
	out := []step{
		s(events.MigrationActionRequested{Migration: "m1", Instance: "i3", Action: events.ActionAutomatic, Account: "ops", Role: events.RoleOperator}),
	}
	phase := func(seq int, name string, bytes int64, r events.MigrationStateChanged, cause string) []step {
		label := "end" + name
		r.PhaseRunning = true // the record written with the dispatch
		return []step{
			{p: events.MigrationPhaseDispatched{Migration: "m1", Instance: "i3", Node: "n2", Seq: seq, Phase: name,
				Source: "n2", Target: "n3"}, cause: cause},
			{p: r, cause: cause},
			{p: events.MigrationPhaseEnded{Migration: "m1", Instance: "i3", Node: "n2", Seq: seq, Phase: name,
				Status: events.JobSuccess, Bytes: bytes}, label: label},
		}
	}
	out = append(out, phase(0, events.PhaseBegin, 0, rec, "")...)
	rec.Phase = events.PhaseSync
	out = append(out, phase(1, events.PhaseSync, 0, rec, "endbegin")...)
	out[len(out)-1].p = events.MigrationPhaseEnded{Migration: "m1", Instance: "i3", Node: "n2", Seq: 1,
		Phase: events.PhaseSync, Status: events.JobSuccess, Bytes: 100}
	rec.Phase, rec.Syncs, rec.LastSyncBytes = events.PhaseSwitch, 1, 100
	out = append(out, phase(2, events.PhaseSwitch, 0, rec, "endsync")...)
	rec.State, rec.Switched = events.MigrationSuccessful, true
	out = append(out,
		step{p: events.InstancePlaced{Instance: "i3", Group: "g1", PrimaryNode: "n3", PreviousGroup: "g1",
			PreviousPrimary: "n2", Request: "m1"}, cause: "endswitch"},
		step{p: rec, cause: "endswitch"})
	return out
}

// lastRecord returns the index of the last step of type T.
func last[T events.Payload](steps []step) int {
	for i := len(steps) - 1; i >= 0; i-- {
		if _, ok := steps[i].p.(T); ok {
			return i
		}
	}
	panic("no such step")
}

// find returns the index of the first step matching ok.
func find(steps []step, ok func(events.Payload) bool) int {
	i := slices.IndexFunc(steps, func(st step) bool { return ok(st.p) })
	if i < 0 {
		panic("no such step")
	}
	return i
}

func without(steps []step, i int) []step {
	return append(slices.Clone(steps[:i]), steps[i+1:]...)
}

func with(steps []step, i int, extra ...step) []step {
	out := slices.Clone(steps[:i])
	out = append(out, extra...)
	return append(out, steps[i:]...)
}

func replaced(steps []step, i int, p events.Payload) []step {
	out := slices.Clone(steps)
	out[i].p = p
	return out
}

// failedOf returns the invariants broken, or fails the test listing the
// violations when the messages do not hold want.
func expect(t *testing.T, rep *Report, fail []Invariant, want string) {
	t.Helper()
	var b strings.Builder
	_ = rep.WriteText(&b)
	if !slices.Equal(rep.Failed, fail) {
		t.Fatalf("failed %v, want %v\n%s", rep.Failed, fail, b.String())
	}
	if rep.OK != (len(fail) == 0) {
		t.Fatalf("OK %t with %d violations", rep.OK, len(rep.Violations))
	}
	if want != "" && !strings.Contains(b.String(), want) {
		t.Fatalf("report does not say %q:\n%s", want, b.String())
	}
}
