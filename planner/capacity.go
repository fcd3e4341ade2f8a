package planner

import (
	"fmt"
	"slices"
)

// Hail's capacity check ("global N+1"): a new instance may only go where,
// afterwards, every node of the cluster could still be emptied. A node is
// emptied, on a scratch copy of the books and ignoring soft limits, by
// failing its internally mirrored primaries over to their secondaries,
// moving its externally stored primaries to the best other node of its
// group, and recreating the rest (local storage: plain, file, blockdev) on
// the best other node, largest memory first; the recreated copies do not
// free the node. Only hard limits (memory, disk, spindles, the instance
// policy for recreated instances, migration tags) can make it fail.
//
// Placing an instance in one group does not change how the nodes of
// another group are emptied, so each group's verdict is computed once and
// kept until an allocation lands in it. A group that cannot be emptied
// before the allocation is not checked again for every candidate: hail
// would refuse them all.

// capacityFailure says why placing in with c would leave the cluster
// without N+1 redundancy, or "" when it would not.
func (s *state) capacityFailure(in *instState, c candidate, g int32) string {
	for h := range s.c.Groups {
		if why := s.groupCapacity(int32(h)); why != "" {
			return fmt.Sprintf("group %q is already not N+1 redundant: %s", s.c.Groups[h].Name, why)
		}
	}
	t := s.clone()
	tin := t.insts[in.idx]
	t.commit(&tin, c)
	return t.redundancyFailure(g)
}

// groupCapacity is the cached verdict for group g as the books are now.
func (s *state) groupCapacity(g int32) string {
	if s.capacity == nil {
		s.capacity = map[int32]string{}
	}
	why, ok := s.capacity[g]
	if !ok {
		why = s.redundancyFailure(g)
		s.capacity[g] = why
	}
	return why
}

// capacityChanged forgets group g's verdict after a commit there.
func (s *state) capacityChanged(g int32) { delete(s.capacity, g) }

// redundancyFailure says which node of group g could not be emptied.
func (s *state) redundancyFailure(g int32) string {
	for _, n := range s.groupNodes[g] {
		u := s.scratchClone()
		u.opts.IgnoreSoftErrors = true
		if why := u.emptyNode(n); why != "" {
			return fmt.Sprintf("%s could not be emptied: %s", s.nodeName(n), why)
		}
	}
	return ""
}

// movableKind reports whether Ganeti moves instances of kind k to any
// node of the group (diskTemplateMovable) rather than recreating them.
func movableKind(k StorageKind) bool {
	switch k {
	case Diskless, SharedFile, RBD, Ext, Gluster, ZFSLocal:
		return true
	}
	return false
}

// emptyNode simulates emptying node n on s (a scratch copy).
func (s *state) emptyNode(n int32) string {
	g := s.nodes[n].group
	var mirrored, movable, recreate []int32
	// Ganeti lists a node's primaries newest first.
	for i := len(s.insts) - 1; i >= 0; i-- {
		in := &s.insts[i]
		switch {
		case in.pri != n:
		case in.mirror == MirroredInternally:
			mirrored = append(mirrored, int32(i))
		case movableKind(in.kind):
			movable = append(movable, int32(i))
		default:
			recreate = append(recreate, int32(i))
		}
	}
	for _, i := range mirrored {
		in := s.insts[i]
		x := newSearch(s, in, g)
		c := mk(move{mvFailover, 0})
		if _, _, f := x.eval(c); !f.ok() {
			x.why.add(f)
			return fmt.Sprintf("%s cannot fail over: %s", s.spec(i).Name, x.why.describe(s))
		}
		s.commit(&in, c)
	}
	others := s.groupNodesExcept(g, n)
	for _, i := range movable {
		in := s.insts[i]
		x := newSearch(s, in, g)
		x.fast(mvFailoverToAny, others)
		if !x.best.ok {
			if len(others) == 0 {
				return fmt.Sprintf("%s fits on no other node: its group has no other node", s.spec(i).Name)
			}
			return fmt.Sprintf("%s fits on no other node: %s", s.spec(i).Name, x.why.describe(s))
		}
		s.commit(&in, x.best)
	}
	slices.SortStableFunc(recreate, func(a, b int32) int { return int(s.insts[b].mem - s.insts[a].mem) })
	for _, i := range recreate {
		// The copy has the original's index: a scratch state does not
		// record it, and nothing reads the original's record again.
		cp := s.newInstState(s.spec(i), i)
		x := newSearch(s, cp, wholeCluster)
		for _, t := range others {
			if v, m := placementPolicyViolation(s.spec(i), &s.c.Groups[g].Policy, s.nodes[t].excl); v != "" {
				x.why.add(failure{kind: failPolicy, node: t, tag: v, pmode: m})
				continue
			}
			x.consider(mk(move{mvPlace, t}))
		}
		if !x.best.ok {
			if len(others) == 0 {
				return fmt.Sprintf("%s cannot be recreated elsewhere: its group has no other node", s.spec(i).Name)
			}
			return fmt.Sprintf("%s cannot be recreated elsewhere: %s", s.spec(i).Name, x.why.describe(s))
		}
		s.commit(&cp, x.best)
	}
	return ""
}

// groupNodesExcept lists every node of group g but n, usable or not, as
// hail's capacity check does.
func (s *state) groupNodesExcept(g, n int32) []int32 {
	out := make([]int32, 0, len(s.groupNodes[g]))
	for _, i := range s.groupNodes[g] {
		if i != n {
			out = append(out, i)
		}
	}
	return out
}
