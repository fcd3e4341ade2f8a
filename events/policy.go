package events

import "fmt"

// InstancePolicy is a node group's instance policy (Ganeti's ipolicy): the
// sizes instances may have (one of the min/max ranges), the storage kinds
// allowed, and how far vCPUs and spindles may be overcommitted. A group
// without one is planned with Ganeti's default policy.
type InstancePolicy struct {
	MinMax        []SpecRange   `json:"minmax"`
	Std           Spec          `json:"std"`
	DiskTemplates []StorageKind `json:"disk_templates"`
	// VCPURatio is how many vCPUs of primaries a node may carry per CPU.
	VCPURatio float64 `json:"vcpu_ratio"`
	// SpindleRatio is how many spindles of instances a node may carry per
	// spindle it has.
	SpindleRatio float64 `json:"spindle_ratio"`
}

// SpecRange is one allowed range of instance sizes.
type SpecRange struct {
	Min Spec `json:"min"`
	Max Spec `json:"max"`
}

// Spec is one instance size of a policy.
type Spec struct {
	MemoryMiB  int64 `json:"memory_mib"`
	CPUs       int64 `json:"cpus"`
	DiskMiB    int64 `json:"disk_mib"` // of each disk
	Disks      int64 `json:"disks"`
	NICs       int64 `json:"nics"`
	SpindleUse int64 `json:"spindle_use"`
}

func (s Spec) check(p *problems, field string) {
	nonNegative(p, field+".memory_mib", s.MemoryMiB)
	nonNegative(p, field+".cpus", s.CPUs)
	nonNegative(p, field+".disk_mib", s.DiskMiB)
	nonNegative(p, field+".disks", s.Disks)
	nonNegative(p, field+".nics", s.NICs)
	nonNegative(p, field+".spindle_use", s.SpindleUse)
}

func (ip InstancePolicy) check(p *problems, field string) {
	for i, r := range ip.MinMax {
		f := fmt.Sprintf("%s.minmax[%d]", field, i)
		r.Min.check(p, f+".min")
		r.Max.check(p, f+".max")
		for _, c := range []struct {
			name     string
			min, max int64
		}{{"memory_mib", r.Min.MemoryMiB, r.Max.MemoryMiB}, {"cpus", r.Min.CPUs, r.Max.CPUs},
			{"disk_mib", r.Min.DiskMiB, r.Max.DiskMiB}, {"disks", r.Min.Disks, r.Max.Disks},
			{"nics", r.Min.NICs, r.Max.NICs}, {"spindle_use", r.Min.SpindleUse, r.Max.SpindleUse}} {
			if c.min > c.max {
				p.addf(f+"."+c.name, "min %d is above max %d", c.min, c.max)
			}
		}
	}
	ip.Std.check(p, field+".std")
	for i, k := range ip.DiskTemplates {
		oneOf(p, fmt.Sprintf("%s.disk_templates[%d]", field, i), k,
			StorageDRBD, StorageZFSReplicated, StorageRBD, StorageSharedFile, StorageExt,
			StorageGluster, StorageBlockdev, StoragePlain, StorageFile, StorageDiskless, StorageZFSLocal)
	}
	if !(ip.VCPURatio > 0) {
		p.addf(field+".vcpu_ratio", "must be positive, got %v", ip.VCPURatio)
	}
	if !(ip.SpindleRatio >= 0) {
		p.addf(field+".spindle_ratio", "must not be negative, got %v", ip.SpindleRatio)
	}
}
