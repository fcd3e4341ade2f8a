package planner

import (
	"cmp"
	"math"
	"slices"
)

// A change-group compares the best score every target group can reach,
// which costs a search of every node of every group for every instance:
// 5,000 instances into 19 groups of 500 nodes is 10⁸ trials. Most groups
// cannot win, and a lower bound on the score a group can reach, cheap to
// compute, tells which: changeGroup searches the groups in the order of
// their bounds and skips one whose bound is above the best score found.
// The plan is the same as with every group searched (the bound is a true
// lower bound, with a margin for rounding, and ties go to the same group).
//
// The bound: placing an instance in group g changes the books of two of
// its nodes (the new primary and secondary; one for a kind mirrored
// outside the nodes). Each standard-deviation component of the score
// depends on the group's sums, and the change of one node's value x by a
// is, on the sum of squared deviations, 2a(x-mean)+a². With a ranging over
// what the instance does to a node of the group (its size over the node's
// totals, which range over the group) and x over the group's values, each
// node's term has a minimum computed in O(1); the components are bounded
// one by one, and the count components do not decrease (but for nodes
// whose N+1 flag, taken from what they reported, the books would clear).

// groupRange is what a group's bound needs of its usable nodes, kept
// between instances and recomputed when a move lands in the group.
type groupRange struct {
	ok     bool // the bound applies: usable nodes, sane totals
	x      [sdCount][2]float64
	invMem [2]float64 // 1/total memory
	invCPU [2]float64
	invDsk [2]float64 // 1/total disk of nodes without exclusive storage (0 if none)
	invSp  [2]float64 // 1/total spindles of nodes with exclusive storage (0 if none)
	invHi  [2]float64 // 1/spindle limit of nodes without exclusive storage
	excl   bool       // some node has exclusive storage
	plain  bool       // some node has not
	// n1drop is what the N+1 count may lose on two nodes: the largest
	// counts of nodes flagged from their report and clear by the books.
	n1drop float64
}

// widen extends r to v.
func widen(r *[2]float64, v float64, first bool) {
	if first || v < r[0] {
		r[0] = v
	}
	if first || v > r[1] {
		r[1] = v
	}
}

// inv is 1/v, 0 for a zero total (the component is constant then).
func inv(v float64) float64 {
	if v == 0 {
		return 0
	}
	return 1 / v
}

// rangeOf measures group g's usable nodes.
func (s *state) rangeOf(g int32) groupRange {
	var r groupRange
	seen, seenDsk, seenSp := false, false, false
	var top [2]float64
	for _, i := range s.groupNodes[g] {
		n := &s.nodes[i]
		if n.offline {
			continue
		}
		if n.tMem <= 0 || n.tCpu <= 0 || n.hiSp <= 0 {
			return groupRange{}
		}
		c := &s.contribs[i]
		for k := range c.v {
			widen(&r.x[k], c.v[k], !seen)
		}
		widen(&r.invMem, 1/n.tMem, !seen)
		widen(&r.invCPU, 1/n.tCpu, !seen)
		if n.excl {
			widen(&r.invSp, inv(float64(n.tSp)), !seenSp)
			seenSp, r.excl = true, true
		} else {
			widen(&r.invDsk, inv(n.tDsk), !seenDsk)
			widen(&r.invHi, 1/n.hiSp, !seenDsk)
			seenDsk, r.plain = true, true
		}
		if n.failN1 && n.unallocated() > n.rMem {
			if v := c.on[onN1]; v > top[0] {
				top[0], top[1] = v, top[0]
			} else if v > top[1] {
				top[1] = v
			}
		}
		seen = true
	}
	r.ok, r.n1drop = seen, top[0]+top[1]
	return r
}

// span is a range of what a move adds to one node's value of a component.
type span [2]float64

// scaled is c times a range of positive scales.
func scaled(c float64, r [2]float64) span {
	a, b := c*r[0], c*r[1]
	return span{min(a, b), max(a, b)}
}

func hull(a, b span) span { return span{min(a[0], b[0]), max(a[1], b[1])} }

// roleSpans are what the instance adds to each component of the node that
// takes it in one role: primary (new true) or secondary.
func (r *groupRange) roleSpans(in *instState, primary bool) [sdCount]span {
	var sp [sdCount]span
	m := float64(in.mem)
	// Disk: a node without exclusive storage holds a replica of an
	// instance mirrored internally in either role, and a primary's disks
	// when they are local; one with exclusive storage counts the spindles
	// of every instance it takes (spindleDelta).
	var disk span
	if r.plain && (!primary || in.mirror == MirroredInternally || in.localDisk) {
		disk = scaled(-float64(in.dsk), r.invDsk)
		if r.excl {
			disk = hull(disk, scaled(-float64(in.spindles), r.invSp))
		}
	} else if r.excl {
		disk = scaled(-float64(in.spindles), r.invSp)
		if r.plain {
			disk = hull(disk, span{})
		}
	}
	sp[sdFreeDisk] = disk
	var spn span
	if in.localDisk && r.plain {
		spn = scaled(float64(in.spindleUse), r.invHi)
		if r.excl {
			spn = hull(spn, span{})
		}
	}
	sp[sdSpindles] = spn
	sp[sdDiskLoad] = span{1, 1}
	if primary {
		if in.usesMem {
			sp[sdFreeMem] = scaled(-m, r.invMem)
		}
		if in.online {
			sp[sdVCPURatio] = scaled(float64(in.vcpus), r.invCPU)
		}
		sp[sdPrimaryLoad] = span{1, 1}
		sp[sdFreeMemForth] = scaled(-m, r.invMem)
		return sp
	}
	if in.usesSecMem {
		sp[sdReservedMem] = hull(scaled(m, r.invMem), span{})
	}
	return sp
}

