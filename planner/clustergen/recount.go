package clustergen

import "github.com/drovehq/drove/planner"

// localDisk reports whether instances of kind k take space on their nodes'
// disks, as the planner counts it: LVM-backed kinds (drbd, plain) and
// Drove's ZFS kinds.
func localDisk(k planner.StorageKind) bool {
	switch k {
	case planner.DRBD, planner.Plain, planner.ZFSReplicated, planner.ZFSLocal:
		return true
	}
	return false
}

// Recount sets every node's FreeMemory and FreeDisk from the placements of
// c's instances, as Ganeti reports them:
//
//	free memory = total - reserved - memory of the running primaries
//	free disk   = total - disk of the primaries and secondaries of the
//	              local-disk kinds (drbd, plain, zfs-local, zfs-replicated)
//
// Call it after changing where instances are, so that the snapshot stays
// consistent; Generate calls it last.
func Recount(c *planner.Cluster) {
	for i := range c.Nodes {
		n := &c.Nodes[i]
		n.FreeMemory = n.TotalMemory - n.ReservedMemory
		n.FreeDisk = n.TotalDisk
	}
	for i := range c.Instances {
		in := &c.Instances[i]
		p := &c.Nodes[in.Primary]
		if in.State == planner.Up {
			p.FreeMemory -= in.Memory
		}
		if !localDisk(in.Storage) {
			continue
		}
		p.FreeDisk -= in.DiskSpace
		if in.Storage.Mirroring() == planner.MirroredInternally && in.Secondary != planner.NoNode {
			c.Nodes[in.Secondary].FreeDisk -= in.DiskSpace
		}
	}
}
