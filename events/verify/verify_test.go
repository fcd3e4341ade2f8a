package verify

import (
	"encoding/json"
	"testing"

	"github.com/drovehq/drove/events"
)

func isType[T events.Payload](p events.Payload) bool { _, ok := p.(T); return ok }

func endedOp(job int) func(events.Payload) bool {
	return func(p events.Payload) bool { e, ok := p.(events.OpcodeEnded); return ok && e.Job == job }
}

func jobEnded(job int) func(events.Payload) bool {
	return func(p events.Payload) bool { e, ok := p.(events.JobEnded); return ok && e.Job == job }
}

func released(job int) func(events.Payload) bool {
	return func(p events.Payload) bool { e, ok := p.(events.JobReleased); return ok && e.Job.Index == job }
}

// Each invariant is tested with a log that breaks it next to one that
// holds (the good logs, and the tolerated variants in TestHolds).
func TestViolations(t *testing.T) {
	for _, c := range append(requestViolations(), migrationViolations()...) {
		t.Run(c.name, func(t *testing.T) {
			expect(t, Check(build(t, c.steps), c.opts), c.fail, c.want)
		})
	}
}

// violation is a log that breaks the invariants in fail, with the message
// Check must give.
type violation struct {
	name  string
	steps []step
	opts  Options
	fail  []Invariant
	want  string
}

