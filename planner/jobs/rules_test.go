package jobs

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// A node that is offline answers nothing, so no opcode waits on it: one
// not yet dispatched to it (or towards it) ends its job at once, the
// instance where it is; a failover away from an offline primary runs on
// its target, which is the one node that can act.
func TestOfflineNodesBeforeDispatch(t *testing.T) {
	t.Parallel()
	failover := events.Opcode{OpID: events.OpInstanceFailover, Instance: "a", From: "n1", To: "n2", IgnoreConsistency: true}
	for _, c := range []struct {
		name     string
		op       events.Opcode
		offline  string
		dispatch string // where it runs; "": not dispatched
		err      string
	}{
		{"the source offline", migrate("a", "n1", "n2"), "n1", "",
			"node n1 is offline: opcode 0 (OP_INSTANCE_MIGRATE of a) not dispatched; a stays where it is"},
		{"the target offline", migrate("a", "n1", "n2"), "n2", "",
			"node n2 is offline: opcode 0 (OP_INSTANCE_MIGRATE of a) not dispatched; a stays where it is"},
		{"a failover from an offline primary", failover, "n1", "n2", ""},
		{"another node offline", migrate("a", "n1", "n2"), "n3", "n1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			for _, n := range []string{"n1", "n2", "n3"} {
				w.read(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
					Total: events.Resources{MemoryMiB: 8192, DiskMiB: 1 << 20, CPUs: 8}})
			}
			w.offline(c.offline)
			d := w.evacuate("r1", 0, n1, planned(0, nil, c.op))
			ds := dispatches(d)
			if c.dispatch == "" {
				e := endedJobs(d)[0]
				if len(ds) != 0 || e.Status != events.JobError || e.Error != c.err {
					t.Fatalf("dispatched %+v, ended %+v; want job 0 ended error %q, nothing dispatched", ds, e, c.err)
				}
				return
			}
			if len(ds) != 1 || ds[0].Node != c.dispatch {
				t.Fatalf("dispatched %+v, want it on %s", ds, c.dispatch)
			}
		})
	}
}

// Auto concurrency (no per-node number): a node sends as many moves as its
// link has room for; a request's own max_moves_per_node still caps it,
// and plan order (the baseline) keeps a number, never auto.
func TestAutoMovesPerNode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		request   int
		index     bool
		wantCount int
	}{
		{"auto: as many as n1's fast link carries", 0, false, 4},
		{"the request's own cap over auto", 2, false, 2},
		{"plan order keeps the service's number", 0, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			w.env.AutoMovesPerNode, w.env.IndexOrder = true, c.index
			w.env.Options.MaxMovesPerNode = 1
			const mib = 1 << 20
			w.read(events.NodeAnnounced{Name: "n1", Group: "g1", VMCapable: true, SendBytesPerSecond: 1000 * mib, ReceiveBytesPerSecond: 1000 * mib})
			var js []events.Job
			for i, to := range []string{"r1", "r2", "r3", "r4"} {
				name := string(rune('a' + i))
				w.read(events.InstanceDeclared{Name: name, Owner: "acct", Storage: events.StorageZFSLocal, RunState: events.RunRunning,
					PrimaryNode: "n1", Size: events.Size{MemoryMiB: 1024, VCPUs: 1, DisksMiB: []int64{10240}}})
				js = append(js, planned(i, nil, migrate(name, "n1", to)))
			}
			if got := released(w.evacuate("r1", c.request, n1, js...)); len(got) != c.wantCount {
				t.Fatalf("released %v, want %d jobs", got, c.wantCount)
			}
		})
	}
}

// The modes of an evacuation: all takes every instance that holds the
// node, primary-only those it is primary of, secondary-only those it is
// the secondary of.
func TestEvacuationModesChooseTheInstances(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode events.EvacMode
		want []string
	}{
		{events.EvacAll, []string{"p", "s"}},
		{events.EvacPrimaryOnly, []string{"p"}},
		{events.EvacSecondaryOnly, []string{"s"}},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			w.read(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred})
			for _, n := range []string{"n1", "n2", "n3", "n4"} {
				w.read(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
					Total: events.Resources{MemoryMiB: 16384, DiskMiB: 100 << 10, CPUs: 16, Spindles: 4}})
			}
			for name, nodes := range map[string][2]string{"p": {"n1", "n2"}, "s": {"n3", "n1"}, "x": {"n2", "n3"}} {
				w.read(events.InstanceDeclared{Name: name, Owner: "acct", Storage: events.StorageDRBD, RunState: events.RunRunning,
					PrimaryNode: nodes[0], SecondaryNode: nodes[1], Size: events.Size{MemoryMiB: 1024, VCPUs: 1, DisksMiB: []int64{1024}}})
			}
			w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: c.mode, DryRun: true})
			ps := plans(Decide(w.env, w.st, "r1"))
			if len(ps) != 1 {
				t.Fatalf("%d plans", len(ps))
			}
			var got []string
			for _, m := range ps[0].Moved {
				got = append(got, m.Instance)
			}
			for _, f := range ps[0].Failed {
				got = append(got, f.Instance)
			}
			slices.Sort(got)
			if got = slices.Compact(got); !slices.Equal(got, c.want) {
				t.Fatalf("planned for %v, want %v", got, c.want)
			}
		})
	}
}

