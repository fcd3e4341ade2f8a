package service

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner/jobs"
)

var allInstances = []string{"web1", "web2", "db1", "db2", "cache1", "cache2"}

func evacuate(h *harness, req string, dry bool, nodes ...string) events.Envelope {
	return h.appendEvent(events.EvacuationRequested{Request: req, Nodes: nodes, Mode: events.EvacAll, DryRun: dry},
		"operator:alice", "disk swap", req)
}

func TestEvacuationMovesEveryInstance(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.executor(false, nil)
	reg := prometheus.NewRegistry()
	h.start(func(c *Config) { c.Metrics = reg })
	reqEnv := evacuate(h, "r1", false, "n1")

	fin := must[events.RequestFinished](t, h.closed("r1"))
	if got := names(fin.Moved, func(m events.Moved) string { return m.Instance }); !sameSet(got, allInstances) || len(fin.Failed) != 0 {
		t.Fatalf("finished with moved %v, failed %+v; want every instance moved", got, fin.Failed)
	}
	for _, m := range fin.Moved {
		if slices.Contains(m.Nodes, "n1") {
			t.Errorf("%s still on n1: %v", m.Instance, m.Nodes)
		}
	}

	// n1 was drained in the plan's own transaction, caused by the request.
	n1, n1env, err := h.node("n1")
	if err != nil || !n1.Drained || n1env.Type != events.TypeNodeUpdated || n1env.CausationID != reqEnv.ID {
		t.Fatalf("n1 = %+v (%s caused by %s), %v; want drained by the request", n1, n1env.Type, n1env.CausationID, err)
	}
	plans := h.ofRequest(events.TopicPlans, "r1")
	if len(plans) != 1 {
		t.Fatalf("%d plans, want 1", len(plans))
	}
	plan := must[events.PlanComputed](t, plans[0])
	if !strings.Contains(plans[0].Reason.Why, "requested by operator:alice: disk swap") || plans[0].Reason.Actor != "planner" {
		t.Errorf("plan reason %+v does not keep the requester's", plans[0].Reason)
	}
	// The queue keeps the per-node limit at release (the plan chains no
	// node's sends): n1 sends more jobs than its limit, so the check bites.
	fromN1 := 0
	for i := range plan.Jobs {
		if slices.Contains(jobs.Senders(&plan.Jobs[i]), "n1") {
			fromN1++
		}
	}
	if fromN1 <= 2 {
		t.Fatalf("the test cluster's plan sends %d jobs from n1; the limit check needs more than 2", fromN1)
	}
	jobs := h.ofRequest(events.TopicJobs, "r1")
	checkSchedule(t, plan, jobs, 2, 5)
	released := 0
	for _, e := range jobs {
		if e.Type == events.TypeJobReleased {
			released++
		}
	}
	if released != len(plan.Jobs) {
		t.Errorf("%d jobs released, want %d", released, len(plan.Jobs))
	}
	for k, n := range dispatchCounts(t, h.read(events.TopicOpcodes)) {
		if n != 1 {
			t.Errorf("%+v dispatched %d times", k, n)
		}
	}
	h.waitFor("the metrics", func() bool {
		m := gather(t, reg)
		return m[`drove_planner_requests_total{outcome="completed"}`] == 1 &&
			// The request closed, so it left the state and the gauge.
			m[`drove_planner_jobs{state="succeeded"}`] == 0 && m[`drove_planner_jobs{state="running"}`] == 0 &&
			m["drove_planner_plan_compute_seconds_count"] == 1
	})
}