// requestViolations break the good evacuation: its placements, opcodes,
// jobs, capacity and result.
func requestViolations() []violation {
	good := goodEvac()
	op0 := migrate("i1", "n1", "n2")
	pl := evac{statuses: []events.JobStatus{events.JobSuccess}}.plan()
	return []violation{
		{"instance placed from where it no longer is", append(good,
			s(events.InstancePlaced{Instance: "i1", Group: "g1", PrimaryNode: "n3", PreviousGroup: "g1", PreviousPrimary: "n1", Request: "forged"})),
			Options{}, []Invariant{Placement}, "instance i1 placed on n3 from n1, but it was on n2"},
		{"both sides report the instance up after the move", replaced(good, find(good, endedOp(0))+1,
			events.MoveStatusReported{Request: "r1", Instance: "i1", Node: "n1", Status: events.StatusUp}),
			Options{}, []Invariant{Placement}, "instance i1 reported running on [n1 n2] at once"},
		{"opcode started again after its end", with(good, find(good, endedOp(0))+1,
			s(events.OpcodeStarted{Request: "r1", Job: 0, Node: "n1"})),
			Options{}, []Invariant{Once}, "started again after it ended success: it ran twice"},
		{"opcode ended twice", with(good, find(good, endedOp(0))+1,
			s(events.OpcodeEnded{Request: "r1", Job: 0, Node: "n1", Status: events.JobError})),
			Options{}, []Invariant{Once}, "ended twice (success, then error)"},
		{"opcode ended on another node", replaced(good, find(good, endedOp(0)),
			events.OpcodeEnded{Request: "r1", Job: 0, Node: "n2", Status: events.JobSuccess}),
			Options{}, []Invariant{Once}, "dispatched to n1 but ended on n2"},
		{"opcode dispatched twice to two nodes", with(good, find(good, isType[events.OpcodeDispatched])+1,
			s(events.OpcodeDispatched{Request: "r1", Job: 0, Node: "n3", Opcode: op0})),
			Options{}, []Invariant{Once}, "dispatched twice: to n1, then to n3"},
		{"job released before its dependency ended", func() []step {
			i, j := find(good, jobEnded(0)), find(good, released(1))
			out := replaced(good, i, good[j].p)
			return replaced(out, j, good[i].p)
		}(), Options{}, []Invariant{Dependencies}, "job 1 of r1 released before job 0, which it depends on, ended"},
		{"job released although its dependency failed", append(cluster(4*mem), evac{
			statuses: []events.JobStatus{events.JobSuccess}, j0Fails: true}.steps()...),
			Options{}, []Invariant{Dependencies}, "job 0 ended error and it accepts only [success]"},
		{"job released although its dependency was cancelled", cancelledFirst(events.JobSuccess),
			Options{}, []Invariant{Dependencies}, "job 0 ended canceled and it accepts only [success]"},
		{"result says an instance did not move, but the request moved it", append(cancelledFirst(events.JobCanceled),
			s(events.InstancePlaced{Instance: "i1", Group: "g1", PrimaryNode: "n3", PreviousGroup: "g1", PreviousPrimary: "n1", Request: "r1"})),
			Options{}, []Invariant{Requests}, "request r1 says i1 did not move and none of its jobs ran, but the request placed it on n3"},
		{"released job is not the plan's", replaced(good, find(good, released(1)),
			events.JobReleased{Request: "r1", Job: events.Job{Index: 1, Opcodes: pl.Jobs[1].Opcodes}}),
			Options{}, []Invariant{Dependencies}, "job 1 of r1 was released as no plan of the request has it"},
		{"dispatched opcode is not the job's", replaced(good, find(good, isType[events.OpcodeDispatched]),
			events.OpcodeDispatched{Request: "r1", Job: 0, Node: "n1", Opcode: migrate("i1", "n1", "n3")}),
			Options{}, []Invariant{Dependencies}, "is not the released job's opcode 0"},
		{"plan and placement over a node's memory", append(cluster(mem+mem/2), evac{
			statuses: []events.JobStatus{events.JobSuccess}}.steps()...),
			Options{}, []Invariant{Capacity}, "plan of r1 leaves node n2 with 2048 MiB of running instances' memory; it has 1536 MiB"},
		{"placement over a node's disk", append(good,
			s(events.InstanceDeclared{Name: "big", Owner: "acct", Storage: events.StoragePlain, RunState: events.RunStopped,
				PrimaryNode: "n1", Size: events.Size{DisksMiB: []int64{4 * disk}}}),
			s(events.InstancePlaced{Instance: "big", Group: "g1", PrimaryNode: "n2", PreviousGroup: "g1", PreviousPrimary: "n1"})),
			Options{}, []Invariant{Capacity}, "node n2 carries 61440 MiB of local disks after big was placed on it; it has 40960 MiB"},
		{"request never ended", without(good, last[events.RequestFinished](good)),
			Options{}, []Invariant{Requests}, "request r1 never ended"},
		{"result says an instance is where the request did not put it", replaced(good, last[events.RequestFinished](good),
			events.RequestFinished{Request: "r1", Moved: []events.Moved{{Instance: "i1", Group: "g1", Nodes: []string{"n3"}}, pl.Moved[1]}}),
			Options{}, []Invariant{Requests}, "request r1 says i1 moved to [n3] in g1, but it placed it on [n2] in g1"},
		{"result leaves out an instance of the plan", replaced(good, last[events.RequestFinished](good),
			events.RequestFinished{Request: "r1", Moved: pl.Moved[:1]}),
			Options{}, []Invariant{Requests}, "request r1's plan has instance i2, its result does not"},
	}
}

