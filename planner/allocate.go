package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// allocate plans Allocate and MultiAllocate requests the way hail does:
// each new instance in turn, every group tried (or only the one named),
// every online node of a group tried as primary (and every other one as
// secondary when two nodes are needed), each candidate refused with a
// reason if a node check or the group's instance policy fails and scored
// with the cluster score over all nodes. Within a group the best score
// wins that still leaves the cluster N+1 redundant (capacity.go); across
// groups, preferred groups beat last-resort ones, then the lower score
// wins. Ties go to the later candidate and the later group, as in hail.
// A placed instance is committed before the next is tried.
//
// Where Drove departs from hail: a multi-allocate whose instance fits
// nowhere lists that instance as failed and goes on with the others;
// hail fails the whole request.
func (s *state) allocate(r *Request, out *outcome) {
	dedicated := s.dedicated(requestGroup(r))
	for i := range r.New {
		s.allocateOne(&r.New[i], dedicated, out)
	}
}

// placement is one feasible candidate for a new instance.
type placement struct {
	cand  candidate
	key   allocKey
	order int // generation order: ties go to the later one
}

// allocKey orders placements: the cluster score, or on dedicated clusters
// hail's lost-allocations metric (dedicated.go).
type allocKey struct {
	score float64
	lost  []int
	disk  int64
}

func (a allocKey) compare(b allocKey, dedicated bool) int {
	if !dedicated {
		return cmp.Compare(a.score, b.score)
	}
	if c := slices.Compare(a.lost, b.lost); c != 0 {
		return c
	}
	return cmp.Compare(a.disk, b.disk)
}

// groupResult is the best placement in one group, or why there is none.
type groupResult struct {
	group int32
	best  *placement
	log   string
	hail  string // the same in hail's words
}

func (s *state) allocateOne(ni *NewInstance, dedicated bool, out *outcome) {
	in := s.addInstance(ni.Instance)
	name := ni.Instance.Name
	var best *groupResult
	var log, unconnected, hail []string
	for _, g := range s.allocGroups(ni) {
		gname := s.c.Groups[g].Name
		if net := missingNetwork(&s.c.Groups[g], ni.Networks); net != "" {
			log = append(log, fmt.Sprintf("group %q is not connected to network %q", gname, net))
			unconnected = append(unconnected, fmt.Sprintf("group %s is not connected to a network required by instance %s", gname, name))
			continue
		}
		res := s.allocInGroup(in, g, ni, dedicated)
		log = append(log, res.log)
		hail = append(hail, res.hail)
		if res.best == nil || (ni.Group == "" && s.c.Groups[g].AllocPolicy == Unallocable) {
			continue
		}
		if best == nil || s.groupBetter(&res, best, dedicated) {
			r := res
			best = &r
		}
	}
	// hail lists the groups refused for their networks first.
	hail = append(unconnected, hail...)
	if best == nil {
		if len(log) == 0 {
			log = append(log, "no node group has nodes")
			hail = append(hail, "no node group has nodes")
		}
		out.failHail(name, "no group can receive it: "+strings.Join(log, "; "), strings.Join(hail, ", "))
		return
	}
	if ni.Group == "" {
		hail = append([]string{"Selected group: " + s.c.Groups[best.group].Name}, hail...)
	}
	out.plan.Log = append(out.plan.Log, fmt.Sprintf("%s: selected group %q", name, s.c.Groups[best.group].Name))
	out.plan.Log = append(out.plan.Log, log...)
	s.commit(in, best.best.cand)
	s.capacityChanged(best.group)
	nodes := []string{s.nodeName(in.pri)}
	if in.sec != NoNode {
		nodes = append(nodes, s.nodeName(in.sec))
	}
	out.plan.Allocated = append(out.plan.Allocated, Allocated{Instance: name, Group: s.c.Groups[best.group].Name, Nodes: nodes,
		Hail: strings.Join(hail, ", ")})
}

// groupBetter reports whether a beats b: a better allocation policy, then
// a better key; on a tie the later group (a) wins, as in hail.
func (s *state) groupBetter(a, b *groupResult, dedicated bool) bool {
	ra, rb := s.c.Groups[a.group].AllocPolicy.rank(), s.c.Groups[b.group].AllocPolicy.rank()
	if ra != rb {
		return ra < rb
	}
	return a.best.key.compare(b.best.key, dedicated) <= 0
}

// allocGroups lists the groups to try: the named one, or every group that
// has nodes, in snapshot order.
func (s *state) allocGroups(ni *NewInstance) []int32 {
	if ni.Group != "" {
		return []int32{int32(s.c.GroupIndex(ni.Group))}
	}
	var out []int32
	for g := range s.c.Groups {
		if len(s.groupNodes[g]) > 0 {
			out = append(out, int32(g))
		}
	}
	return out
}

func missingNetwork(g *Group, nets []string) string {
	for _, n := range nets {
		if !slices.Contains(g.Networks, n) {
			return n
		}
	}
	return ""
}

