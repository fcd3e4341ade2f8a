package jobs

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
)

// cluster: one group of n1..n3 (8 GiB each), a on n1 and b on n2 (6 GiB
// each, shared storage): evacuating n1 moves a to n3, the only node with
// room for it.
func cluster() *world {
	w := newWorld()
	w.read(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred})
	w.read(events.GroupDeclared{Name: "g2", AllocPolicy: events.AllocPreferred})
	for _, n := range []string{"n1", "n2", "n3"} {
		w.read(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
			Total: events.Resources{MemoryMiB: 8192, DiskMiB: 100 << 10, CPUs: 16, Spindles: 4}})
	}
	w.read(events.NodeAnnounced{Name: "m1", Group: "g2", VMCapable: true,
		Total: events.Resources{MemoryMiB: 32768, DiskMiB: 100 << 10, CPUs: 16, Spindles: 4}})
	for name, node := range map[string]string{"a": "n1", "b": "n2"} {
		w.read(events.InstanceDeclared{Name: name, Owner: "acct", Storage: events.StorageRBD, RunState: events.RunRunning,
			PrimaryNode: node, Size: events.Size{MemoryMiB: 6144, VCPUs: 1, DisksMiB: []int64{1024}}})
	}
	return w
}

// plans lists the PlanComputed events of a pass.
func plans(d Decision) []events.PlanComputed {
	var out []events.PlanComputed
	for _, e := range d.Events {
		if p, err := events.As[events.PlanComputed](e); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// A request the state cannot answer is rejected with a reason the
// operator reads, and nothing else of it is appended.
func TestRequestsRejected(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		setup   func(w *world)
		request events.Payload
		why     string
	}{
		{"an unknown node", nil, events.EvacuationRequested{Request: "r1", Nodes: []string{"n9"}, Mode: events.EvacAll},
			`unknown node "n9"`},
		{"an unknown instance", nil, events.GroupChangeRequested{Request: "r1", Instances: []string{"zz"}, TargetGroups: []string{"g2"}},
			`unknown instance "zz"`},
		{"an instance another request moves", func(w *world) {
			w.read(events.EvacuationRequested{Request: "r0", Nodes: n1, Mode: events.EvacAll})
			Decide(w.env, w.st, "r0") // a's job runs
		}, events.GroupChangeRequested{Request: "r1", Instances: []string{"a"}, TargetGroups: []string{"g2"}},
			`instance "a" is already being moved by active request r0`},
		{"an instance a migration moves", func(w *world) {
			w.env.Migrating = func(in string) string {
				if in == "a" {
					return "m7"
				}
				return ""
			}
		}, events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll}, `instance "a" is being migrated by migration m7`},
		{"a plan the log cannot hold", func(w *world) {
			w.env.Fits = func(e events.Envelope) error {
				if e.Type == events.TypePlanComputed {
					return errors.New("8 MiB at most")
				}
				return nil
			}
		}, events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll}, "its plan cannot be appended: 8 MiB at most"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := cluster()
			if c.setup != nil {
				c.setup(w)
			}
			w.read(c.request)
			d := Decide(w.env, w.st, "r1")
			if len(d.Events) != 1 || d.Outcome != "rejected" {
				t.Fatalf("decided %v (outcome %q), want one rejection", types(d), d.Outcome)
			}
			if rej, err := events.As[events.RequestRejected](d.Events[0]); err != nil || rej.Reason != c.why {
				t.Fatalf("rejected %+v (%v), want %q", rej, err, c.why)
			}
			if w.st.Active("r1") {
				t.Error("a rejected request stays active")
			}
			if _, ok := c.request.(events.EvacuationRequested); ok && w.inv.Nodes["n1"].Drained {
				t.Error("a rejected evacuation drained its node")
			}
		})
	}
}