// migrationViolations break a live migration's record and phases.
func migrationViolations() []violation {
	return []violation{
		{"migration record counts a sync that never ran", func() []step {
			m := append(cluster(4*mem), migration()...)
			i := last[events.MigrationStateChanged](m)
			r := m[i].p.(events.MigrationStateChanged)
			r.Syncs = 2
			return replaced(m, i, r)
		}(), Options{}, []Invariant{Migrations}, "record counts 2 syncs; 1 sync phases succeeded"},
		{"migration record says a phase runs after the last ended", func() []step {
			m := append(cluster(4*mem), migration()...)
			i := last[events.MigrationStateChanged](m)
			r := m[i].p.(events.MigrationStateChanged)
			r.PhaseRunning = true
			return replaced(m, i, r)
		}(), Options{}, []Invariant{Migrations}, "record says a phase is running; its last phase ended"},
		{"migration successful without its switch", func() []step {
			m := append(cluster(4*mem), migration()...)
			m = without(m, find(m, func(p events.Payload) bool {
				e, ok := p.(events.InstancePlaced)
				return ok && e.Request == "m1"
			}))
			i := find(m, func(p events.Payload) bool {
				e, ok := p.(events.MigrationPhaseEnded)
				return ok && e.Phase == events.PhaseSwitch
			})
			e := m[i].p.(events.MigrationPhaseEnded)
			e.Status = events.JobError
			return replaced(m, i, e)
		}(), Options{}, []Invariant{Migrations}, "record says switched=true; its phases say false"},
		{"migration's last phase never answered", func() []step {
			m := append(cluster(4*mem), migration()...)
			return m[:last[events.InstancePlaced](m)]
		}(), Options{}, []Invariant{Migrations}, "last phase 2 (switch) ended success, and no record answers it"},
		{"migration placed the instance elsewhere", func() []step {
			m := append(cluster(4*mem), migration()...)
			return replaced(m, last[events.InstancePlaced](m), events.InstancePlaced{Instance: "i3", Group: "g1",
				PrimaryNode: "n1", PreviousGroup: "g1", PreviousPrimary: "n2", Request: "m1"})
		}(), Options{}, []Invariant{Migrations}, "migration m1's phases put i3 on n3, but its last placement is on n1"},
		{"phase ended twice", func() []step {
			m := append(cluster(4*mem), migration()...)
			i := find(m, isType[events.MigrationPhaseEnded])
			e := m[i].p.(events.MigrationPhaseEnded)
			e.Status = events.JobError
			return with(m, i+1, s(e))
		}(), Options{}, []Invariant{Once}, "phase 0 (begin) of migration m1 ended twice (success, then error)"},
	}
}

// TestHolds checks logs that look odd but break nothing: the retries,
// re-deliveries and open work a real log holds.
func TestHolds(t *testing.T) {
	good := goodEvac()
	cases := []struct {
		name  string
		steps []step
		opts  Options
		check func(*testing.T, *Report)
	}{
		{"an evacuation", good, Options{}, func(t *testing.T, r *Report) {
			c := r.Counts
			if c.Placements != 2 || c.Opcodes != 2 || c.Releases != 2 || c.Dependencies != 1 || c.Finished != 1 || c.Moves != 2 || c.Plans != 1 {
				t.Fatalf("counts %+v", c)
			}
		}},
		{"a phase's end appended after its migration failed", func() []step {
			m := append(cluster(4*mem), migration()[:6]...) // begin ended, sync dispatched
			return append(m,
				s(events.MigrationStateChanged{Migration: "m1", Instance: "i3", Account: "ops", Role: events.RoleOperator,
					Source: "n2", Target: "n3", Automatic: true, State: events.MigrationFailed, Phase: events.PhaseSync,
					PriorRunState: events.RunRunning, Message: "failed: source node n2 lost"}),
				s(events.MigrationPhaseEnded{Migration: "m1", Instance: "i3", Node: "n2", Seq: 1, Phase: events.PhaseSync,
					Status: events.JobCanceled, Error: "fenced"}))
		}(), Options{}, func(t *testing.T, r *Report) {}},
		{"a per-instance migration", append(cluster(4*mem), migration()...), Options{}, func(t *testing.T, r *Report) {
			if r.Counts.Migrations != 1 || r.Counts.Phases != 3 || r.Counts.Placements != 1 {
				t.Fatalf("counts %+v", r.Counts)
			}
		}},
		{"an executor restarted mid-run starts the opcode again", with(good, find(good, endedOp(0)),
			s(events.OpcodeStarted{Request: "r1", Job: 0, Node: "n1"}),
			s(events.MoveStatusReported{Request: "r1", Instance: "i1", Node: "n1", Status: events.StatusMigrationSource}),
			s(events.MoveStatusReported{Request: "r1", Instance: "i1", Node: "n2", Status: events.StatusMigrationDestination})),
			Options{}, func(t *testing.T, r *Report) {
				if r.Counts.Restarts != 1 || r.Counts.Moves != 3 {
					t.Fatalf("counts %+v", r.Counts)
				}
			}},
		{"a dispatch delivered twice to the same node", with(good, find(good, isType[events.OpcodeDispatched])+1,
			s(events.OpcodeDispatched{Request: "r1", Job: 0, Node: "n1", Opcode: migrate("i1", "n1", "n2")})), Options{}, nil},
		{"a dependency accepting any end runs after a failure", append(cluster(4*mem), evac{j0Fails: true}.steps()...),
			Options{}, func(t *testing.T, r *Report) {
				if r.Counts.Placements != 1 {
					t.Fatalf("counts %+v", r.Counts)
				}
			}},
		{"a dependency accepting canceled runs after a cancellation", cancelledFirst(events.JobCanceled), Options{}, nil},
		{"an open request, allowed", without(good, last[events.RequestFinished](good)), Options{AllowOpen: true},
			func(t *testing.T, r *Report) {
				if r.Counts.Open != 1 {
					t.Fatalf("counts %+v", r.Counts)
				}
			}},
		{"a dry run waiting for approval", append(cluster(4*mem),
			s(events.GroupChangeRequested{Request: "r2", Instances: []string{"i3"}, DryRun: true}),
			s(events.PlanComputed{Request: "r2", Moved: []events.Moved{}, Failed: []events.Failed{{Instance: "i3", Reason: "no other group"}}})),
			Options{}, func(t *testing.T, r *Report) {
				if r.Counts.AwaitingApp != 1 {
					t.Fatalf("counts %+v", r.Counts)
				}
			}},
		{"a migration still in its phase, allowed", func() []step {
			m := append(cluster(4*mem), migration()...)
			return m[:last[events.MigrationPhaseEnded](m)]
		}(), Options{AllowOpen: true}, nil},
		{"a rejected request", append(cluster(4*mem),
			s(events.EvacuationRequested{Request: "r3", Nodes: []string{"n9"}, Mode: events.EvacAll}),
			s(events.RequestRejected{Request: "r3", Reason: "unknown node"})), Options{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := Check(build(t, c.steps), c.opts)
			expect(t, rep, []Invariant{}, "OK: every invariant holds")
			if c.check != nil {
				c.check(t, rep)
			}
		})
	}
}