// gather flattens a registry into "name{label="value"}" → value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += fmt.Sprintf("{%s=%q}", l.GetName(), l.GetValue())
			}
			switch {
			case m.Counter != nil:
				out[name] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

func TestFailingOpcodeCancelsDependentsThatNeedSuccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// A plan a previous planner instance computed and appended before it
	// stopped: the service adopts it from the log. Written by hand so that
	// it has dependencies on success, which the planner adds only where a
	// job needs room another frees.
	reqEnv := evacuate(h, "r1", false, "n1")
	mig := func(in, from, to string) events.Opcode {
		return events.Opcode{OpID: events.OpInstanceMigrate, Instance: in, AllowFailover: true, From: from, To: to}
	}
	rep := func(in, from, to string) events.Opcode {
		return events.Opcode{OpID: events.OpInstanceReplaceDisks, Instance: in, Mode: events.ModeReplaceNewSecondary,
			RemoteNode: to, From: from, To: to}
	}
	success := []events.JobStatus{events.JobSuccess}
	plan := events.PlanComputed{Request: "r1", Moved: []events.Moved{
		{Instance: "web1", Group: "g1", Nodes: []string{"n2", "n4"}},
		{Instance: "web2", Group: "g1", Nodes: []string{"n3", "n2"}},
		{Instance: "db1", Group: "g1", Nodes: []string{"n4", "n3"}},
		{Instance: "db2", Group: "g1", Nodes: []string{"n2", "n3"}},
		{Instance: "cache1", Group: "g1", Nodes: []string{"n3", "n4"}},
		{Instance: "cache2", Group: "g1", Nodes: []string{"n4", "n2"}},
	}, Failed: []events.Failed{}, Jobs: []events.Job{
		{Index: 0, Opcodes: []events.Opcode{mig("web1", "n1", "n2"), rep("web1", "n2", "n4")}},
		{Index: 1, Opcodes: []events.Opcode{mig("web2", "n1", "n3"), rep("web2", "n3", "n2")},
			Depends: []events.Dependency{{Job: -1, Statuses: success}}},
		{Index: 2, Opcodes: []events.Opcode{mig("db1", "n1", "n4"), rep("db1", "n4", "n3")},
			Depends: []events.Dependency{{Job: -1}}},
		{Index: 3, Opcodes: []events.Opcode{mig("db2", "n1", "n2"), rep("db2", "n2", "n3")},
			Depends: []events.Dependency{{Job: -3, Statuses: success}}},
		{Index: 4, Opcodes: []events.Opcode{rep("cache1", "n3", "n4")},
			Depends: []events.Dependency{{Job: -3, Statuses: success}}},
		{Index: 5, Opcodes: []events.Opcode{rep("cache2", "n4", "n2")}},
	}}
	planEnv := events.New(plan, events.CausedBy(reqEnv), events.WithProducer("drove-planner"),
		events.WithReason(events.Reason{Actor: "planner", Why: "plan computed", RequestID: "r1"}))
	if err := h.op.Append(h.ctx, events.TopicPlans, planEnv); err != nil {
		t.Fatal(err)
	}

	h.executor(false, func(d events.OpcodeDispatched) string {
		if d.Opcode.Instance == "web1" && d.Index == 0 {
			return "migration of web1 failed: target refused the memory"
		}
		return ""
	})
	h.start()

	fin := must[events.RequestFinished](t, h.closed("r1"))
	if got := names(fin.Moved, func(m events.Moved) string { return m.Instance }); !sameSet(got, []string{"db1", "cache2"}) {
		t.Errorf("moved %v, want db1 (its dependency accepts any end) and cache2", got)
	}
	reasons := map[string]string{}
	for _, f := range fin.Failed {
		reasons[f.Instance] = f.Reason
	}
	for in, want := range map[string]string{
		"web1":   "target refused the memory",
		"web2":   "dependency job 0 ended error",
		"db2":    "dependency job 0 ended error",
		"cache1": "dependency job 1 ended canceled", // cascading
	} {
		if !strings.Contains(reasons[in], want) {
			t.Errorf("%s failed with %q, want it to say %q", in, reasons[in], want)
		}
	}
	jobs := h.ofRequest(events.TopicJobs, "r1")
	checkSchedule(t, plan, jobs, 2, 5)
	for _, e := range jobs {
		if e.Type == events.TypeJobEnded {
			if je := must[events.JobEnded](t, e); je.Job == 0 && (je.Status != events.JobError || !strings.Contains(je.Error, "refused")) {
				t.Errorf("job 0 ended %+v, want error with the executor's text", je)
			}
		}
		if e.Type == events.TypeJobReleased && slices.Contains([]int{1, 3, 4}, must[events.JobReleased](t, e).Job.Index) {
			t.Errorf("a doomed job was released: %s", e.Payload)
		}
	}
}

