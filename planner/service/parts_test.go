package service

import (
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
)

// A request whose decisions cannot fit in a record of the log is rejected
// with that reason; the request after it is planned in parts and runs, and
// a restart finds nothing left to decide.
func TestOversizedDecisionFailsOnlyItsRequest(t *testing.T) {
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
