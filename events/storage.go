package events

import "slices"

// The rules of the storage kinds, in one place: every Drove service asks
// the kind itself — the planner service when it folds the inventory and
// accepts a migration, the gateway when it refuses one, the executors and
// the simulator when they move disks. (The planner library keeps its own
// copy of the classification in its input model, because it imports
// nothing of Drove's; a test in planner/service holds the two equal.)

// StorageKinds lists every storage kind, in the order of the constants.
func StorageKinds() []StorageKind {
	return []StorageKind{StorageDRBD, StorageZFSReplicated, StorageRBD, StorageSharedFile, StorageExt,
		StorageGluster, StorageBlockdev, StoragePlain, StorageFile, StorageDiskless, StorageZFSLocal}
}

// Known reports whether k is one of [StorageKinds].
func (k StorageKind) Known() bool {
	return slices.Contains(StorageKinds(), k)
}

// InternallyMirrored reports whether the kind keeps a secondary replica on a
// second node, which every instance of that kind must name.
func (k StorageKind) InternallyMirrored() bool {
	return k == StorageDRBD || k == StorageZFSReplicated
}

// Shared reports whether the kind's disks live off the nodes (mirrored
// externally, or no disks at all): the instance can run on any node of its
// group and nothing is copied when it moves.
func (k StorageKind) Shared() bool {
	switch k {
	case StorageRBD, StorageSharedFile, StorageExt, StorageGluster, StorageBlockdev, StorageDiskless:
		return true
	}
	return false
}

// CopiedOnMove reports whether the kind's disks are local but sent to the
// target with incremental sends when the instance moves (RFD 34's
// zfs-local).
func (k StorageKind) CopiedOnMove() bool { return k == StorageZFSLocal }

// UsesLocalDisk reports whether the kind takes space from the disks of the
// nodes holding it (primary and, if any, secondary). Ganeti counts only
// LVM-backed kinds (plain, drbd); Drove's ZFS kinds live on the node's pool
// too.
func (k StorageKind) UsesLocalDisk() bool {
	switch k {
	case StorageDRBD, StoragePlain, StorageZFSReplicated, StorageZFSLocal:
		return true
	}
	return false
}

// MigrationRefusal says why an instance of this kind cannot be migrated on
// its own (RFD 34), or "" when it can: local ZFS disks are sent to the
// target, disks that live off the nodes need nothing sent. The reason reads
// after "<kind> storage ", as in "plain storage cannot be sent to another
// node".
func (k StorageKind) MigrationRefusal() string {
	switch {
	case k.CopiedOnMove() || k.Shared():
		return ""
	case k.InternallyMirrored():
		return "is mirrored to a secondary: move it with an evacuation or a failover instead"
	}
	return "cannot be sent to another node"
}