func TestDryRunWaitsForApprovalAndRefreshesAStalePlan(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.executor(false, nil)
	svc := h.start()
	evacuate(h, "r1", true, "n1")
	var first []events.Envelope
	h.waitFor("the dry run's plan", func() bool {
		first = h.ofRequest(events.TopicPlans, "r1")
		return len(first) == 1
	})
	// The plan and any release are one transaction: seeing the plan with
	// no release means none was made.
	if jobs := h.ofRequest(events.TopicJobs, "r1"); len(jobs) != 0 {
		t.Fatalf("a dry run released jobs: %d events", len(jobs))
	}
	if n := len(dispatchCounts(t, h.read(events.TopicOpcodes))); n != 0 {
		t.Fatalf("a dry run dispatched %d opcodes", n)
	}

	// The inventory changes before approval: n4 is drained by an operator.
	n4, _, err := h.node("n4")
	if err != nil {
		t.Fatal(err)
	}
	n4.Drained = true
	// The drain and the approval are on different topics, which a running
	// service may read in either order. A service that starts after both
	// rebuilds its state from the whole log before it decides, so the
	// approval is decided with n4 drained: stop it, append, start again.
	svc.cancel()
	err = <-svc.done
	svc.done <- err // for the cleanup
	h.appendEvent(events.NodeUpdated(n4), "operator:bob", "n4 has a failing fan", "")
	approval := h.appendEvent(events.RequestApproved{Request: "r1"}, "operator:alice", "plan looks right", "r1")
	h.start()

	h.closed("r1")
	plans := h.ofRequest(events.TopicPlans, "r1")
	if len(plans) != 2 || plans[1].CausationID != approval.ID {
		t.Fatalf("%d plans (the last caused by %q); want the stale one refreshed by the approval", len(plans), plans[len(plans)-1].CausationID)
	}
	fresh := must[events.PlanComputed](t, plans[1])
	for _, j := range fresh.Jobs {
		for _, op := range j.Opcodes {
			if op.To == "n4" {
				t.Errorf("the refreshed plan still moves %s to the drained n4", op.Instance)
			}
		}
	}
	jobEvents := h.ofRequest(events.TopicJobs, "r1")
	checkSchedule(t, fresh, jobEvents, 2, 5)
	for _, e := range jobEvents {
		if e.Type == events.TypeJobReleased {
			rel := must[events.JobReleased](t, e)
			if !jobs.SamePlan(&events.PlanComputed{Jobs: []events.Job{rel.Job}}, &events.PlanComputed{Jobs: []events.Job{fresh.Jobs[rel.Job.Index]}}) {
				t.Errorf("released job %d is not the refreshed plan's", rel.Job.Index)
			}
		}
	}
}

func TestCancelStopsEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	x := h.executor(true, nil) // every opcode runs until cancelled
	h.start()
	evacuate(h, "r1", false, "n1")
	h.waitHeld(x)
	h.appendEvent(events.RequestCancelled{Request: "r1"}, "operator:alice", "wrong node", "r1")

	fin := must[events.RequestFinished](t, h.closed("r1"))
	if len(fin.Moved) != 0 || !sameSet(names(fin.Failed, func(f events.Failed) string { return f.Instance }), allInstances) {
		t.Fatalf("finished with %+v; want nothing moved and every instance failed", fin)
	}
	opcodes := h.read(events.TopicOpcodes)
	// The job queue may still have been releasing moves when the first
	// dispatches were read (it releases a move once its links have room,
	// which it learns from the moves' progress): every opcode dispatched
	// in all must have been running at the cancel, so cancelled, and a
	// dispatch decided after the cancel would have no OpcodeCancelled.
	dispatched := dispatchCounts(t, opcodes)
	cancelled := map[opKey]bool{}
	for _, e := range opcodes {
		if e.Type == events.TypeOpcodeCancelled {
			c := must[events.OpcodeCancelled](t, e)
			cancelled[opKey{c.Request, c.Job, c.Index}] = true
			if !strings.Contains(c.Reason, "operator:alice: wrong node") {
				t.Errorf("OpcodeCancelled reason %q does not say who cancelled", c.Reason)
			}
		}
	}
	for k := range dispatched {
		if !cancelled[k] {
			t.Errorf("running opcode %+v got no OpcodeCancelled", k)
		}
	}
	plan := must[events.PlanComputed](t, h.ofRequest(events.TopicPlans, "r1")[0])
	fates := map[int]string{}
	for _, e := range h.ofRequest(events.TopicJobs, "r1") {
		switch e.Type {
		case events.TypeJobCancelled:
			c := must[events.JobCancelled](t, e)
			fates[c.Job] = "cancelled: " + c.Reason
		case events.TypeJobEnded:
			fates[must[events.JobEnded](t, e).Job] = "ended " + string(must[events.JobEnded](t, e).Status)
		}
	}
	released := map[int]bool{}
	for k := range dispatched {
		released[k.job] = true
	}
	for i := range plan.Jobs {
		want := "cancelled: request cancelled"
		if released[i] {
			want = "ended canceled"
		}
		if fates[i] != want {
			t.Errorf("job %d: %q, want %q", i, fates[i], want)
		}
	}
}

