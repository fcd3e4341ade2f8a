package planner_test

import (
	"reflect"
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
)

// TestChangeGroupBoundsKeepThePlan: on clusters shaped like the fleet
// benchmark's (many groups, every storage kind of the default mix), a
// change-group that skips the groups whose bound cannot win plans exactly
// what searching every group plans.
func TestChangeGroupBoundsKeepThePlan(t *testing.T) {
	for _, tc := range []struct {
		groups, nodes, per int
		fill               float64
		seed               uint64
	}{
		{8, 40, 10, 0.5, 1}, {6, 30, 12, 0.75, 2}, {12, 20, 8, 0.4, 3}, {5, 60, 12, 0.7, 4},
	} {
		spec := clustergen.DefaultSpec()
		spec.Groups, spec.NodesPerGroup, spec.InstancesPerNode = tc.groups, tc.nodes, tc.per
		spec.Fill, spec.Seed = tc.fill, tc.seed
		c, err := clustergen.Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, in := range c.Instances {
			if c.Nodes[in.Primary].Group == 1 {
				names = append(names, in.Name)
			}
		}
		r := planner.Request{Kind: planner.ChangeGroup, Instances: names}
		got, err := planner.Compute(c, r, planner.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		want, err := planner.ComputeExhaustive(c, r, planner.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("spec %+v: the bounded search planned otherwise than the exhaustive one", tc)
		}
		if len(got.Moved) == 0 {
			t.Fatalf("spec %+v: nothing moved", tc)
		}
	}
}

// BenchmarkChangeGroupFleet plans the fleet benchmark's group change
// (test/bench/fleet): 5,000 instances of a 500-node group of 10,000 nodes
// to any other group.
func BenchmarkChangeGroupFleet(b *testing.B) {
	spec := clustergen.DefaultSpec()
	spec.Groups, spec.NodesPerGroup, spec.InstancesPerNode = 20, 500, 10
	spec.Fill, spec.Seed = 0.5, 2026
	c, err := clustergen.Generate(spec)
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, in := range c.Instances {
		if c.Nodes[in.Primary].Group == 1 {
			names = append(names, in.Name)
		}
	}
	r := planner.Request{Kind: planner.ChangeGroup, Instances: names}
	b.ResetTimer()
	for range b.N {
		if _, err := planner.Compute(c, r, planner.DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
}
