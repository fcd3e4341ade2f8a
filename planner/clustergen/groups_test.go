package clustergen_test

import (
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
)

// TwoGroups' first group can be moved whole into its second: the shape
// the change-group tests rely on.
func TestTwoGroupsMovesWholeToTheSecond(t *testing.T) {
	c := clustergen.TwoGroups(3, 4)
	if len(c.Groups) != 2 || len(c.Nodes) != 6 || len(c.Instances) != 12 {
		t.Fatalf("%d groups, %d nodes, %d instances; want 2, 6, 12", len(c.Groups), len(c.Nodes), len(c.Instances))
	}
	r := planner.Request{Kind: planner.ChangeGroup, TargetGroups: []string{"g2"}}
	for _, in := range c.Instances {
		r.Instances = append(r.Instances, in.Name)
	}
	p, err := planner.Compute(c, r, planner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Moved) != 12 || len(p.Failed) != 0 {
		t.Fatalf("moved %d, failed %v; want all 12 moved", len(p.Moved), p.Failed)
	}
}
