package jobs

import (
	"slices"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
)

// A job's opcodes run one after another, each on its node, and the job
// ends with its last; an opcode that does not succeed ends the job with
// the executor's word, and the opcodes after it never run.
func TestOpcodesRunInOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		ends   []events.JobStatus // how each opcode ends, in turn
		msg    string             // the executor's error, if any
		status events.JobStatus
		err    string
	}{
		{"all succeed", []events.JobStatus{events.JobSuccess, events.JobSuccess, events.JobSuccess}, "", events.JobSuccess, ""},
		{"the second fails", []events.JobStatus{events.JobSuccess, events.JobError}, "drbd sync broke", events.JobError, "drbd sync broke"},
		{"the first is canceled without a word", []events.JobStatus{events.JobCanceled}, "", events.JobCanceled,
			"opcode 0 (OP_INSTANCE_MIGRATE) ended canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			ops := []events.Opcode{migrate("a", "n1", "n2"), migrate("a", "n2", "n3"), migrate("a", "n3", "n4")}
			d := w.evacuate("r1", 0, n1, planned(0, nil, ops...))
			for k, st := range c.ends {
				ds := dispatches(d)
				if len(ds) != 1 || ds[0].Index != k || ds[0].Node != ops[k].From || ds[0].Opcode.To != ops[k].To {
					t.Fatalf("step %d dispatched %+v, want opcode %d to %s", k, ds, k, ops[k].From)
				}
				msg := ""
				if st != events.JobSuccess {
					msg = c.msg
				}
				d = w.end("r1", 0, k, st, msg)
			}
			e, ok := endedJobs(d)[0]
			if !ok || e.Status != c.status || e.Error != c.err || len(dispatches(d)) != 0 {
				t.Fatalf("the last step ended %+v (ended %t), dispatched %v; want %s %q and nothing more",
					e, ok, dispatches(d), c.status, c.err)
			}
			// The end is caused by the opcode's end: the log explains it.
			for _, ev := range d.Events {
				if ev.Type == events.TypeJobEnded && ev.CausationID == "" {
					t.Error("the job's end names no cause")
				}
			}
		})
	}
}

// Where an opcode runs: its From node; a failover away from an offline
// primary (IgnoreConsistency) on its target, which starts the instance
// from its replica; an opcode that names no node on the instance's
// primary.
func TestWhereAnOpcodeRuns(t *testing.T) {
	t.Parallel()
	failover := events.Opcode{OpID: events.OpInstanceFailover, Instance: "a", From: "n1", To: "n2", IgnoreConsistency: true}
	for _, c := range []struct {
		name string
		op   events.Opcode
		want string
	}{
		{"its source", migrate("a", "n1", "n2"), "n1"},
		{"a failover ignoring consistency: the target", failover, "n2"},
		{"no node named: the primary", events.Opcode{OpID: events.OpInstanceMigrate, Instance: "a"}, "n5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			w.read(events.InstanceDeclared{Name: "a", Owner: "acct", Storage: events.StorageDRBD, RunState: events.RunRunning,
				PrimaryNode: "n5", SecondaryNode: "n2", Size: events.Size{MemoryMiB: 512, VCPUs: 1, DisksMiB: []int64{1024}}})
			ds := dispatches(w.evacuate("r1", 0, n1, planned(0, nil, c.op)))
			if len(ds) != 1 || ds[0].Node != c.want {
				t.Fatalf("dispatched %+v, want it on %s", ds, c.want)
			}
		})
	}
}

// A request finishes once every job has a fate, and says what moved
// (where the plan put it) and what did not, with why: the plan's own
// failures first, then each job that did not succeed.
func TestRequestFinishes(t *testing.T) {
	t.Parallel()
	moved := []events.Moved{{Instance: "a", Group: "g1", Nodes: []string{"n2"}}, {Instance: "b", Group: "g1", Nodes: []string{"n3"}}}
	unplaced := []events.Failed{{Instance: "z", Reason: "no node has room"}}
	for _, c := range []struct {
		name    string
		ends    [2]events.JobStatus
		failed  []events.Failed
		outcome string
		moved   []string
		reasons []string
	}{
		{"every job succeeded", [2]events.JobStatus{events.JobSuccess, events.JobSuccess}, nil, "completed", []string{"a", "b"}, nil},
		{"one failed", [2]events.JobStatus{events.JobSuccess, events.JobError}, nil, "partial", []string{"a"},
			[]string{"job failed: it broke"}},
		{"one canceled by its executor", [2]events.JobStatus{events.JobCanceled, events.JobSuccess}, nil, "partial", []string{"b"},
			[]string{"job canceled: it broke"}},
		{"all moved, the plan could not place one", [2]events.JobStatus{events.JobSuccess, events.JobSuccess}, unplaced, "partial",
			[]string{"a", "b"}, []string{"no node has room"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			w.env.Options.MaxMovesPerNode = 5
			w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll})
			w.read(events.PlanComputed{Request: "r1", Moved: moved, Failed: c.failed, Jobs: []events.Job{
				planned(0, nil, migrate("a", "n1", "n2")), planned(1, nil, migrate("b", "n1", "n3"))}})
			Decide(w.env, w.st, "r1")
			var d Decision
			for i, st := range c.ends {
				msg := ""
				if st != events.JobSuccess {
					msg = "it broke"
				}
				d = w.end("r1", i, 0, st, msg)
				if i == 0 && slices.Contains(types(d), events.TypeRequestFinished) {
					t.Fatal("finished with a job still running")
				}
			}
			fin := finished(t, d)
			var gotMoved, gotReasons []string
			for _, m := range fin.Moved {
				gotMoved = append(gotMoved, m.Instance)
			}
			for _, f := range fin.Failed {
				gotReasons = append(gotReasons, f.Reason)
			}
			if d.Outcome != c.outcome || !slices.Equal(gotMoved, c.moved) || !slices.Equal(gotReasons, c.reasons) {
				t.Fatalf("outcome %q, moved %v, failed %v; want %q, %v, %v", d.Outcome, gotMoved, gotReasons, c.outcome, c.moved, c.reasons)
			}
			if w.st.Active("r1") {
				t.Error("a finished request stays active")
			}
			if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
				t.Fatalf("finished twice: %v", types(d))
			}
		})
	}
}

// The planner's reason names the origin with a few instances and a count,
// not every instance: a request of thousands writes it into each event.
func TestReasonsNameAFewInstances(t *testing.T) {
	t.Parallel()
	var names []string
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		names = append(names, n)
	}
	if got := list(names); got != "a, b, c, d, e and 2 more" {
		t.Fatalf("list = %q", got)
	}
	if got := list(names[:2]); got != "a, b" {
		t.Fatalf("list of two = %q", got)
	}
	w := newWorld()
	w.read(events.GroupChangeRequested{Request: "r1", Instances: names, TargetGroups: []string{"g2"}, DryRun: true})
	d := Decide(w.env, w.st, "r1")
	if len(d.Events) == 0 || !strings.Contains(d.Events[0].Reason.Why, "group change of a, b, c, d, e and 2 more (dry run) requested by operator:test") {
		t.Fatalf("reason %q", d.Events[0].Reason.Why)
	}
}