// sqLow is the least 2a·d + a² with a in sp and d in [d0, d1]: for a given
// d the best a is -d clamped to sp, and the minimum over d of that concave
// function is at an end.
func sqLow(sp span, d0, d1 float64) float64 {
	at := func(d float64) float64 {
		a := min(max(-d, sp[0]), sp[1])
		return a*a + 2*a*d
	}
	return min(at(d0), at(d1))
}

// lowerBound is a score group g cannot beat once in lands on it, with its
// primary (and, mirrored internally, its secondary) on nodes of the group.
func (s *state) lowerBound(g int32, r *groupRange, in *instState) float64 {
	st := &s.groups[g]
	if !r.ok || st.n < 2 || (r.excl && in.spindles < 0) {
		return math.Inf(-1)
	}
	roles := [][sdCount]span{r.roleSpans(in, true)}
	if in.mirror == MirroredInternally {
		roles = append(roles, r.roleSpans(in, false))
	}
	var score float64
	for i := 0; i < sdCount; i++ {
		mean := st.sum[i] / st.n
		v := st.sq[i]/st.n - mean*mean
		d0, d1 := r.x[i][0]-mean, r.x[i][1]-mean
		var low, sum0, sum1 float64
		for _, sp := range roles {
			low += sqLow(sp[i], d0, d1)
			sum0 += sp[i][0]
			sum1 += sp[i][1]
		}
		shift := max(sum0*sum0, sum1*sum1)
		after := v + (low-shift/st.n)/st.n
		// The search's sums round differently: stay below them by more
		// than their rounding (sqrt magnifies it near zero).
		after -= 1e-12 * (math.Abs(st.sq[i])/st.n + mean*mean + 1)
		if after > 0 {
			score += sdWeights[i] * math.Sqrt(after)
		}
	}
	for i := 0; i < onCount; i++ {
		score += onWeights[i] * st.on[i]
	}
	score -= onWeights[onN1] * r.n1drop
	for i := 0; i < offCount; i++ {
		score += offWeights[i] * st.off[i]
	}
	return score + st.locExcl - 1e-9*(1+math.Abs(score))
}

// groupBounds keeps each target group's range for the bounds of one
// change-group; nil when the bound does not apply (location tags weigh on
// the score in ways it does not follow).
type groupBounds struct {
	ranges []groupRange
	fresh  []bool
}

func (s *state) newGroupBounds() *groupBounds {
	if s.locActive || s.exhaustiveGroups {
		return nil
	}
	return &groupBounds{ranges: make([]groupRange, len(s.c.Groups)), fresh: make([]bool, len(s.c.Groups))}
}

// moved notes that in landed: its groups' ranges are stale.
func (b *groupBounds) moved(s *state, in *instState) {
	if b == nil {
		return
	}
	for _, n := range []int32{in.pri, in.sec} {
		if n != NoNode {
			b.fresh[s.nodes[n].group] = false
		}
	}
}

// order returns the positions lo..hi-1 of targets, by increasing lower
// bound, and the bounds in that order; in target order, with no bound
// (-Inf), without bounds.
func (b *groupBounds) order(s *state, in *instState, targets []int32, lo, hi int) ([]int, []float64) {
	type entry struct {
		at    int
		bound float64
	}
	es := make([]entry, 0, hi-lo)
	for i := lo; i < hi; i++ {
		e := entry{i, math.Inf(-1)}
		if g := targets[i]; b != nil && hi-lo > 1 {
			e.bound = s.lowerBound(g, b.rangeOf(s, g), in)
		}
		es = append(es, e)
	}
	slices.SortStableFunc(es, func(x, y entry) int { return cmp.Compare(x.bound, y.bound) })
	at, bounds := make([]int, len(es)), make([]float64, len(es))
	for k, e := range es {
		at[k], bounds[k] = e.at, e.bound
	}
	return at, bounds
}

// rangeOf is group g's range, measured again if a move landed there
// since; nil without bounds.
func (b *groupBounds) rangeOf(s *state, g int32) *groupRange {
	if b == nil {
		return nil
	}
	if !b.fresh[g] {
		b.ranges[g], b.fresh[g] = s.rangeOf(g), true
	}
	return &b.ranges[g]
}