// allocNodes lists the online nodes of group g the instance may use.
func (s *state) allocNodes(g int32, restrict []string) []int32 {
	var out []int32
	for _, i := range s.groupNodes[g] {
		if !s.usable(i) {
			continue
		}
		if len(restrict) > 0 && !slices.Contains(restrict, s.nodeName(i)) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// allocInGroup finds the best placement of in within group g.
func (s *state) allocInGroup(in *instState, g int32, ni *NewInstance, dedicated bool) groupResult {
	res := groupResult{group: g}
	head := fmt.Sprintf("group %q (%s)", s.c.Groups[g].Name, s.c.Groups[g].AllocPolicy)
	nodes := s.allocNodes(g, ni.RestrictToNodes)
	if len(nodes) == 0 || (ni.RequiredNodes == 2 && len(nodes) < 2) {
		res.log = head + ": not enough online nodes"
		res.hail = fmt.Sprintf("Group %s: error No online nodes", s.c.Groups[g].Name)
		return res
	}
	x := newSearch(s, *in, wholeCluster)
	var pairs [][2]int32
	for _, p := range nodes {
		if ni.RequiredNodes != 2 {
			pairs = append(pairs, [2]int32{p, NoNode})
			continue
		}
		for _, sn := range nodes {
			if sn != p {
				pairs = append(pairs, [2]int32{p, sn})
			}
		}
	}
	fits := s.placements(x, s.spec(in.idx), g, pairs, dedicated)
	for _, i := range rankPlacements(fits, dedicated) {
		if !dedicated && !s.opts.NoCapacityChecks {
			if why := s.capacityFailure(in, fits[i].cand, g); why != "" {
				x.why.add(failure{kind: failCapacity, node: fits[i].cand.moves[0].node, tag: why})
				continue
			}
		}
		res.best = &fits[i]
		break
	}
	hhead := fmt.Sprintf("Group %s (%s): ", s.c.Groups[g].Name, s.c.Groups[g].AllocPolicy)
	if res.best == nil {
		res.log = head + ": nothing fits"
		if !x.why.empty() {
			res.log += ": " + x.why.describe(s)
		}
		res.hail = hhead + x.why.modes.NoSolution()
		return res
	}
	var names []string
	for _, mv := range res.best.cand.list() {
		names = append(names, s.nodeName(mv.node))
	}
	what := fmt.Sprintf("score %.8f", res.best.key.score)
	if dedicated {
		what = fmt.Sprintf("lost allocations %v, free disk %d MiB", res.best.key.lost, res.best.key.disk)
	}
	res.log = fmt.Sprintf("%s: %s, %d candidates fit, for node(s) %s", head, what, len(fits), strings.Join(names, "/"))
	res.hail = hhead + hailSolution(res.best.key, dedicated, len(fits)-x.why.modes[FailN1], x.why.modes, names)
	return res
}

// hailSolution is hail's description of a group's best placement: its
// metric, the candidates that passed and those refused, by mode.
func hailSolution(k allocKey, dedicated bool, successes int, fails FailCounts, nodes []string) string {
	metric := fmt.Sprintf("%.8f", k.score)
	if dedicated {
		lost := make([]string, len(k.lost))
		for i, l := range k.lost {
			lost[i] = fmt.Sprint(l)
		}
		metric = fmt.Sprintf("([%s],%d)", strings.Join(lost, ","), k.disk)
	}
	return fmt.Sprintf("score: %s, successes %d, failures %d (%s) for node(s) %s",
		metric, successes, fails.Total(), fails, strings.Join(nodes, "/"))
}

// placements tries x's instance (described by spec) on each primary and
// secondary (NoNode: none) of the list and returns the feasible
// placements, in the order tried. Refusals become x's reasons.
func (s *state) placements(x *search, spec *Instance, g int32, pairs [][2]int32, dedicated bool) []placement {
	pol := &s.c.Groups[g].Policy
	var tests []instState
	if dedicated {
		tests = s.testInstances(pol)
	}
	var fits []placement
	try := func(c candidate, p int32) {
		if v, m := placementPolicyViolation(spec, pol, s.nodes[p].excl); v != "" {
			x.why.add(failure{kind: failPolicy, node: p, tag: v, pmode: m})
			return
		}
		score, _, f := x.eval(c)
		if !f.ok() {
			x.why.add(f)
			return
		}
		key := allocKey{score: score}
		if dedicated {
			key = s.lostAllocations(&x.ov, tests)
		}
		fits = append(fits, placement{cand: c, key: key, order: len(fits)})
	}
	for _, ps := range pairs {
		if ps[1] == NoNode {
			try(mk(move{mvPlace, ps[0]}), ps[0])
		} else {
			try(mk(move{mvPlace, ps[0]}, move{mvPlaceSecondary, ps[1]}), ps[0])
		}
	}
	return fits
}

// rankPlacements orders placements best first; ties put the later
// candidate first, as hail does. It sorts indices: a large group has a
// million pairs, and moving the placements themselves costs more than
// trying them.
func rankPlacements(fits []placement, dedicated bool) []int32 {
	idx := make([]int32, len(fits))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := fits[a].key.compare(fits[b].key, dedicated); c != 0 {
			return c
		}
		return int(b - a)
	})
	return idx
}
