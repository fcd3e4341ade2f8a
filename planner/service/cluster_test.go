package service

import (
	"fmt"

	"github.com/drovehq/drove/planner"
)

// testCluster is one group of four nodes with diskGiB of disk each and
// DRBD instances: four with their primary on n1, two with their secondary
// there. Free space is derived from the placements, as nodes report it.
func testCluster(diskGiB int64) *planner.Cluster {
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	c.Groups = []planner.Group{{UUID: "g1", Name: "g1", AllocPolicy: planner.Preferred, Policy: planner.DefaultIPolicy()}}
	for i := 1; i <= 4; i++ {
		c.Nodes = append(c.Nodes, planner.Node{Name: fmt.Sprintf("n%d", i), TotalMemory: 32 * 1024,
			TotalDisk: diskGiB * 1024, TotalCPUs: 32, TotalSpindles: 8, FreeSpindles: 8, VMCapable: true})
	}
	place := []struct {
		name     string
		pri, sec int
	}{
		{"web1", 0, 1}, {"web2", 0, 2}, {"db1", 0, 3}, {"db2", 0, 1},
		{"cache1", 2, 0}, {"cache2", 3, 0},
	}
	for _, p := range place {
		c.Instances = append(c.Instances, planner.Instance{Name: p.name, Memory: 2048, DiskSpace: 20 * 1024,
			Disks: []planner.Disk{{Size: 20 * 1024}}, VCPUs: 2, SpindleUse: 1, NICs: 1, Owner: "acct-1",
			Storage: planner.DRBD, State: planner.Up, Primary: p.pri, Secondary: p.sec})
	}
	for i := range c.Nodes {
		c.Nodes[i].FreeMemory, c.Nodes[i].FreeDisk = c.Nodes[i].TotalMemory, c.Nodes[i].TotalDisk
	}
	for _, in := range c.Instances {
		c.Nodes[in.Primary].FreeMemory -= in.Memory
		c.Nodes[in.Primary].FreeDisk -= in.DiskSpace
		c.Nodes[in.Secondary].FreeDisk -= in.DiskSpace
	}
	return c
}

// evacInstances lists the instances holding node in any role.
func evacInstances(c *planner.Cluster, node string) []string {
	n := c.NodeIndex(node)
	var out []string
	for _, in := range c.Instances {
		if in.Primary == n || in.Secondary == n {
			out = append(out, in.Name)
		}
	}
	return out
}
