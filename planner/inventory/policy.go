package inventory

import (
	"slices"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

// The inventory carries each group's instance policy (GroupDeclared.Policy),
// the cluster's tags (on every group) and each node's reserved memory; the
// fold turns them into the planner's values in Cluster. Every request the
// service plans, evacuations, group changes and per-instance migrations
// alike, reads them there.

// groupPolicy is the planner's policy for a declared group: its own, or
// Ganeti's default when the group states none.
func groupPolicy(p *events.InstancePolicy) planner.IPolicy {
	if p == nil {
		return planner.DefaultIPolicy()
	}
	out := planner.IPolicy{Std: planSpec(p.Std), VCPURatio: p.VCPURatio, SpindleRatio: p.SpindleRatio}
	for _, r := range p.MinMax {
		out.MinMax = append(out.MinMax, planner.MinMax{Min: planSpec(r.Min), Max: planSpec(r.Max)})
	}
	for _, k := range p.DiskTemplates {
		out.DiskTemplates = append(out.DiskTemplates, planner.StorageKind(k))
	}
	return out
}

func planSpec(s events.Spec) planner.ISpec {
	return planner.ISpec{MemorySize: s.MemoryMiB, CPUCount: s.CPUs, DiskSize: s.DiskMiB,
		DiskCount: s.Disks, NICCount: s.NICs, SpindleUse: s.SpindleUse}
}

// unionTags appends to tags those of more it lacks, in order.
func unionTags(tags, more []string) []string {
	for _, t := range more {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags
}
