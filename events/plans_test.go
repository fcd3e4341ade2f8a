package events_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/drovehq/drove/events"
)

func bigPlan(n int) events.PlanComputed {
	pc := events.PlanComputed{Request: "r1", Moved: []events.Moved{}, Failed: []events.Failed{{Instance: "x", Reason: "no room"}}, ScoreAfter: 1}
	for i := range n {
		in := fmt.Sprintf("vm%05d", i)
		pc.Moved = append(pc.Moved, events.Moved{Instance: in, Group: "g1", Nodes: []string{"n2"}})
		pc.Jobs = append(pc.Jobs, events.Job{Index: i, Opcodes: []events.Opcode{{OpID: events.OpInstanceMigrate, Instance: in, From: "n1", To: "n2"}}})
	}
	return pc
}

// A plan of 20,000 instances is cut in parts each under the bound, each a
// valid event, and joined back it is the plan.
func TestSplitPlanJoinsBack(t *testing.T) {
	pc := bigPlan(20000)
	parts := events.SplitPlan(pc, "p1", 256<<10)
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	var pp events.PlanParts
	for i, p := range parts {
		b, _ := json.Marshal(p)
		if len(b) > 256<<10 {
			t.Errorf("part %d is %d bytes", i, len(b))
		}
		if _, err := events.Encode(events.New(p, events.WithProducer("t"), events.WithReason(events.Reason{Actor: "planner", Why: "t"}))); err != nil {
			t.Errorf("part %d: %v", i, err)
		}
		whole, done := pp.Add(p)
		if done != (i == len(parts)-1) {
			t.Fatalf("part %d: done %v", i, done)
		}
		if done {
			whole.Plan = ""
			if !reflect.DeepEqual(whole, pc) {
				t.Error("the joined plan differs")
			}
		}
	}
	if one := events.SplitPlan(bigPlan(3), "p2", 1<<20); len(one) != 1 || one[0].Parts != 0 {
		t.Errorf("a small plan came in %d parts", len(one))
	}
}
