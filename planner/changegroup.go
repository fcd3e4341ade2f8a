package planner

import (
	"fmt"
	"sort"
	"strings"
)

// changeGroup plans a change-group request: each instance moves whole to
// the best of the allowed groups. Preferred groups are tried before
// last-resort ones and unallocable groups never; among groups of the same
// policy, the one whose score ends lowest wins (Ganeti's rule).
//
// Unlike hail, Drove does not refuse every move when the cluster already
// lacks N+1 redundancy: a node's N+1 check fails only when the move itself
// breaks it.
func (s *state) changeGroup(r *Request, out *outcome) error {
	from := map[int32]bool{}
	for _, name := range r.Instances {
		from[s.nodes[s.insts[s.instance(name)].pri].group] = true
	}
	var allowed []int32
	if len(r.TargetGroups) == 0 {
		for g := range s.c.Groups {
			allowed = append(allowed, int32(g))
		}
	} else {
		for _, key := range r.TargetGroups {
			g := s.c.GroupIndex(key)
			if g < 0 {
				return fmt.Errorf("%w: target group %q", ErrUnknownGroup, key)
			}
			allowed = append(allowed, int32(g))
		}
	}
	var targets []int32
	var skipped []string
	for _, g := range allowed {
		switch {
		case from[g]:
		case s.c.Groups[g].AllocPolicy == Unallocable:
			skipped = append(skipped, fmt.Sprintf("group %q is unallocable", s.c.Groups[g].Name))
		default:
			targets = append(targets, g)
		}
	}
	sort.SliceStable(targets, func(a, b int) bool {
		return s.c.Groups[targets[a]].AllocPolicy.rank() < s.c.Groups[targets[b]].AllocPolicy.rank()
	})
	b := s.newGroupBounds()
	for _, name := range r.Instances {
		idx := s.instance(name)
		in := s.insts[idx]
		if in.mirror == NotMirrored {
			out.fail(name, fmt.Sprintf("storage kind %q is not mirrored: its disks exist only on %s, so it cannot change group", in.kind, s.nodeName(in.pri)))
			continue
		}
		best, why, hail := s.bestGroup(&in, targets, b)
		if best == nil {
			msg := "no target group can receive it"
			if len(targets) == 0 {
				msg = "no target group: every allowed group is the instance's own or unallocable"
			}
			why = append(why, skipped...)
			if len(why) > 0 {
				msg += ": " + strings.Join(why, "; ")
			}
			if len(hail) == 0 {
				hail = []string{"no groups for evacuation"}
			}
			out.failHail(name, msg, strings.Join(hail, ", "))
			continue
		}
		out.move(s, &in, best.best)
		b.moved(s, &in)
	}
	return nil
}

// bestGroup searches the target groups of the first policy level that
// has a fit and returns the best search (the lowest score, ties to the
// later group), or the reasons each group refused. Within a level the
// groups are searched in the order of their lower bounds, and a group
// whose bound is above the best score found is not searched (see
// groupbound.go): it could not win.
func (s *state) bestGroup(in *instState, targets []int32, b *groupBounds) (*search, []string, []string) {
	why := make([]string, len(targets))
	hail := make([]string, len(targets))
	var best *search
	for lo := 0; lo < len(targets) && best == nil; {
		hi := lo + 1
		rank := s.c.Groups[targets[lo]].AllocPolicy.rank()
		for hi < len(targets) && s.c.Groups[targets[hi]].AllocPolicy.rank() == rank {
			hi++
		}
		order, bounds := b.order(s, in, targets, lo, hi)
		bestAt := -1
		for k, i := range order {
			if best != nil && bounds[k] > best.best.score {
				break // sorted: no group left can beat it
			}
			x, reason, h := s.searchGroup(in, targets[i], b)
			if x == nil {
				why[i], hail[i] = reason, h
				continue
			}
			if best == nil || x.best.score < best.best.score || (x.best.score == best.best.score && i > bestAt) {
				best, bestAt = x, i
			}
		}
		lo = hi
	}
	if best != nil {
		return best, nil, nil
	}
	var out, hailOut []string
	for i, w := range why {
		if w != "" {
			out, hailOut = append(out, w), append(hailOut, hail[i])
		}
	}
	return nil, out, hailOut
}

