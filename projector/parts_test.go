package projector_test

import (
	"fmt"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector"
)

// A plan written in parts projects to the same rows as the plan whole,
// even folded in batches that cut between its parts.
func TestPlanInPartsProjectsAsWhole(t *testing.T) {
	e := newEnv(t)
	pc := events.PlanComputed{Request: req, Failed: []events.Failed{{Instance: "vmx", Reason: "no room"}}}
	for i := range 40 {
		in := fmt.Sprintf("vm%d", i)
		pc.Moved = append(pc.Moved, events.Moved{Instance: in, Group: "g1", Nodes: []string{"n2"}})
		pc.Jobs = append(pc.Jobs, events.Job{Index: i, Opcodes: []events.Opcode{{OpID: events.OpInstanceMigrate, Instance: in, From: "n1", To: "n2"}}})
	}
	parts := events.SplitPlan(pc, "plan-1", 1000)
	if len(parts) < 3 {
		t.Fatalf("%d parts; the test needs several", len(parts))
	}
	fold := func(schema string, pcs []events.PlanComputed) map[string]projector.Checksum {
		if err := projector.ApplySchema(e.ctx, e.pool, schema); err != nil {
			t.Fatal(err)
		}
		// An earlier, longer plan of the request: its extra jobs lose their plan columns.
		longer := pc
		longer.Jobs = append(append([]events.Job{}, pc.Jobs...), events.Job{Index: 40,
			Opcodes: []events.Opcode{{OpID: events.OpInstanceMigrate, Instance: "vmy", From: "n1", To: "n2"}}})
		var recs []kafka.Raw
		for i, p := range append([]events.PlanComputed{longer}, pcs...) {
			v := ev(p, 1+min(i, 1), req)
			b, err := events.Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, kafka.Raw{Topic: events.TopicPlans, Offset: int64(i), Key: []byte(v.Key), Value: b})
		}
		if err := projector.Fold(e.ctx, e.pool, schema, recs, 2); err != nil {
			t.Fatal(err)
		}
		sums, err := projector.Checksums(e.ctx, e.pool, schema)
		if err != nil {
			t.Fatal(err)
		}
		return sums
	}
	whole := fold("plan_whole", []events.PlanComputed{pc})
	cut := fold("plan_parts", parts)
	for _, name := range []string{"plans", "jobs", "requests"} {
		if whole[name] != cut[name] {
			t.Errorf("%s differs: whole %+v, parts %+v", name, whole[name], cut[name])
		}
	}
}
