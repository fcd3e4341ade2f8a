package planner

// This file holds the snapshot the planner reads: node groups, nodes and
// instances as an operator's inventory describes them. Sizes are in MiB, as in
// Ganeti's IAllocator protocol, so a Ganeti cluster can be planned unchanged.

// AllocPolicy says whether a node group may receive instances.
type AllocPolicy string

const (
	// Preferred groups are tried first.
	Preferred AllocPolicy = "preferred"
	// LastResort groups are used only when no preferred group fits.
	LastResort AllocPolicy = "last_resort"
	// Unallocable groups never receive instances.
	Unallocable AllocPolicy = "unallocable"
)

// Valid reports whether p is one of the known policies.
func (p AllocPolicy) Valid() bool {
	return p == Preferred || p == LastResort || p == Unallocable
}

// rank orders policies from most to least wanted.
func (p AllocPolicy) rank() int {
	switch p {
	case Preferred:
		return 0
	case LastResort:
		return 1
	}
	return 2
}

// StorageKind is an instance's disk template: it decides how the instance can
// move.
type StorageKind string

// The storage kinds Drove plans for: Ganeti's disk templates and Drove's own.
const (
	DRBD          StorageKind = "drbd"
	ZFSReplicated StorageKind = "zfs-replicated"
	RBD           StorageKind = "rbd"
	SharedFile    StorageKind = "sharedfile"
	Ext           StorageKind = "ext"
	Gluster       StorageKind = "gluster"
	BlockDev      StorageKind = "blockdev"
	Diskless      StorageKind = "diskless"
	Plain         StorageKind = "plain"
	File          StorageKind = "file"
	ZFSLocal      StorageKind = "zfs-local"
)

// Mirroring says how an instance's disks follow it to another node.
type Mirroring int

const (
	// NotMirrored disks live on one node only; the instance cannot move.
	NotMirrored Mirroring = iota
	// MirroredInternally disks have a replica on a secondary node: the
	// instance moves to its secondary and gets new secondaries.
	MirroredInternally
	// MirroredExternally disks live off the nodes: the instance can run on
	// any node of its group.
	MirroredExternally
	// CopiedOnMove disks are local but Drove copies them to the target with
	// incremental sends (Triton's migration), so any node can receive them.
	CopiedOnMove
)

// Mirroring tells how instances of this kind move. Unknown kinds are not
// mirrored: the planner never moves what it does not understand.
func (k StorageKind) Mirroring() Mirroring {
	switch k {
	case DRBD, ZFSReplicated:
		return MirroredInternally
	case RBD, SharedFile, Ext, Gluster, BlockDev, Diskless:
		return MirroredExternally
	case ZFSLocal:
		return CopiedOnMove
	}
	return NotMirrored
}

// Known reports whether k is a storage kind the planner knows.
func (k StorageKind) Known() bool {
	switch k {
	case DRBD, ZFSReplicated, RBD, SharedFile, Ext, Gluster, BlockDev,
		Diskless, Plain, File, ZFSLocal:
		return true
	}
	return false
}

// UsesLocalDisk reports whether the kind takes space from the node's disk.
// Ganeti counts only LVM-backed templates (plain, drbd); Drove's ZFS kinds
// live on the node's pool too.
func (k StorageKind) UsesLocalDisk() bool {
	switch k {
	case DRBD, Plain, ZFSReplicated, ZFSLocal:
		return true
	}
	return false
}

// RunState is an instance's administrative state.
type RunState string

const (
	Up      RunState = "up"
	Down    RunState = "down"
	Offline RunState = "offline"
)

// ISpec is one instance specification of a policy.
type ISpec struct {
	MemorySize int64 `json:"memory-size"`
	CPUCount   int64 `json:"cpu-count"`
	DiskSize   int64 `json:"disk-size"`
	DiskCount  int64 `json:"disk-count"`
	NICCount   int64 `json:"nic-count"`
	SpindleUse int64 `json:"spindle-use"`
}

// MinMax is one allowed range of instance specifications.
type MinMax struct {
	Min ISpec `json:"min"`
	Max ISpec `json:"max"`
}

// IPolicy is Ganeti's instance policy: the sizes instances may have, the
// storage kinds allowed, and how far CPUs and spindles may be overcommitted.
type IPolicy struct {
	MinMax        []MinMax      `json:"minmax"`
	Std           ISpec         `json:"std"`
	DiskTemplates []StorageKind `json:"disk-templates"`
	VCPURatio     float64       `json:"vcpu-ratio"`
	SpindleRatio  float64       `json:"spindle-ratio"`
}