func TestRestartedServiceFencesTheOldAndContinues(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	x := h.executor(true, nil)
	old := h.start()
	evacuate(h, "r1", false, "n1")
	h.waitHeld(x)

	h.start() // a second instance takes over while the first still runs
	x.release()
	select {
	case err := <-old.done:
		old.done <- err
		if !errors.Is(err, kafka.ErrFenced) {
			t.Fatalf("the old instance's Run = %v, want it fenced", err)
		}
	case <-h.ctx.Done():
		t.Fatal("the old instance was never fenced")
	}

	fin := must[events.RequestFinished](t, h.closed("r1"))
	if !sameSet(names(fin.Moved, func(m events.Moved) string { return m.Instance }), allInstances) {
		t.Fatalf("finished with %+v; want every instance moved", fin)
	}
	for k, n := range dispatchCounts(t, h.read(events.TopicOpcodes)) {
		if n != 1 {
			t.Errorf("%+v dispatched %d times", k, n)
		}
	}
	perJob := map[string]int{}
	for _, e := range h.ofRequest(events.TopicJobs, "r1") {
		p, _ := e.DecodePayload()
		switch v := p.(type) {
		case events.JobReleased:
			perJob["released "+string(rune('0'+v.Job.Index))]++
		case events.JobEnded:
			perJob["ended "+string(rune('0'+v.Job))]++
		}
	}
	for k, n := range perJob {
		if n != 1 {
			t.Errorf("job %s %d times", k, n)
		}
	}
	if n := len(h.ofRequest(events.TopicRequests, "r1", events.TypeRequestFinished)); n != 1 {
		t.Errorf("RequestFinished %d times", n)
	}
	// A plain restart after the end changes nothing.
	h.start()
	if n := len(h.ofRequest(events.TopicRequests, "r1", events.TypeRequestFinished)); n != 1 {
		t.Errorf("RequestFinished %d times after a restart", n)
	}
}

func TestRejections(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start()
	evacuate(h, "r1", true, "n1") // holds every instance of n1 until approved or cancelled
	h.waitFor("r1's plan", func() bool { return len(h.ofRequest(events.TopicPlans, "r1")) == 1 })

	evacuate(h, "r2", false, "n9")
	h.appendEvent(events.GroupChangeRequested{Request: "r3", Instances: []string{"cache1"}}, "owner:acct-1", "move", "r3")
	evacuate(h, "r4", false, "n3") // cache1 and web2 are on n3 too
	h.appendEvent(events.GroupChangeRequested{Request: "r5", Instances: []string{"ghost"}}, "owner:acct-1", "move", "r5")
	for req, want := range map[string]string{
		"r2": `unknown node "n9"`,
		"r3": `instance "cache1" is already being moved by active request r1`,
		"r4": "already being moved by active request r1",
		"r5": `unknown instance "ghost"`,
	} {
		e := h.closed(req)
		if e.Type != events.TypeRequestRejected {
			t.Errorf("%s closed with %s, want a rejection", req, e.Type)
			continue
		}
		if got := must[events.RequestRejected](t, e).Reason; !strings.Contains(got, want) {
			t.Errorf("%s rejected for %q, want %q", req, got, want)
		}
	}
	// Nothing of a rejected request reached the plans or the nodes.
	if n3, _, _ := h.node("n3"); n3.Drained {
		t.Error("a rejected evacuation drained n3")
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestGroupChangeMovesToTheTargetGroup(t *testing.T) {
	t.Parallel()
	c := testCluster(200)
	c.Groups = append(c.Groups, c.Groups[0])
	c.Groups[1].UUID, c.Groups[1].Name = "g2", "g2"
	for _, name := range []string{"m1", "m2"} {
		n := c.Nodes[1]
		n.Name, n.Group, n.FreeMemory, n.FreeDisk = name, 1, n.TotalMemory, n.TotalDisk
		c.Nodes = append(c.Nodes, n)
	}
	h := newHarnessWith(t, c)
	h.executor(false, nil)
	h.start()
	h.appendEvent(events.GroupChangeRequested{Request: "r1", Instances: []string{"cache1", "web2"}, TargetGroups: []string{"g2"}},
		"operator:alice", "rebalance racks", "r1")
	fin := must[events.RequestFinished](t, h.closed("r1"))
	if len(fin.Failed) != 0 || len(fin.Moved) != 2 {
		t.Fatalf("finished with %+v; want both moved", fin)
	}
	for _, m := range fin.Moved {
		if m.Group != "g2" || !sameSet(m.Nodes, []string{"m1", "m2"}) {
			t.Errorf("%s moved to %s %v, want g2 on m1 and m2", m.Instance, m.Group, m.Nodes)
		}
	}
	// Nothing is drained by a group change.
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		if st, _, _ := h.node(n); st.Drained {
			t.Errorf("a group change drained %s", n)
		}
	}
}