// SamePlan compares what a plan decides, not how it is written: empty
// and missing lists are alike, scores do not count, and any change of a
// move, a failure or a job is a change.
func TestSamePlan(t *testing.T) {
	t.Parallel()
	base := func() events.PlanComputed {
		return events.PlanComputed{Request: "r1",
			Moved:  []events.Moved{{Instance: "a", Group: "g1", Nodes: []string{"n2"}}},
			Failed: []events.Failed{{Instance: "b", Reason: "full"}},
			Jobs:   []events.Job{planned(0, nil, migrate("a", "n1", "n2")), planned(1, after(-1), migrate("c", "n1", "n3"))}}
	}
	a := base()
	for _, c := range []struct {
		name   string
		change func(p *events.PlanComputed)
		same   bool
	}{
		{"the same", func(*events.PlanComputed) {}, true},
		{"another score", func(p *events.PlanComputed) { p.ScoreBefore, p.ScoreAfter = 3.5, 1.25 }, true},
		{"empty statuses for none", func(p *events.PlanComputed) { p.Jobs[1].Depends[0].Statuses = []events.JobStatus{} }, true},
		{"another target", func(p *events.PlanComputed) { p.Moved[0].Nodes = []string{"n3"} }, false},
		{"another reason", func(p *events.PlanComputed) { p.Failed[0].Reason = "offline" }, false},
		{"another dependency", func(p *events.PlanComputed) { p.Jobs[1].Depends = nil }, false},
		{"another opcode", func(p *events.PlanComputed) { p.Jobs[0].Opcodes[0].To = "n3" }, false},
		{"a job more", func(p *events.PlanComputed) { p.Jobs = append(p.Jobs, planned(2, nil, migrate("d", "n1", "n2"))) }, false},
	} {
		b := base()
		c.change(&b)
		if got := SamePlan(&a, &b); got != c.same {
			t.Errorf("%s: SamePlan = %t, want %t", c.name, got, c.same)
		}
	}
}

// Requests are decided oldest first, by the log position of their own
// event, whatever order the fold read them in; one whose own event was
// not read yet comes last.
func TestOrderIsByLogPosition(t *testing.T) {
	t.Parallel()
	st := NewState()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	read := func(p events.Payload, offset int64) {
		st.Apply(events.New(p), p, inventory.Pos{Time: t0, Offset: offset})
	}
	read(events.EvacuationRequested{Request: "r3", Nodes: n1, Mode: events.EvacAll}, 30)
	read(events.JobReleased{Request: "r0", Job: planned(0, nil, migrate("a", "n1", "n2"))}, 5)
	read(events.GroupChangeRequested{Request: "r1", Instances: []string{"a"}, TargetGroups: []string{"g2"}}, 10)
	read(events.EvacuationRequested{Request: "r2", Nodes: []string{"n2"}, Mode: events.EvacAll}, 20)
	if got := st.Order(); !slices.Equal(got, []string{"r1", "r2", "r3", "r0"}) {
		t.Fatalf("Order() = %v, want r1, r2, r3, then the stub r0", got)
	}
	if got := strings.Join(st.Order(), ","); got != "r1,r2,r3,r0" {
		t.Fatalf("a second Order() = %s", got)
	}
}

// A group change is planned, run and finished like an evacuation, without
// draining any node; the planner is told how long each plan took.
func TestGroupChangeRunsToTheEnd(t *testing.T) {
	t.Parallel()
	w := cluster()
	var took []time.Duration
	w.env.PlanTook = func(d time.Duration) { took = append(took, d) }
	// g2's instance policy (Ganeti's default) wants a NIC and a spindle.
	w.read(events.InstanceDeclared{Name: "a", Owner: "acct", Storage: events.StorageRBD, RunState: events.RunRunning,
		PrimaryNode: "n1", Size: events.Size{MemoryMiB: 6144, VCPUs: 1, DisksMiB: []int64{1024}, Spindles: 1},
		NICs: []events.NIC{{MAC: "aa:00:00:00:00:01", Network: "lan"}}})
	w.read(events.GroupChangeRequested{Request: "r1", Instances: []string{"a"}, TargetGroups: []string{"g2"}})
	d := Decide(w.env, w.st, "r1")
	if slices.Contains(types(d), events.TypeNodeUpdated) {
		t.Fatalf("a group change drained a node: %v", types(d))
	}
	p := plans(d)
	if len(p) != 1 || len(took) != 1 {
		t.Fatalf("%d plans, told of %d", len(p), len(took))
	}
	if len(p[0].Moved) != 1 || p[0].Moved[0].Group != "g2" || len(released(d)) != 1 {
		t.Fatalf("planned %+v, failed %+v, released %v; want a moved to g2 and its job released", p[0].Moved, p[0].Failed, released(d))
	}
	var fin Decision
	for k := range p[0].Jobs[0].Opcodes {
		fin = w.end("r1", 0, k, events.JobSuccess, "")
	}
	if f := finished(t, fin); fin.Outcome != "completed" || len(f.Moved) != 1 || f.Moved[0].Group != "g2" {
		t.Fatalf("finished %+v (outcome %q), want a moved to g2, completed", f, fin.Outcome)
	}
}