// A plan is appended with the drain of every node it empties, first, and
// the jobs whose dependencies are met are released with it; a node
// drained already is not drained again.
func TestFirstPlanDrainsThenReleases(t *testing.T) {
	t.Parallel()
	w := cluster()
	w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll})
	d := Decide(w.env, w.st, "r1")
	want := []string{events.TypeNodeUpdated, events.TypePlanComputed, events.TypeJobReleased, events.TypeOpcodeDispatched}
	if !slices.Equal(types(d), want) {
		t.Fatalf("decided %v, want %v", types(d), want)
	}
	if nu, _ := events.As[events.NodeUpdated](d.Events[0]); nu.Name != "n1" || !nu.Drained {
		t.Fatalf("drained %+v, want n1", nu)
	}
	p := plans(d)[0]
	if len(p.Moved) != 1 || p.Moved[0].Instance != "a" || p.Moved[0].Nodes[0] != "n3" || len(p.Failed) != 0 {
		t.Fatalf("planned moved %+v, failed %+v; want a to n3", p.Moved, p.Failed)
	}
	if !w.inv.Nodes["n1"].Drained {
		t.Fatal("the drain was not applied to the state at once")
	}
	// Every event of the request says whose it is and why.
	for _, e := range d.Events {
		if e.Reason.RequestID != "r1" || e.Reason.Actor != "planner" || !strings.Contains(e.Reason.Why, "evacuation of n1 (all) requested by operator:test: test") {
			t.Errorf("%s carries reason %+v", e.Type, e.Reason)
		}
	}
	if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
		t.Fatalf("a second pass decided %v", types(d))
	}
	w.read(events.EvacuationRequested{Request: "r2", Nodes: n1, Mode: events.EvacAll})
	if d := Decide(w.env, w.st, "r2"); slices.Contains(types(d), events.TypeNodeUpdated) {
		t.Fatalf("n1 drained twice: %v", types(d))
	}
}

// A dry run is planned and waits for approval; approval releases its plan
// as it stands when the inventory did not change, and plans again (the
// refreshed plan first) when it did.
func TestDryRunWaitsForApproval(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		change   func(w *world)
		wantPlan bool
	}{
		{"nothing changed: the plan as it was", nil, false},
		{"the target filled meanwhile: a new plan", func(w *world) {
			w.read(events.InstanceDeclared{Name: "c", Owner: "acct", Storage: events.StorageRBD, RunState: events.RunRunning,
				PrimaryNode: "n3", Size: events.Size{MemoryMiB: 4096, VCPUs: 1, DisksMiB: []int64{1024}}})
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := cluster()
			w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll, DryRun: true})
			d := Decide(w.env, w.st, "r1")
			if want := []string{events.TypeNodeUpdated, events.TypePlanComputed}; !slices.Equal(types(d), want) {
				t.Fatalf("dry run decided %v, want %v (no release)", types(d), want)
			}
			if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
				t.Fatalf("an unapproved dry run decided %v", types(d))
			}
			if c.change != nil {
				c.change(w)
			}
			w.read(events.RequestApproved{Request: "r1"})
			d = Decide(w.env, w.st, "r1")
			ps := plans(d)
			if (len(ps) == 1) != c.wantPlan {
				t.Fatalf("on approval decided %v; want a new plan %t", types(d), c.wantPlan)
			}
			if c.wantPlan {
				if !strings.Contains(d.Events[0].Reason.Why, "plan refreshed on approval") || len(ps[0].Moved) != 0 || len(ps[0].Failed) != 1 {
					t.Fatalf("refreshed plan %+v (%q); want a failed: n3 is full now", ps[0], d.Events[0].Reason.Why)
				}
				return
			}
			if got := released(d); !sameInts(got, []int{0}) {
				t.Fatalf("on approval released %v, want job 0", got)
			}
		})
	}
}

