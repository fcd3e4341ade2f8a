package planner

import "slices"

// On a dedicated cluster (every node of the groups an allocation may use
// has exclusive storage: instances take whole disks), hail does not use the
// cluster score to place a new instance. It counts, for each smallest
// instance the group's policy allows, how many fewer of them the nodes
// could still take after the placement ("lost allocations"), and picks the
// placement that loses least, then the one leaving least free disk (to keep
// big disks for big instances). Drove does the same, so that it places
// exactly where hail does. No capacity check is made on such clusters.

// dedicated reports whether the allocation runs on a dedicated cluster:
// every node is exclusive-storage or in a group the allocation cannot use
// (unallocable, or not the named group).
func (s *state) dedicated(group string) bool {
	for i := range s.c.Nodes {
		n := &s.c.Nodes[i]
		g := &s.c.Groups[n.Group]
		usable := g.AllocPolicy != Unallocable
		if group != "" {
			usable = g.Name == group
		}
		if usable && !n.ExclusiveStorage {
			return false
		}
	}
	return true
}

// requestGroup is the one group an allocation request names, or "": hail
// decides whether a cluster is dedicated with it.
func requestGroup(r *Request) string {
	var gs []string
	for _, ni := range r.New {
		if ni.Group != "" && !slices.Contains(gs, ni.Group) {
			gs = append(gs, ni.Group)
		}
	}
	if len(gs) == 1 {
		return gs[0]
	}
	return ""
}

// testInstances are the minimal instances of each range of the policy,
// largest disk first: plain, running, one vCPU count, no disks listed.
func (s *state) testInstances(pol *IPolicy) []instState {
	mins := make([]ISpec, 0, len(pol.MinMax))
	for _, mm := range pol.MinMax {
		mins = append(mins, mm.Min)
	}
	slices.SortStableFunc(mins, func(a, b ISpec) int { return int(b.DiskSize - a.DiskSize) })
	out := make([]instState, 0, len(mins))
	for _, m := range mins {
		in := Instance{Name: "minimal-spec-instance", Memory: m.MemorySize, DiskSpace: m.DiskSize,
			VCPUs: m.CPUCount, SpindleUse: m.SpindleUse, Storage: Plain, State: Up}
		out = append(out, s.newInstState(&in, -1))
	}
	return out
}

// maxTestAllocations bounds the count of test instances a node can take,
// for policies whose minimal instance takes nothing.
const maxTestAllocations = 1 << 16

// allocationVector counts, for each test instance, how many a node could
// still take one after the other.
func allocationVector(n nodeState, tests []instState) []int {
	out := make([]int, len(tests))
	for k := range tests {
		m := n
		for out[k] < maxTestAllocations {
			var f failure
			if m, f = addPri(m, &tests[k], true); !f.ok() {
				break
			}
			out[k]++
		}
	}
	return out
}

// lostAllocations is the metric of a tried placement: the test instances
// the touched nodes can no longer take, and the free disk they keep.
func (s *state) lostAllocations(ov *overlay, tests []instState) allocKey {
	key := allocKey{lost: make([]int, len(tests))}
	for k := 0; k < ov.n; k++ {
		before := allocationVector(s.nodes[ov.idx[k]], tests)
		after := allocationVector(ov.ns[k], tests)
		for i := range tests {
			key.lost[i] += before[i] - after[i]
		}
		key.disk += ov.ns[k].fDsk
	}
	return key
}
