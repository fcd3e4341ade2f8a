package planner

import "math"

// Ganeti's cluster score ("hbal" prints it as the score of a group) is a
// weighted sum of per-node statistics: standard deviations over the online
// nodes, and counts. Lower is better. Drove scores exactly the components a
// static snapshot determines, with Ganeti's weights; components that are
// identical without dynamic load data or forthcoming instances are merged,
// adding their weights. Location tags are not modelled: their components
// are zero.
//
// The statistics are kept as running sums per group so that a tried move is
// scored by replacing the contribution of the few nodes it touches: O(1) per
// candidate instead of Ganeti's O(nodes), which is what makes Drove's search
// fast on large groups.

// Standard-deviation components, over online nodes.
const (
	sdFreeMem      = iota // free_mem_cv
	sdFreeDisk            // free_disk_cv + free_disk_cv_forth
	sdReservedMem         // reserved_mem_cv
	sdVCPURatio           // vcpu_ratio_cv + vcpu_ratio_cv_forth
	sdPrimaryLoad         // cpu_load_cv + mem_load_cv + net_load_cv
	sdDiskLoad            // disk_load_cv
	sdSpindles            // spindles_cv + spindles_cv_forth
	sdFreeMemForth        // free_mem_cv_forth
	sdCount
)

var sdWeights = [sdCount]float64{0.5, 1, 1, 1, 3, 1, 1, 0.5}

// Sum components over online nodes, and over offline nodes.
const (
	onN1       = iota // n1_cnt
	onTags            // pri_tags_score
	onRtotal          // reserved_mem_rtotal
	onLocation        // location_score
	onCount
)

var onWeights = [onCount]float64{1, 2, 0.25, 1}

const (
	offAll = iota // offline_all_cnt
	offPri        // offline_pri_cnt
	offCount
)

var offWeights = [offCount]float64{4, 16}

// groupStats are the running sums of one group's score.
type groupStats struct {
	n   float64
	sum [sdCount]float64
	sq  [sdCount]float64
	on  [onCount]float64
	off [offCount]float64
	// locExcl is location_exclusion_score (weight 1): it counts pairs over
	// the group's nodes together, so it is kept apart from the per-node
	// sums (location.go).
	locExcl float64
}

// merge adds another group's sums: the cluster score is computed over all
// nodes together, and sums add.
func (g *groupStats) merge(o *groupStats) {
	g.n += o.n
	for i := range g.sum {
		g.sum[i] += o.sum[i]
		g.sq[i] += o.sq[i]
	}
	for i := range g.on {
		g.on[i] += o.on[i]
	}
	for i := range g.off {
		g.off[i] += o.off[i]
	}
	g.locExcl += o.locExcl
}

// contrib is one node's share of its group's sums, kept per node so that
// taking a node out of the sums costs no recomputation.
type contrib struct {
	offline bool
	v       [sdCount]float64
	on      [onCount]float64
	off     [offCount]float64
}

// addContrib adds (sign=1) or removes (sign=-1) a computed contribution.
func (g *groupStats) addContrib(c *contrib, sign float64) {
	if c.offline {
		g.off[offAll] += sign * c.off[offAll]
		g.off[offPri] += sign * c.off[offPri]
		return
	}
	for i, x := range c.v {
		g.sum[i] += sign * x
		g.sq[i] += sign * x * x
	}
	g.n += sign
	for i := range c.on {
		g.on[i] += sign * c.on[i]
	}
}

// contribOf computes a node's contribution.
func contribOf(n *nodeState) contrib {
	c := contrib{offline: n.offline}
	if n.offline {
		c.off[offAll] = float64(n.nPri + n.nSec)
		c.off[offPri] = float64(n.nPri)
		return c
	}
	pRem := float64(n.rMem) / n.tMem
	c.v[sdFreeMem] = n.pMem()
	c.v[sdFreeDisk] = n.pDsk()
	c.v[sdReservedMem] = pRem
	c.v[sdVCPURatio] = float64(n.uCpu) / n.tCpu
	c.v[sdPrimaryLoad] = float64(n.nPri)
	c.v[sdDiskLoad] = float64(n.nPri + n.nSec)
	c.v[sdSpindles] = n.instSp / n.hiSp
	c.v[sdFreeMemForth] = float64(n.fMemForth) / n.tMem
	if n.failN1 {
		c.on[onN1] = float64(n.nPri + n.nSec)
	}
	c.on[onTags] = float64(n.conflicts)
	c.on[onRtotal] = pRem
	c.on[onLocation] = float64(n.locScore)
	return c
}