// searchGroup finds the best way for in to move whole to group g, or why
// there is none, in Drove's words and in hail's.
func (s *state) searchGroup(in *instState, g int32, b *groupBounds) (*search, string, string) {
	gname := s.c.Groups[g].Name
	hhead := fmt.Sprintf("Group %s (%s): ", gname, s.c.Groups[g].AllocPolicy)
	if reason, mode := s.policyViolation(in, g); reason != "" {
		// hail checks the policy on every candidate; Drove once per group.
		var fc FailCounts
		fc[mode] = len(s.targets(g, nil))
		return nil, fmt.Sprintf("group %q: %s", gname, reason), hhead + fc.NoSolution()
	}
	x := newSearch(s, *in, g)
	nodes := s.targets(g, nil)
	if b != nil && len(nodes) > 2*s.pairCandidates() && s.nodes[in.pri].group != g &&
		(in.sec == NoNode || s.nodes[in.sec].group != g) {
		// A group large enough for pairs to be ranked, and the
		// instance's nodes outside its score: the bounds of
		// nodebound.go hold and pay.
		x.lin = s.newLinear(g, b.rangeOf(s, g), &x.in)
	}
	switch in.mirror {
	case MirroredInternally:
		var prefix []move
		if s.c.Nodes[in.pri].Offline && s.usable(in.sec) {
			prefix = []move{{mvFailover, 0}}
		}
		x.pairs(nodes, prefix)
	default:
		x.fast(mvFailoverToAny, nodes)
	}
	if !x.best.ok {
		return nil, fmt.Sprintf("group %q: %s", gname, s.noPlaceReason(x, g, nodes)), hhead + x.why.modes.NoSolution()
	}
	return x, "", ""
}

// policyViolation checks an instance against a group's instance policy:
// its storage kind must be allowed and its size within one min/max range.
func (s *state) policyViolation(in *instState, g int32) (string, FailMode) {
	pol := &s.c.Groups[g].Policy
	if len(pol.DiskTemplates) > 0 {
		ok := false
		for _, k := range pol.DiskTemplates {
			if k == in.kind {
				ok = true
			}
		}
		if !ok {
			return fmt.Sprintf("storage kind %q is not allowed by the group's instance policy", in.kind), FailDisk
		}
	}
	if len(pol.MinMax) == 0 {
		return "", 0
	}
	inst := s.spec(in.idx)
	spec := ISpec{MemorySize: inst.Memory, CPUCount: inst.VCPUs, DiskCount: int64(len(inst.Disks)),
		NICCount: inst.NICs, SpindleUse: inst.SpindleUse}
	var first string
	var mode FailMode
	for _, mm := range pol.MinMax {
		v, m := specViolation(spec, inst.Disks, mm)
		if v == "" {
			return "", 0
		}
		if first == "" {
			first, mode = v, m
		}
	}
	return "outside the group's instance policy: " + first, mode
}

func specViolation(spec ISpec, disks []Disk, mm MinMax) (string, FailMode) {
	check := func(name string, v, lo, hi int64) string {
		if v < lo {
			return fmt.Sprintf("%s %d is below the minimum %d", name, v, lo)
		}
		if v > hi {
			return fmt.Sprintf("%s %d is above the maximum %d", name, v, hi)
		}
		return ""
	}
	for _, c := range []struct {
		name      string
		v, lo, hi int64
		mode      FailMode // hail's
	}{
		{"memory-size", spec.MemorySize, mm.Min.MemorySize, mm.Max.MemorySize, FailMem},
		{"cpu-count", spec.CPUCount, mm.Min.CPUCount, mm.Max.CPUCount, FailCPU},
		{"disk-count", spec.DiskCount, mm.Min.DiskCount, mm.Max.DiskCount, FailDiskCount},
		{"nic-count", spec.NICCount, mm.Min.NICCount, mm.Max.NICCount, FailInternal},
		{"spindle-use", spec.SpindleUse, mm.Min.SpindleUse, mm.Max.SpindleUse, FailSpindles},
	} {
		if v := check(c.name, c.v, c.lo, c.hi); v != "" {
			return v, c.mode
		}
	}
	for _, d := range disks {
		if v := check("disk-size", d.Size, mm.Min.DiskSize, mm.Max.DiskSize); v != "" {
			return v, FailDisk
		}
	}
	return "", 0
}
