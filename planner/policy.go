package planner

import (
	"fmt"
	"slices"
)

// placementPolicyViolation checks a new (or recreated) instance against
// the instance policy of the group it would land in, the way hail does
// before placing it: the storage kind must be allowed, and memory, every
// disk's size, vCPUs, spindles and the disk count must fall within one of
// the min/max ranges. Unlike Ganeti's own cluster code, hail does not look
// at NICs, so neither does this. It returns "" when the instance fits.
//
// excl is the target node's exclusive storage: then the spindles checked
// are those of the disks (unknown spindles never fit), else spindle use.
// The mode is hail's for the same refusal: the ranges are checked first,
// as hail does, and a storage kind the policy does not allow is FailDisk.
func placementPolicyViolation(in *Instance, pol *IPolicy, excl bool) (string, FailMode) {
	var first string
	var mode FailMode
	for _, mm := range pol.MinMax {
		v, m := rangeViolation(in, mm, excl)
		if v == "" {
			first = ""
			break
		}
		if first == "" {
			first, mode = v, m
		}
	}
	if first != "" {
		return first, mode
	}
	if len(pol.DiskTemplates) > 0 && !slices.Contains(pol.DiskTemplates, in.Storage) {
		return fmt.Sprintf("storage kind %q is not allowed by the group's instance policy", in.Storage), FailDisk
	}
	return "", 0
}

// rangeViolation checks one min/max range, in hail's order.
func rangeViolation(in *Instance, mm MinMax, excl bool) (string, FailMode) {
	out := func(name string, v, lo, hi int64) string {
		if v < lo {
			return fmt.Sprintf("%s %d is below the policy minimum %d", name, v, lo)
		}
		if v > hi {
			return fmt.Sprintf("%s %d is above the policy maximum %d", name, v, hi)
		}
		return ""
	}
	if v := out("memory", in.Memory, mm.Min.MemorySize, mm.Max.MemorySize); v != "" {
		return v, FailMem
	}
	for _, d := range in.Disks {
		if v := out("disk size", d.Size, mm.Min.DiskSize, mm.Max.DiskSize); v != "" {
			return v, FailDisk
		}
	}
	if v := out("vCPUs", in.VCPUs, mm.Min.CPUCount, mm.Max.CPUCount); v != "" {
		return v, FailCPU
	}
	if excl {
		sp := totalSpindles(in.Disks)
		if sp < 0 {
			return "the disks' spindles are unknown and the node has exclusive storage", FailSpindles
		}
		if v := out("spindles", sp, mm.Min.SpindleUse, mm.Max.SpindleUse); v != "" {
			return v, FailSpindles
		}
	} else if v := out("spindle use", in.SpindleUse, mm.Min.SpindleUse, mm.Max.SpindleUse); v != "" {
		return v, FailSpindles
	}
	if in.Storage != Diskless {
		if v := out("disk count", int64(len(in.Disks)), mm.Min.DiskCount, mm.Max.DiskCount); v != "" {
			return v, FailDiskCount
		}
	}
	return "", 0
}