// add adds (sign=1) or removes (sign=-1) a node's contribution.
func (g *groupStats) add(n *nodeState, sign float64) {
	c := contribOf(n)
	g.addContrib(&c, sign)
}

// swapScore is the score of g with one node's contribution old replaced
// by new: what a copy of g with addContrib(old, -1) and addContrib(new, 1)
// scores, to the same bits, without the copy.
func (g *groupStats) swapScore(old, new *contrib) float64 {
	if old.offline || new.offline {
		t := *g
		t.addContrib(old, -1)
		t.addContrib(new, 1)
		return t.score()
	}
	n := g.n - 1 + 1
	var s float64
	if n > 0 {
		for i := 0; i < sdCount; i++ {
			sum := g.sum[i] + -1*old.v[i] + new.v[i]
			sq := g.sq[i] + -1*old.v[i]*old.v[i] + new.v[i]*new.v[i]
			mean := sum / n
			v := sq/n - mean*mean
			if v > 0 {
				s += sdWeights[i] * math.Sqrt(v)
			}
		}
	}
	for i := 0; i < onCount; i++ {
		s += onWeights[i] * (g.on[i] + -1*old.on[i] + new.on[i])
	}
	for i := 0; i < offCount; i++ {
		s += offWeights[i] * g.off[i]
	}
	return s + g.locExcl
}

func (g *groupStats) score() float64 {
	var s float64
	if g.n > 0 {
		for i := 0; i < sdCount; i++ {
			mean := g.sum[i] / g.n
			v := g.sq[i]/g.n - mean*mean
			if v > 0 {
				s += sdWeights[i] * math.Sqrt(v)
			}
		}
	}
	for i := 0; i < onCount; i++ {
		s += onWeights[i] * g.on[i]
	}
	for i := 0; i < offCount; i++ {
		s += offWeights[i] * g.off[i]
	}
	return s + g.locExcl
}

// exactGroupScore recomputes a group's score from its nodes with two-pass
// standard deviations, free of the rounding a long run of incremental
// updates collects. Reported scores use it.
func (s *state) exactGroupScore(g int) float64 {
	return s.exactScore(s.groupNodes[g]) + s.groups[g].locExcl
}

// exactScore is the score of the nodes listed, as one population, without
// the location-exclusion component (kept per group and per cluster).
func (s *state) exactScore(nodes []int32) float64 {
	var vals [sdCount][]float64
	var on [onCount]float64
	var off [offCount]float64
	for _, i := range nodes {
		n := &s.nodes[i]
		var one groupStats
		one.add(n, 1)
		if n.offline {
			for k := range off {
				off[k] += one.off[k]
			}
			continue
		}
		for k := range on {
			on[k] += one.on[k]
		}
		for k := 0; k < sdCount; k++ {
			vals[k] = append(vals[k], one.sum[k])
		}
	}
	var score float64
	for k := 0; k < sdCount; k++ {
		score += sdWeights[k] * stdDev(vals[k])
	}
	for k := range on {
		score += onWeights[k] * on[k]
	}
	for k := range off {
		score += offWeights[k] * off[k]
	}
	return score
}

func stdDev(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v / float64(len(xs)))
}

// Score returns Ganeti's cluster score of every group of c, in group order,
// and their sum.
func Score(c *Cluster) (total float64, groups []GroupScore, err error) {
	s, err := newState(c, DefaultOptions())
	if err != nil {
		return 0, nil, err
	}
	for g := range c.Groups {
		v := s.exactGroupScore(g)
		total += v
		groups = append(groups, GroupScore{Group: c.Groups[g].Name, Before: v, After: v})
	}
	return total, groups, nil
}

// ClusterScore is Ganeti's cluster score of all nodes of c taken together,
// whatever their group: what hail minimises when it places a new instance.
func ClusterScore(c *Cluster) (float64, error) {
	s, err := newState(c, DefaultOptions())
	if err != nil {
		return 0, err
	}
	var all []int32
	for i := range s.nodes {
		all = append(all, int32(i))
	}
	return s.exactScore(all) + s.lxSpread, nil
}
