package clustergen

import (
	"fmt"

	"github.com/drovehq/drove/planner"
)

// TwoGroups is the shape the change-group tests move at scale, drawn from
// nothing: two groups of nodes (g1n0…, g2n0…) with room for everything,
// and perNode RBD instances (shared storage: a move copies no disk) on
// each node of the first, the second group empty. Unlike Generate it is
// the same for any seed.
func TwoGroups(nodes, perNode int) *planner.Cluster {
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	for g := range 2 {
		name := fmt.Sprintf("g%d", g+1)
		c.Groups = append(c.Groups, planner.Group{UUID: name, Name: name, AllocPolicy: planner.Preferred, Policy: planner.DefaultIPolicy()})
		for i := range nodes {
			c.Nodes = append(c.Nodes, planner.Node{Name: fmt.Sprintf("%sn%d", name, i), Group: g,
				TotalMemory: 4 << 20, FreeMemory: 4 << 20, TotalDisk: 1 << 30, FreeDisk: 1 << 30,
				TotalCPUs: 1 << 14, TotalSpindles: 1 << 14, FreeSpindles: 1 << 14, VMCapable: true})
		}
	}
	for i := range nodes {
		for k := range perNode {
			c.Instances = append(c.Instances, planner.Instance{Name: fmt.Sprintf("vm-%d-%d", i, k),
				Memory: 128, DiskSpace: 1024, Disks: []planner.Disk{{Size: 1024}}, VCPUs: 1, SpindleUse: 1, NICs: 1,
				Storage: planner.RBD, State: planner.Up, Primary: i, Secondary: planner.NoNode, Owner: "acct-1"})
			c.Nodes[i].FreeMemory -= 128
		}
	}
	return c
}