// An approval re-plans once, before anything ran: an approval read after
// the jobs were released (a second one, or one read back late) changes
// nothing.
func TestApprovalReplansOnlyOnce(t *testing.T) {
	t.Parallel()
	w := cluster()
	w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll, DryRun: true})
	Decide(w.env, w.st, "r1")
	w.read(events.RequestApproved{Request: "r1"})
	if got := released(Decide(w.env, w.st, "r1")); !sameInts(got, []int{0}) {
		t.Fatalf("approval released %v, want job 0", got)
	}
	w.read(events.InstanceDeclared{Name: "c", Owner: "acct", Storage: events.StorageRBD, RunState: events.RunRunning,
		PrimaryNode: "n3", Size: events.Size{MemoryMiB: 4096, VCPUs: 1, DisksMiB: []int64{1024}}})
	w.read(events.RequestApproved{Request: "r1"})
	if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
		t.Fatalf("a second approval decided %v", types(d))
	}
}

// Events about a request that finished (a late cancel, the service's own
// events read back) make a stub that decides nothing.
func TestEventsAfterTheEndDecideNothing(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n2")))
	if d := w.end("r1", 0, 0, events.JobSuccess, ""); d.Outcome != "completed" {
		t.Fatalf("outcome %q", d.Outcome)
	}
	w.read(events.RequestCancelled{Request: "r1"})
	if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 || w.st.Active("r1") {
		t.Fatalf("a cancel after the end decided %v", types(d))
	}
	if d := Fail(w.env, w.st, "r1", "late"); len(d.Events) != 0 {
		t.Fatalf("Fail after the end decided %v", types(d))
	}
}

// A job's senders are the nodes its opcodes run from, each once, in
// order: what the per-node limit counts.
func TestSenders(t *testing.T) {
	t.Parallel()
	j := planned(0, nil, migrate("a", "n1", "n2"), migrate("a", "n2", "n1"), migrate("a", "n1", "n3"),
		events.Opcode{OpID: events.OpInstanceMigrate, Instance: "a"})
	if got := Senders(&j); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("Senders = %v, want n1, n2", got)
	}
}

// A plan leaves free the room per-instance migrations still need
// (Env.Migrations): b migrating to n3 holds n3, so a has nowhere to go.
func TestPlanLeavesRoomForMigrations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		inFlight map[string][]string
		moved    bool
	}{
		{"no migration", nil, true},
		{"b migrating to n3", map[string][]string{"b": {"n3"}}, false},
		{"a migration of an instance the inventory lost", map[string][]string{"gone": {"n3"}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := cluster()
			w.env.Migrations = func() map[string][]string { return c.inFlight }
			w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll, DryRun: true})
			p := plans(Decide(w.env, w.st, "r1"))
			if len(p) != 1 || (len(p[0].Moved) == 1) != c.moved {
				t.Fatalf("planned %+v; want a moved %t", p, c.moved)
			}
		})
	}
}

// The release reads the rate an executor measured for a running opcode
// of a known request; progress of anything else (a migration's, an
// unknown request's) or without a rate is left to the other folds.
func TestProgressRates(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.read(events.InstanceDeclared{Name: "a", Owner: "acct", Storage: events.StorageZFSLocal, RunState: events.RunRunning,
		PrimaryNode: "n1", Size: events.Size{MemoryMiB: 1024, VCPUs: 1, DisksMiB: []int64{10240}}})
	w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n2")))
	progress := func(request string, rate int64) {
		w.read(events.Progress{Request: request, Job: 0, Index: 0, Instance: "a", Node: "n1", Phase: events.PhaseSync,
			State: events.ProgressRunning, Current: 1, Total: 10, BytesPerSecond: rate})
	}
	rate := func() float64 {
		ms := w.st.runningMoves(func(n string) *events.InstanceDeclared { return w.inv.Instances[n] })
		if len(ms) != 1 || ms[0].Flow.Bytes != 10240<<20 {
			t.Fatalf("running moves %+v, want a's 10 GiB", ms)
		}
		return ms[0].Rate
	}
	progress("m9", 5<<20)
	progress("r1", 0)
	if got := rate(); got != 0 || slices.Contains(w.st.Order(), "m9") {
		t.Fatalf("rate %v, order %v: progress without a rate or of another fold counted", got, w.st.Order())
	}
	progress("r1", 40<<20)
	if got := rate(); got != 40<<20 {
		t.Fatalf("rate %v, want the 40 MiB/s measured", got)
	}
}
