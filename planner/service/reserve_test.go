package service

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

// tightCluster: three nodes with room for one 3,000 MiB instance each;
// a on n1, b on n2, n3 empty. Only n3 can take either.
func tightCluster() *planner.Cluster {
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	c.Groups = []planner.Group{{UUID: "g1", Name: "g1", AllocPolicy: planner.Preferred, Policy: planner.DefaultIPolicy()}}
	for i := 1; i <= 3; i++ {
		c.Nodes = append(c.Nodes, planner.Node{Name: fmt.Sprintf("n%d", i), TotalMemory: 4096, FreeMemory: 4096,
			TotalDisk: 1 << 20, FreeDisk: 1 << 20, TotalCPUs: 32, TotalSpindles: 8, FreeSpindles: 8, VMCapable: true})
	}
	for i, name := range []string{"a", "b"} {
		c.Instances = append(c.Instances, planner.Instance{Name: name, Memory: 3000, DiskSpace: 1024,
			Disks: []planner.Disk{{Size: 1024}}, VCPUs: 1, SpindleUse: 1, NICs: 1, Owner: "acct-1",
			Storage: planner.ZFSLocal, State: planner.Up, Primary: i, Secondary: planner.NoNode})
		c.Nodes[i].FreeMemory -= 3000
		c.Nodes[i].FreeDisk -= 1024
	}
	return c
}

// A per-instance migration's target is reserved as a request's move is:
// an evacuation planned while a migration takes a to n3 does not put b on
// n3 too, and a migration to n3 asked while an evacuation takes b there
// is refused.
func TestMigrationTargetReservedAgainstEvacuation(t *testing.T) {
	t.Parallel()
	t.Run("migration first", func(t *testing.T) {
		h := newHarnessWith(t, tightCluster())
		h.start(func(c *Config) { c.Tick = 20 * time.Millisecond })
		h.appendEvent(events.MigrationActionRequested{Migration: "m1", Instance: "a", Action: events.ActionBegin,
			Target: "n3", Account: "alice", Role: events.RoleOperator}, "operator:alice", "begin a", "m1")
		h.waitFor("m1 begun", func() bool {
			return len(h.ofRequest(events.TopicOpcodes, "m1", events.TypeMigrationPhaseDispatched)) > 0
		})
		evacuate(h, "r1", false, "n2")
		h.waitFor("r1 planned", func() bool { return len(h.ofRequest(events.TopicPlans, "r1")) > 0 })
		plan := must[events.PlanComputed](t, h.ofRequest(events.TopicPlans, "r1")[0])
		for _, m := range plan.Moved {
			if m.Nodes[0] == "n3" {
				t.Fatalf("b planned onto n3, which migration m1 is filling: %+v", plan.Moved)
			}
		}
		if len(plan.Failed) != 1 || plan.Failed[0].Instance != "b" {
			t.Fatalf("plan failed %+v; want b failed for lack of room", plan.Failed)
		}
	})
	t.Run("evacuation first", func(t *testing.T) {
		h := newHarnessWith(t, tightCluster())
		h.start(func(c *Config) { c.Tick = 20 * time.Millisecond })
		evacuate(h, "r1", false, "n2") // no executor: b's move to n3 stays in flight
		h.waitFor("r1 planned", func() bool { return len(h.ofRequest(events.TopicPlans, "r1")) > 0 })
		plan := must[events.PlanComputed](t, h.ofRequest(events.TopicPlans, "r1")[0])
		if len(plan.Moved) != 1 || plan.Moved[0].Nodes[0] != "n3" {
			t.Fatalf("plan moved %+v; want b to n3", plan.Moved)
		}
		h.appendEvent(events.MigrationActionRequested{Migration: "m1", Instance: "a", Action: events.ActionBegin,
			Target: "n3", Account: "alice", Role: events.RoleOperator}, "operator:alice", "begin a", "m1")
		var rec events.MigrationStateChanged
		h.waitFor("m1 answered", func() bool {
			evs := h.ofRequest(events.TopicMigrations, "m1", events.TypeMigrationStateChanged)
			if len(evs) > 0 {
				rec = must[events.MigrationStateChanged](t, evs[0])
			}
			return len(evs) > 0
		})
		if rec.State != events.MigrationFailed || !strings.Contains(rec.Error, "n3") {
			t.Fatalf("migration to n3 while b is moving there: %s %q; want refused naming n3", rec.State, rec.Error)
		}
	})
}