// A second delivery of one event is one event; another event reusing its
// id is a violation.
func TestDuplicates(t *testing.T) {
	recs := build(t, goodEvac())
	again := recs[len(recs)/2]
	again.Offset = 1000
	rep := Check(append(recs, again), Options{})
	expect(t, rep, []Invariant{}, "")
	if rep.Counts.Duplicates != 1 {
		t.Fatalf("duplicates %d", rep.Counts.Duplicates)
	}
	forged := recs[len(recs)-1]
	forged.Event.Payload = json.RawMessage(`{"request":"r1","moved":[],"failed":[]}`)
	forged.Offset = 1001
	expect(t, Check(append(recs, forged), Options{}), []Invariant{Decoding}, "two different events share the id")
}

func TestUndecodablePayload(t *testing.T) {
	recs := build(t, goodEvac())
	recs[0].Event.Payload = json.RawMessage(`{"name":"g1","alloc_policy":"sometimes"}`)
	expect(t, Check(recs, Options{}), []Invariant{Decoding}, "payload does not decode")
}

// Partitions are never reordered, even when their times disagree with
// their offsets; across partitions, time decides.
func TestMergeKeepsPartitionOrder(t *testing.T) {
	recs := build(t, goodEvac())
	// Put every topic's events in reverse record order and swap two times
	// within one partition: the result must still follow offsets.
	rev := make([]Record, len(recs))
	for i, r := range recs {
		rev[len(recs)-1-i] = r
	}
	expect(t, Check(rev, Options{}), []Invariant{}, "")
	var evs []*event
	for _, r := range recs {
		p, _ := r.Event.DecodePayload()
		evs = append(evs, &event{ref: Ref{Topic: r.Topic, Offset: r.Offset, Time: r.Event.Time}, env: r.Event, p: p})
	}
	evs[0].env.Time, evs[1].env.Time = evs[1].env.Time, evs[0].env.Time // same topic: inventory
	out := merge(evs)
	for i := 1; i < len(out); i++ {
		a, b := out[i-1].ref, out[i].ref
		if a.Topic == b.Topic && a.Offset > b.Offset {
			t.Fatalf("%s came before %s", a, b)
		}
	}
}