// A dry run cancelled before approval cancels its jobs and finishes
// cancelled, nothing having run.
func TestDryRunCancelled(t *testing.T) {
	t.Parallel()
	w := cluster()
	w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll, DryRun: true})
	Decide(w.env, w.st, "r1")
	w.read(events.RequestCancelled{Request: "r1"})
	d := Decide(w.env, w.st, "r1")
	if got := cancelledJobs(d); len(got) != 1 || got[0] != "request cancelled" || d.Outcome != "cancelled" {
		t.Fatalf("decided %v (outcome %q), cancelled %v; want job 0 cancelled, outcome cancelled", types(d), d.Outcome, got)
	}
	if fin := finished(t, d); len(fin.Moved) != 0 || len(fin.Failed) != 1 || fin.Failed[0].Instance != "a" {
		t.Fatalf("finished %+v, want a failed", fin)
	}
}

// A plan larger than PlanPartBytes is appended in parts, in the one
// pass; the fold takes it whole once its last part is read.
func TestALargePlanGoesInParts(t *testing.T) {
	t.Parallel()
	w := cluster()
	w.env.PlanPartBytes = 200
	w.read(events.NodeAnnounced{Name: "n4", Group: "g1", VMCapable: true,
		Total: events.Resources{MemoryMiB: 8192, DiskMiB: 100 << 10, CPUs: 16, Spindles: 4}})
	w.read(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1", "n2"}, Mode: events.EvacAll})
	d := Decide(w.env, w.st, "r1")
	ps := plans(d)
	if len(ps) < 2 {
		t.Fatalf("planned in %d parts, want several", len(ps))
	}
	var moved int
	for k, p := range ps {
		if p.Part != k || p.Parts != len(ps) || p.Plan == "" || p.Plan != ps[0].Plan {
			t.Fatalf("part %d is %d of %d of plan %q", k, p.Part, p.Parts, p.Plan)
		}
		moved += len(p.Moved)
	}
	r := w.st.requests["r1"]
	if moved != 2 || r == nil || r.plan == nil || len(r.plan.Moved) != 2 {
		t.Fatalf("the parts move %d instances, outcome %q; want 2, and the whole plan in the fold", moved, d.Outcome)
	}
	if len(released(d)) == 0 {
		t.Fatal("no job released after a plan in parts")
	}
}

// Fail closes a request whose decision the log refused for good: rejected
// if nothing ran, else its unreleased jobs cancelled with the reason (it
// finishes as the running ones end); a closed request is left alone.
func TestFailClosesTheRequest(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.read(events.EvacuationRequested{Request: "r0", Nodes: n1, Mode: events.EvacAll})
	d := Fail(w.env, w.st, "r0", "record too large")
	if rej, err := events.As[events.RequestRejected](d.Events[0]); err != nil || rej.Reason != "record too large" || d.Outcome != "rejected" {
		t.Fatalf("Fail before a plan: %v (%+v)", types(d), rej)
	}
	if d := Fail(w.env, w.st, "r0", "again"); len(d.Events) != 0 {
		t.Fatalf("Fail of a closed request decided %v", types(d))
	}
	w.env.Options.MaxMovesPerNode = 1
	w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n2")), planned(1, nil, migrate("b", "n1", "n3")))
	d = Fail(w.env, w.st, "r1", "record too large")
	if got := cancelledJobs(d); len(got) != 1 || got[1] != "record too large" || d.Outcome != "" {
		t.Fatalf("Fail after a release cancelled %v (outcome %q), want job 1 alone, the request still open", got, d.Outcome)
	}
	// The reason is the planner's alone: the requester's may be what made
	// the events too large.
	if why := d.Events[0].Reason.Why; strings.Contains(why, "requested by") {
		t.Errorf("the cancellation quotes the requester: %q", why)
	}
	d = w.end("r1", 0, 0, events.JobSuccess, "")
	if fin := finished(t, d); len(fin.Failed) != 1 || fin.Failed[0].Reason != "job cancelled: record too large" || d.Outcome != "partial" {
		t.Fatalf("finished %+v (outcome %q)", fin, d.Outcome)
	}
}
