package planner

import (
	"fmt"
	"strings"
)

// evacuate plans a node-evacuate request: each instance moves within its
// group, off the nodes being emptied.
//
// Where Drove departs from hail, on purpose:
//   - Only the nodes being emptied are excluded as targets. Hail, in mode
//     all, also excludes every other node of the requested instances, so a
//     small group often has no node left.
//   - In primary-only mode an instance whose secondary is itself being
//     emptied (or unusable) gets a new secondary and fails over to it,
//     instead of failing over onto a node that is being emptied.
//   - In mode all, an instance that keeps one good node is offered the cheap
//     move (fail over then replace, or replace the secondary only) besides
//     the full relocation; the cluster score picks.
func (s *state) evacuate(r *Request, evac map[int32]bool, out *outcome) {
	for _, name := range r.Instances {
		idx := s.instance(name)
		in := s.insts[idx]
		g := s.nodes[in.pri].group
		x := newSearch(s, in, g)
		targets := s.targets(g, evac, in.pri, in.sec)
		if reason := s.evacuateOne(x, r.Mode, evac, targets); reason != "" {
			out.fail(name, reason)
			continue
		}
		if !x.best.ok {
			out.failHail(name, s.noPlaceReason(x, g, targets), hailNoNode(x))
			continue
		}
		out.move(s, &in, x.best)
	}
}

// evacuateOne enumerates the candidates for one instance; a non-empty
// result means the instance cannot be moved at all.
func (s *state) evacuateOne(x *search, mode EvacMode, evac map[int32]bool, targets []int32) string {
	in := x.in
	kind := in.kind
	switch in.mirror {
	case NotMirrored:
		return fmt.Sprintf("storage kind %q is not mirrored: its disks exist only on %s, so it cannot be moved off it", kind, s.nodeName(in.pri))
	case MirroredExternally, CopiedOnMove:
		if mode == SecondaryOnly {
			return fmt.Sprintf("storage kind %q has no secondary node to change", kind)
		}
		x.fast(mvFailoverToAny, targets)
		return ""
	}
	P, S := in.pri, in.sec
	secGood := !evac[S] && s.usable(S)
	switch mode {
	case PrimaryOnly:
		if secGood {
			x.consider(mk(move{mvFailover, 0}))
			if x.best.ok {
				return "" // the cheapest move, and the one Ganeti makes
			}
		}
		x.single(targets, func(t int32) candidate { return mk(move{mvReplaceAndFailover, t}) })
	case SecondaryOnly:
		x.fast(mvReplaceSecondary, targets)
	case EvacAll:
		needP := evac[P] || !s.usable(P)
		needS := evac[S] || !secGood
		if !needP && !needS {
			needP, needS = true, true // asked for, though its nodes stay: move it whole
		}
		switch {
		case needP && !needS:
			x.fast(mvFailoverAndReplace, targets)
		case !needP && needS:
			x.fast(mvReplaceSecondary, targets)
		}
		var prefix []move
		if s.c.Nodes[P].Offline && secGood {
			prefix = []move{{mvFailover, 0}} // start it where its data is
		}
		x.pairs(targets, prefix)
	}
	return ""
}

// targets lists the nodes of group g that may receive an instance: usable,
// not being emptied, and not already holding it.
func (s *state) targets(g int32, evac map[int32]bool, holds ...int32) []int32 {
	var out []int32
next:
	for _, i := range s.groupNodes[g] {
		if !s.usable(i) || evac[i] {
			continue
		}
		for _, h := range holds {
			if h == i {
				continue next
			}
		}
		out = append(out, i)
	}
	return out
}

// hailNoNode is hail's sentence for an instance no node of its group
// could take, each node named with the first check it failed.
func hailNoNode(x *search) string {
	if x.why.empty() {
		return "Can't find any good node: no nodes available"
	}
	return "Can't find any good node: " + x.why.hailNodes(x.s)
}

// noPlaceReason explains why no candidate fitted in group g.
func (s *state) noPlaceReason(x *search, g int32, targets []int32) string {
	gname := s.c.Groups[g].Name
	if x.why.empty() {
		need := 1
		if x.in.mirror == MirroredInternally {
			need = 2
		}
		var names []string
		for _, t := range targets {
			names = append(names, s.nodeName(t))
		}
		left := "none"
		if len(names) > 0 {
			left = strings.Join(names, ", ")
		}
		return fmt.Sprintf("no node of group %q can receive it: it needs %d new node(s) and the only ones not being evacuated, offline, drained or already holding it are: %s",
			gname, need, left)
	}
	return fmt.Sprintf("no node of group %q can receive it (memory %d MiB, disk %d MiB, %d vCPUs): %s",
		gname, x.in.mem, x.in.dsk, x.in.vcpus, x.why.describe(s))
}

// inferEvacuated finds the nodes a node-evacuate request empties: those
// whose every instance in the mode's role is in the request.
func (s *state) inferEvacuated(r *Request) map[int32]bool {
	asked := map[int32]bool{}
	for _, name := range r.Instances {
		asked[s.instance(name)] = true
	}
	roles := func(in *instState) []int32 {
		switch r.Mode {
		case PrimaryOnly:
			return []int32{in.pri}
		case SecondaryOnly:
			if in.sec != NoNode {
				return []int32{in.sec}
			}
			return nil
		}
		if in.sec != NoNode {
			return []int32{in.pri, in.sec}
		}
		return []int32{in.pri}
	}
	touched := map[int32]bool{}
	for i := range asked {
		for _, n := range roles(&s.insts[i]) {
			touched[n] = true
		}
	}
	for i := range s.insts {
		if asked[int32(i)] {
			continue
		}
		for _, n := range roles(&s.insts[i]) {
			delete(touched, n)
		}
	}
	return touched
}