// DefaultIPolicy is Ganeti's default instance policy, used where a snapshot
// gives none.
func DefaultIPolicy() IPolicy {
	return IPolicy{
		MinMax: []MinMax{{
			Min: ISpec{MemorySize: 128, CPUCount: 1, DiskSize: 1024, DiskCount: 1, NICCount: 1, SpindleUse: 1},
			Max: ISpec{MemorySize: 32768, CPUCount: 8, DiskSize: 1024 * 1024, DiskCount: 16, NICCount: 8, SpindleUse: 8},
		}},
		Std:           ISpec{MemorySize: 128, CPUCount: 1, DiskSize: 1024, DiskCount: 1, NICCount: 1, SpindleUse: 1},
		DiskTemplates: []StorageKind{DRBD, Plain, File, SharedFile, BlockDev, RBD, Ext, Gluster, Diskless, ZFSLocal, ZFSReplicated},
		VCPURatio:     4,
		SpindleRatio:  32,
	}
}

// Group is a node group: a mobility domain.
type Group struct {
	UUID        string
	Name        string
	AllocPolicy AllocPolicy
	Policy      IPolicy
	Tags        []string
	// Networks are the networks the group's nodes connect to; a new
	// instance whose NICs need another network cannot be placed here.
	Networks []string
}

// Node is a server as the inventory reports it.
type Node struct {
	Name  string
	Group int // index into Cluster.Groups

	TotalMemory    int64 // MiB
	ReservedMemory int64 // MiB kept for the node itself
	FreeMemory     int64 // MiB free as the node reports it
	TotalDisk      int64 // MiB
	FreeDisk       int64 // MiB
	TotalCPUs      int64
	ReservedCPUs   int64
	TotalSpindles  int64
	FreeSpindles   int64
	// ExclusiveStorage means each disk takes whole spindles.
	ExclusiveStorage bool

	Offline   bool
	Drained   bool
	VMCapable bool
	Tags      []string

	// SendBytesPerSecond and ReceiveBytesPerSecond are the node's link
	// bandwidth each way; 0 is DefaultLinkBytesPerSecond (see LinkOf).
	SendBytesPerSecond, ReceiveBytesPerSecond int64
}

// Usable reports whether the node can run instances at all. Drained nodes
// keep what they run but take nothing new; Ganeti treats both alike.
func (n *Node) Usable() bool { return !n.Offline && !n.Drained && n.VMCapable }

// Disk is one disk of an instance.
type Disk struct {
	Size     int64 // MiB
	Spindles int64 // 0 when unknown
}

// Instance is a virtual machine or container.
type Instance struct {
	Name       string
	Memory     int64 // MiB
	DiskSpace  int64 // MiB on each node holding its disks
	Disks      []Disk
	VCPUs      int64
	SpindleUse int64
	NICs       int64
	Tags       []string
	Storage    StorageKind
	State      RunState
	Owner      string

	Primary   int // index into Cluster.Nodes
	Secondary int // index into Cluster.Nodes, or NoNode
}

// NoNode marks an absent secondary.
const NoNode = -1

// Cluster is a read-only snapshot of the inventory. Groups, nodes and
// instances are referred to by index; names are unique within each list.
type Cluster struct {
	Name      string
	Tags      []string
	Policy    IPolicy
	Groups    []Group
	Nodes     []Node
	Instances []Instance
	// StaticNodeMemory, when positive, replaces every node's reserved
	// memory (Ganeti does this for KVM, whose nodes under-report it).
	StaticNodeMemory int64
}

// ExclusionTagPrefix marks cluster tags that name exclusion tag prefixes:
// two instances sharing a tag with such a prefix should not share a
// primary node.
const ExclusionTagPrefix = "htools:iextags:"

// exclusionPrefixes returns the prefixes named by the cluster's tags.
func (c *Cluster) exclusionPrefixes() []string {
	var out []string
	for _, t := range c.Tags {
		if len(t) > len(ExclusionTagPrefix) && t[:len(ExclusionTagPrefix)] == ExclusionTagPrefix {
			out = append(out, t[len(ExclusionTagPrefix):])
		}
	}
	return out
}

// NodeIndex returns the index of the named node, or -1.
func (c *Cluster) NodeIndex(name string) int {
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			return i
		}
	}
	return -1
}

// InstanceIndex returns the index of the named instance, or -1.
func (c *Cluster) InstanceIndex(name string) int {
	for i := range c.Instances {
		if c.Instances[i].Name == name {
			return i
		}
	}
	return -1
}

// GroupIndex returns the index of the group with that UUID or name, or -1.
func (c *Cluster) GroupIndex(key string) int {
	for i := range c.Groups {
		if c.Groups[i].UUID == key {
			return i
		}
	}
	for i := range c.Groups {
		if c.Groups[i].Name == key {
			return i
		}
	}
	return -1
}
