package progress_test

import (
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/progress"
	"github.com/drovehq/drove/gateway/wire"
)

func line(t *testing.T, p events.Payload) wire.WatchLine {
	t.Helper()
	env := events.New(p)
	return wire.WatchLine{Time: time.Unix(1e9, 0), Type: env.Type, Payload: env.Payload}
}

// TestFold: a request's events in, its job rows out, and the rows each
// event changed.
func TestFold(t *testing.T) {
	mig := func(inst, to string) events.Opcode {
		return events.Opcode{OpID: events.OpInstanceMigrate, Instance: inst, TargetNode: to}
	}
	fail := events.Opcode{OpID: events.OpInstanceFailover, Instance: "a"}
	repl := events.Opcode{OpID: events.OpInstanceReplaceDisks, Instance: "a", RemoteNode: "n3"}
	plan := events.PlanComputed{Request: "r", Jobs: []events.Job{{Index: 0, Opcodes: []events.Opcode{fail, repl}}, {Index: 1, Opcodes: []events.Opcode{mig("b", "n2")}}}}
	for _, tc := range []struct {
		name    string
		events  []events.Payload
		rows    []wire.JobRow // every row after the events
		changed []int         // indices the last event changed
	}{{
		name:   "planned jobs wait",
		events: []events.Payload{plan},
		rows: []wire.JobRow{{Index: 0, Instance: "a", State: "waiting", Ops: 2},
			{Index: 1, Instance: "b", State: "waiting", Ops: 1}},
		changed: []int{0, 1},
	}, {
		name:    "a job released without its plan seen counts its opcodes",
		events:  []events.Payload{events.JobReleased{Request: "r", Job: events.Job{Index: 3, Opcodes: []events.Opcode{fail, repl}}}},
		rows:    []wire.JobRow{{Index: 3, Instance: "a", State: "queued", Ops: 2}},
		changed: []int{3},
	}, {
		name: "the percentage follows the bytes, not the opcodes done",
		events: []events.Payload{plan, events.JobReleased{Request: "r", Job: events.Job{Index: 0, Opcodes: []events.Opcode{fail, repl}}},
			events.OpcodeDispatched{Request: "r", Job: 0, Index: 0, Opcode: fail},
			events.OpcodeDispatched{Request: "r", Job: 0, Index: 1, Opcode: repl},
			events.Progress{Request: "r", Job: 0, Index: 1, Phase: "sync", State: events.ProgressRunning, Current: 25 << 20, Total: 100 << 20, BytesPerSecond: 5 << 20}},
		rows: []wire.JobRow{{Index: 0, Instance: "a", State: "running", Ops: 2, Op: 2, OpName: "replace-disks → n3", Phase: "sync",
			Current: 25 << 20, Total: 100 << 20, BytesPerSecond: 5 << 20, BytesDone: 25 << 20, BytesTotal: 100 << 20, Percent: 25, RemainingSeconds: 15},
			{Index: 1, Instance: "b", State: "waiting", Ops: 1}},
		changed: []int{0},
	}, {
		name: "a report of another opcode than the one underway changes nothing",
		events: []events.Payload{plan, events.OpcodeDispatched{Request: "r", Job: 1, Index: 0, Opcode: mig("b", "n2")},
			events.Progress{Request: "r", Job: 1, Index: 0, Current: 10, Total: 40, ETASeconds: 7},
			events.JobEnded{Request: "r", Job: 1, Status: events.JobSuccess},
			events.Progress{Request: "r", Job: 1, Index: 5, Current: 1, Total: 2}},
		rows: []wire.JobRow{{Index: 0, Instance: "a", State: "waiting", Ops: 2},
			{Index: 1, Instance: "b", State: "success", Ops: 1, Op: 1, OpName: "migrate → n2", DoneBytes: 40, BytesDone: 40, BytesTotal: 40, Percent: 100}},
	}, {
		name: "without bytes, the opcodes done; the executor's ETA",
		events: []events.Payload{plan, events.OpcodeDispatched{Request: "r", Job: 0, Index: 1, Opcode: repl},
			events.Progress{Request: "r", Job: 0, Index: 1, Message: "waiting for the peer", ETASeconds: 3}},
		rows: []wire.JobRow{{Index: 0, Instance: "a", State: "running", Ops: 2, Op: 2, OpName: "replace-disks → n3", ETASeconds: 3,
			Message: "waiting for the peer", Percent: 50, RemainingSeconds: 3},
			{Index: 1, Instance: "b", State: "waiting", Ops: 1}},
		changed: []int{0},
	}, {
		name: "the request's end settles the jobs whose end was not seen",
		events: []events.Payload{plan, events.OpcodeDispatched{Request: "r", Job: 0, Index: 0, Opcode: fail},
			events.RequestFinished{Request: "r", Moved: []events.Moved{{Instance: "a", Group: "g", Nodes: []string{"n2"}}},
				Failed: []events.Failed{{Instance: "b", Reason: "job cancelled: request cancelled"}}}},
		rows: []wire.JobRow{{Index: 0, Instance: "a", State: "success", Ops: 2, Op: 1, OpName: "failover", Percent: 100},
			{Index: 1, Instance: "b", State: "canceled", Ops: 1, Message: "job cancelled: request cancelled"}},
		changed: []int{0, 1},
	}, {
		name: "a failed job keeps its error",
		events: []events.Payload{plan, events.OpcodeDispatched{Request: "r", Job: 1, Index: 0, Opcode: mig("b", "n2")},
			events.JobEnded{Request: "r", Job: 1, Status: events.JobError, Error: "disk full"},
			events.JobCancelled{Request: "r", Job: 0, Reason: "request cancelled"}},
		rows: []wire.JobRow{{Index: 0, Instance: "a", State: "canceled", Ops: 2, Message: "request cancelled"},
			{Index: 1, Instance: "b", State: "error", Ops: 1, Op: 1, OpName: "migrate → n2", Message: "disk full"}},
		changed: []int{0},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var p progress.Progress
			for _, e := range tc.events {
				p.Apply(line(t, e))
			}
			if len(p.Jobs) != len(tc.rows) {
				t.Fatalf("%d rows, want %d: %+v", len(p.Jobs), len(tc.rows), p.Jobs)
			}
			for i, want := range tc.rows {
				if *p.Jobs[i] != want {
					t.Errorf("row %d:\n got %+v\nwant %+v", i, *p.Jobs[i], want)
				}
			}
			var changed []int
			for _, r := range p.Changed() {
				changed = append(changed, r.Index)
			}
			if len(changed) != len(tc.changed) {
				t.Fatalf("changed rows %v, want %v", changed, tc.changed)
			}
			for i := range changed {
				if changed[i] != tc.changed[i] {
					t.Fatalf("changed rows %v, want %v", changed, tc.changed)
				}
			}
		})
	}
}
