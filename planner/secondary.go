package planner

import "fmt"

// allocateSecondary plans an AllocateSecondary request as hail does: the
// instance, on one node today, is taken off its primary and placed again as
// a DRBD instance on that primary and each other node of its group in turn
// (the group's policy checked for DRBD), scored with the whole cluster's
// score; the best that keeps the cluster N+1 redundant gives the new
// secondary. Ganeti converts the disks itself; the plan has no job.
func (s *state) allocateSecondary(r *Request, out *outcome) {
	name := r.Instances[0]
	idx := s.instance(name)
	in := &s.insts[idx]
	if in.sec != NoNode {
		out.fail(name, fmt.Sprintf("it already has a secondary node, %s", s.nodeName(in.sec)))
		return
	}
	// Work on a copy: if no secondary fits, the instance stays as it was.
	t := s.clone()
	if t.allocateSecondaryOn(idx, out) {
		*s = *t
	}
}

// allocateSecondaryOn does the work on a scratch state and reports whether
// a secondary was found.
func (s *state) allocateSecondaryOn(idx int32, out *outcome) bool {
	in := &s.insts[idx]
	name := s.spec(idx).Name
	p, g := in.pri, s.nodes[in.pri].group
	s.unplace(in)
	in.kind, in.mirror, in.localDisk = DRBD, MirroredInternally, true
	spec := *s.spec(idx)
	spec.Storage = DRBD
	var pairs [][2]int32
	for _, n := range s.groupNodes[g] {
		if n != p {
			pairs = append(pairs, [2]int32{p, n})
		}
	}
	x := newSearch(s, *in, wholeCluster)
	fits := s.placements(x, &spec, g, pairs, false)
	for _, i := range rankPlacements(fits, false) {
		if !s.opts.NoCapacityChecks {
			if why := s.capacityFailure(in, fits[i].cand, g); why != "" {
				x.why.add(failure{kind: failCapacity, node: fits[i].cand.moves[1].node, tag: why})
				continue
			}
		}
		s.commit(in, fits[i].cand)
		out.plan.Relocated = []string{s.nodeName(in.sec)}
		out.plan.Hail = hailSolution(fits[i].key, false, len(fits)-x.why.modes[FailN1], x.why.modes,
			[]string{s.nodeName(in.pri), s.nodeName(in.sec)})
		out.plan.Log = append(out.plan.Log, fmt.Sprintf("%s: score %.8f, %d candidates fit, for node(s) %s/%s",
			name, fits[i].key.score, len(fits), s.nodeName(in.pri), s.nodeName(in.sec)))
		return true
	}
	why := "no node of its group can hold its replica"
	if !x.why.empty() {
		why += ": " + x.why.describe(s)
	}
	out.failHail(name, why, x.why.modes.NoSolution())
	return false
}

// unplace takes an instance off its primary in the committed books, as
// if it had never been placed.
func (s *state) unplace(in *instState) {
	p := &s.nodes[in.pri]
	g := &s.groups[p.group]
	g.addContrib(&s.contribs[in.pri], -1)
	s.own(in.pri)
	*p = removePri(*p, in)
	commitPriTags(p, in, false)
	s.locExclAdd(p, in, -1)
	s.contribs[in.pri] = contribOf(p)
	g.addContrib(&s.contribs[in.pri], 1)
	s.capacityChanged(p.group)
	in.pri = NoNode
}
