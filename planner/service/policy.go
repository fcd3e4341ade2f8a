package service

import (
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

// InventoryEvents states a cluster's group policies as the inventory
// carries them; planner/inventory folds them back (policy.go there).

// policyEvent states a planner policy as the inventory carries it.
func policyEvent(p planner.IPolicy) *events.InstancePolicy {
	out := &events.InstancePolicy{Std: eventSpec(p.Std), VCPURatio: p.VCPURatio, SpindleRatio: p.SpindleRatio}
	for _, r := range p.MinMax {
		out.MinMax = append(out.MinMax, events.SpecRange{Min: eventSpec(r.Min), Max: eventSpec(r.Max)})
	}
	for _, k := range p.DiskTemplates {
		out.DiskTemplates = append(out.DiskTemplates, events.StorageKind(k))
	}
	return out
}

func eventSpec(s planner.ISpec) events.Spec {
	return events.Spec{MemoryMiB: s.MemorySize, CPUs: s.CPUCount, DiskMiB: s.DiskSize,
		Disks: s.DiskCount, NICs: s.NICCount, SpindleUse: s.SpindleUse}
}
