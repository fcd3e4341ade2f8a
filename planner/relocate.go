package planner

import (
	"fmt"
	"slices"
	"strings"
)

// relocate plans a Relocate request as hail does: an internally mirrored
// instance gets a new secondary in place of the one it names, an instance
// with external or copied storage moves to a new primary; either way within
// its group, on the node with the best group score, never on a node it
// already uses or one that is offline or drained. Failures are listed in
// the plan's Failed with the reason; Ganeti's result then says
// success=false.
func (s *state) relocate(r *Request, out *outcome) {
	name := r.Instances[0]
	in := s.insts[s.instance(name)]
	if reason := s.relocateRefusal(r, &in); reason != "" {
		out.fail(name, reason)
		return
	}
	g := s.nodes[in.pri].group
	evac := map[int32]bool{}
	for _, n := range r.RelocateFrom {
		evac[s.node(n)] = true
	}
	targets := s.targets(g, evac, in.pri, in.sec)
	x := newSearch(s, in, g)
	kind := mvFailoverToAny
	if in.mirror == MirroredInternally {
		kind = mvReplaceSecondary
	}
	x.fast(kind, targets)
	if !x.best.ok {
		out.failHail(name, s.noPlaceReason(x, g, targets), hailNoNode(x))
		return
	}
	out.move(s, &in, x.best)
	out.plan.Relocated = []string{s.nodeName(x.best.moves[0].node)}
}

// relocateRefusal checks what Ganeti's hail checks before relocating.
func (s *state) relocateRefusal(r *Request, in *instState) string {
	if r.RequiredNodes != 1 {
		return fmt.Sprintf("relocating %d nodes at once is not supported; required_nodes must be 1", r.RequiredNodes)
	}
	var want int32
	role := "primary"
	switch in.mirror {
	case NotMirrored:
		return fmt.Sprintf("storage kind %q is not mirrored: its disks exist only on %s, so it cannot be relocated", in.kind, s.nodeName(in.pri))
	case MirroredInternally:
		want, role = in.sec, "secondary"
	default:
		want = in.pri
	}
	if !slices.Equal(r.RelocateFrom, []string{s.nodeName(want)}) {
		return fmt.Sprintf("relocate_from must be exactly the instance's %s [%s], got [%s]", role, s.nodeName(want), strings.Join(r.RelocateFrom, ", "))
	}
	return ""
}
