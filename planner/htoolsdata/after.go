package htoolsdata

import (
	"slices"

	"github.com/drovehq/drove/planner"
)

// After returns the cluster as plan p of request r leaves it, for hail's
// -S FILE.post-ialloc: instances allocated are added, instances moved or
// relocated take their new nodes, and the nodes' free memory and disk
// follow (an instance's memory on its primary while it runs or is new,
// its disk on each node that holds it, for storage on local disks). c is
// not changed.
func After(c *planner.Cluster, r planner.Request, p *planner.Plan) *planner.Cluster {
	out := *c
	out.Nodes = slices.Clone(c.Nodes)
	out.Instances = slices.Clone(c.Instances)
	for i := range out.Instances {
		unplace(&out, &out.Instances[i])
	}
	for _, a := range p.Allocated {
		for _, ni := range r.New {
			if ni.Instance.Name == a.Instance {
				in := ni.Instance
				in.State = planner.Up
				setNodes(&out, &in, a.Nodes)
				out.Instances = append(out.Instances, in)
			}
		}
	}
	for _, m := range p.Moved {
		if i := out.InstanceIndex(m.Instance); i >= 0 {
			setNodes(&out, &out.Instances[i], m.Nodes)
		}
	}
	if len(p.Relocated) > 0 && len(r.Instances) > 0 {
		relocate(&out, r, p.Relocated[0])
	}
	for i := range out.Instances {
		place(&out, &out.Instances[i], -1)
	}
	return &out
}

func setNodes(c *planner.Cluster, in *planner.Instance, nodes []string) {
	in.Primary, in.Secondary = c.NodeIndex(nodes[0]), planner.NoNode
	if len(nodes) > 1 {
		in.Secondary = c.NodeIndex(nodes[1])
	}
}

// relocate gives r's instance the node that replaces the one it leaves:
// the secondary (relocate of a mirrored instance, allocate-secondary,
// which also makes the instance DRBD) or the primary (shared storage).
func relocate(c *planner.Cluster, r planner.Request, node string) {
	i := c.InstanceIndex(r.Instances[0])
	if i < 0 {
		return
	}
	in := &c.Instances[i]
	n := c.NodeIndex(node)
	switch {
	case r.Kind == planner.AllocateSecondary:
		in.Secondary, in.Storage = n, planner.DRBD
	case in.Storage.Mirroring() == planner.MirroredInternally:
		in.Secondary = n
	default:
		in.Primary = n
	}
}

// unplace and place take an instance's use off its nodes and put it back.
func unplace(c *planner.Cluster, in *planner.Instance) { place(c, in, 1) }

func place(c *planner.Cluster, in *planner.Instance, sign int64) {
	if in.Primary < 0 {
		return
	}
	if in.State == planner.Up {
		c.Nodes[in.Primary].FreeMemory += sign * in.Memory
	}
	if !in.Storage.UsesLocalDisk() {
		return
	}
	c.Nodes[in.Primary].FreeDisk += sign * in.DiskSpace
	if in.Secondary != planner.NoNode {
		c.Nodes[in.Secondary].FreeDisk += sign * in.DiskSpace
	}
}
