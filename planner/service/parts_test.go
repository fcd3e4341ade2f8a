package service

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
)

// A request whose decisions cannot fit in a record of the log is rejected
// with that reason; the request after it is planned in parts and runs, and
// a restart finds nothing left to decide.
func TestOversizedDecisionFailsOnlyItsRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.executor(false, nil)
	small := func(c *Config) { c.Kafka.MaxRecordBytes = 4096 }
	h.start(small)

	// Every planner event quotes the requester's reason: this one's is
	// larger than a record, so no cut of the plan can fit.
	h.appendEvent(events.GroupChangeRequested{Request: "big", Instances: []string{"cache1"}},
		"operator:bob", strings.Repeat("why ", 2000), "big")
	evacuate(h, "r1", false, "n1")

	rej := h.closed("big")
	if rej.Type != events.TypeRequestRejected {
		t.Fatalf("big closed with %s, want a rejection", rej.Type)
	}
	if got := must[events.RequestRejected](t, rej).Reason; !strings.Contains(got, "cannot be appended") ||
		!strings.Contains(got, "MaxRecordBytes") {
		t.Errorf("big rejected for %q; want the record limit named", got)
	}
	if n := len(h.ofRequest(events.TopicPlans, "big")); n != 0 {
		t.Errorf("%d plan events of the rejected request reached the log", n)
	}

	fin := must[events.RequestFinished](t, h.closed("r1"))
	if len(fin.Failed) != 0 || !sameSet(names(fin.Moved, func(m events.Moved) string { return m.Instance }), allInstances) {
		t.Fatalf("r1 finished with %+v; want every instance moved", fin)
	}
	parts := h.ofRequest(events.TopicPlans, "r1")
	if len(parts) < 2 {
		t.Fatalf("r1's plan is %d events; with 4 KiB records it must come in parts", len(parts))
	}
	var pp events.PlanParts
	var whole events.PlanComputed
	done := false
	for i, e := range parts {
		pc := must[events.PlanComputed](t, e)
		if pc.Part != i || pc.Parts != len(parts) {
			t.Errorf("part %d says %d of %d", i, pc.Part, pc.Parts)
		}
		whole, done = pp.Add(pc)
	}
	if !done {
		t.Fatal("the parts do not join into a plan")
	}
	released := len(h.ofRequest(events.TopicJobs, "r1", events.TypeJobReleased))
	if released != len(whole.Jobs) || len(whole.Moved) != len(allInstances) {
		t.Errorf("%d jobs released of %d joined, %d moved; want all", released, len(whole.Jobs), len(whole.Moved))
	}

	// A restart neither retries the rejected request nor redoes r1.
	before := len(h.read(events.TopicRequests))
	h.start(small)
	if after := len(h.read(events.TopicRequests)); after != before {
		t.Errorf("the restart appended %d request events", after-before)
	}
}

// A change-group of 20,000 instances is planned, appended as a plan in
// parts (one transaction, every part within the record limit), and run:
// every job released, dispatched, ended, and the request finished with
// every instance moved.
func TestGroupChangeOf20000Instances(t *testing.T) {
	const nodes, perNode = 10, 2000
	c := clustergen.TwoGroups(nodes, perNode)
	// 20,000 moves take some 20 s here, several times that with the race
	// detector on a loaded machine.
	h := newHarnessFor(t, c, 5*time.Minute)
	x := h.executor(false, nil)
	x.mu.Lock()
	x.batch = true
	x.mu.Unlock()
	reg := prometheus.NewRegistry()
	h.start(func(cfg *Config) {
		cfg.Metrics = reg
		cfg.Options = planner.DefaultOptions()
		cfg.Options.MaxMovesPerNode = 500
		cfg.MaxRunningMoves = 5000
		// Ten nodes' links let ten moves run at once, one pass per move
		// ended; plan order lets the caps decide (see ReleaseInPlanOrder).
		cfg.ReleaseInPlanOrder = true
	})
	names := make([]string, len(c.Instances))
	for i, in := range c.Instances {
		names[i] = in.Name
	}
	start := time.Now()
	h.appendEvent(events.GroupChangeRequested{Request: "big", Instances: names, TargetGroups: []string{"g2"}},
		"operator:alice", "rack retirement", "big")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Second):
				m := gather(t, reg)
				t.Logf("%s: pending %v running %v succeeded %v", time.Since(start).Round(time.Second),
					m[`drove_planner_jobs{state="pending"}`], m[`drove_planner_jobs{state="running"}`], m[`drove_planner_jobs{state="succeeded"}`])
			}
		}
	}()
	fin := h.closed("big")
	if fin.Type != events.TypeRequestFinished {
		t.Fatalf("closed with %s: %.300s", fin.Type, fin.Reason.Why)
	}
	done := must[events.RequestFinished](t, fin)
	t.Logf("%d instances changed group in %s", len(done.Moved), time.Since(start))
	if len(done.Moved) != nodes*perNode || len(done.Failed) != 0 {
		t.Fatalf("finished with %d moved, %d failed; want all %d moved", len(done.Moved), len(done.Failed), nodes*perNode)
	}
	parts := h.ofRequest(events.TopicPlans, "big")
	if len(parts) < 2 {
		t.Fatalf("the plan is %d events; 20,000 instances do not fit one record", len(parts))
	}
	var pp events.PlanParts
	var whole events.PlanComputed
	for _, e := range parts {
		if b, _ := events.Encode(e); len(b) > 8<<20 {
			t.Errorf("a part is %d bytes, over the record limit", len(b))
		}
		whole, _ = pp.Add(must[events.PlanComputed](t, e))
	}
	if len(whole.Jobs) != nodes*perNode {
		t.Fatalf("the parts join into %d jobs", len(whole.Jobs))
	}
	if n := len(h.ofRequest(events.TopicJobs, "big", events.TypeJobEnded)); n != nodes*perNode {
		t.Errorf("%d jobs ended, want %d", n, nodes*perNode)
	}
	t.Logf("the plan took %d events", len(parts))
}
