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
	for _, name := range r.Instances {
		idx := s.instance(name)
		in := s.insts[idx]
		if in.mirror == NotMirrored {
			out.fail(name, fmt.Sprintf("storage kind %q is not mirrored: its disks exist only on %s, so it cannot change group", in.kind, s.nodeName(in.pri)))
			continue
		}
		best, why := s.bestGroup(&in, targets)
		if best == nil {
			msg := "no target group can receive it"
			if len(targets) == 0 {
				msg = "no target group: every allowed group is the instance's own or unallocable"
			}
			why = append(why, skipped...)
			if len(why) > 0 {
				msg += ": " + strings.Join(why, "; ")
			}
			out.fail(name, msg)
			continue
		}
		out.move(s, &in, best.best)
	}
	return nil
}

// bestGroup searches each target group in policy order and returns the
// best search of the first policy level that has a fit, or the reasons
// each group refused.
func (s *state) bestGroup(in *instState, targets []int32) (*search, []string) {
	var best *search
	var why []string
	for i, g := range targets {
		if best != nil && s.c.Groups[g].AllocPolicy.rank() > s.c.Groups[best.group].AllocPolicy.rank() {
			break // a better policy level already fits
		}
		_ = i
		gname := s.c.Groups[g].Name
		if reason := s.policyViolation(in, g); reason != "" {
			why = append(why, fmt.Sprintf("group %q: %s", gname, reason))
			continue
		}
		x := newSearch(s, *in, g)
		nodes := s.targets(g, nil)
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
			why = append(why, fmt.Sprintf("group %q: %s", gname, s.noPlaceReason(x, g, nodes)))
			continue
		}
		if best == nil || x.best.score <= best.best.score {
			best = x
		}
	}
	return best, why
}

// policyViolation checks an instance against a group's instance policy:
// its storage kind must be allowed and its size within one min/max range.
func (s *state) policyViolation(in *instState, g int32) string {
	pol := &s.c.Groups[g].Policy
	if len(pol.DiskTemplates) > 0 {
		ok := false
		for _, k := range pol.DiskTemplates {
			if k == in.kind {
				ok = true
			}
		}
		if !ok {
			return fmt.Sprintf("storage kind %q is not allowed by the group's instance policy", in.kind)
		}
	}
	if len(pol.MinMax) == 0 {
		return ""
	}
	inst := s.spec(in.idx)
	spec := ISpec{MemorySize: inst.Memory, CPUCount: inst.VCPUs, DiskCount: int64(len(inst.Disks)),
		NICCount: inst.NICs, SpindleUse: inst.SpindleUse}
	var first string
	for _, mm := range pol.MinMax {
		v := specViolation(spec, inst.Disks, mm)
		if v == "" {
			return ""
		}
		if first == "" {
			first = v
		}
	}
	return "outside the group's instance policy: " + first
}

func specViolation(spec ISpec, disks []Disk, mm MinMax) string {
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
	}{
		{"memory-size", spec.MemorySize, mm.Min.MemorySize, mm.Max.MemorySize},
		{"cpu-count", spec.CPUCount, mm.Min.CPUCount, mm.Max.CPUCount},
		{"disk-count", spec.DiskCount, mm.Min.DiskCount, mm.Max.DiskCount},
		{"nic-count", spec.NICCount, mm.Min.NICCount, mm.Max.NICCount},
		{"spindle-use", spec.SpindleUse, mm.Min.SpindleUse, mm.Max.SpindleUse},
	} {
		if v := check(c.name, c.v, c.lo, c.hi); v != "" {
			return v
		}
	}
	for _, d := range disks {
		if v := check("disk-size", d.Size, mm.Min.DiskSize, mm.Max.DiskSize); v != "" {
			return v
		}
	}
	return ""
}
