package planner

import (
	"math"
	"slices"
)

// Within a group, a change-group's search ranks every node as the new
// primary and as the new secondary (search.pairs), then scores the best
// pairs. Only the best few of each role matter, and a lower bound on a
// node's score, linear in what the move changes and cheaper than trying
// it, skips the nodes that cannot be among them, and the pairs that
// cannot beat the best pair found. The bound is the group bound of
// groupbound.go made exact per node: a node's change of each component's
// variance is known from its own value and totals, and each component's
// square root lies above its chord over every change the group allows.
// The chosen nodes and pairs are the ones the whole search chooses.

// nodeRole is how a move changes the node that takes the instance.
type nodeRole uint8

const (
	roleAddPri  nodeRole = iota // added as a primary (addPri)
	roleAddSec                  // added as a secondary (addSec)
	rolePairPri                 // the new primary of a pair move: it held the replica first
)

// linear bounds a group's score after one or two of its nodes take an
// instance: a chord's base + Σ k[i]·raw[i] + the change of the N+1 count,
// where raw is n times the change of component i's variance and the
// chord, below the square root over the range of raw it was built for,
// turns it into score. The group's chord covers every move the group's
// ranges allow; searches build tighter ones for the moves they weigh.
type linear struct {
	ok    bool
	n, c  float64 // the group's online nodes, and 1-1/n
	mean  [sdCount]float64
	v     [sdCount]float64 // each component's variance, less its rounding
	rest  float64          // the components that are not deviations
	group chord
	in    *instState
}

// chord is the deviations' part of a linear bound.
type chord struct {
	base float64
	k    [sdCount]float64
}

// newLinear is the bound for in's moves into group g, whose nodes r
// describes; not ok when the bound does not apply.
func (s *state) newLinear(g int32, r *groupRange, in *instState) linear {
	st := &s.groups[g]
	if r == nil || !r.ok || st.n < 2 || (r.excl && in.spindles < 0) || s.locActive {
		return linear{}
	}
	l := linear{ok: true, n: st.n, c: 1 - 1/st.n, in: in}
	pair, sec := r.roleSpans(in, true), r.roleSpans(in, false)
	single := pair
	single[sdFreeDisk] = hull(single[sdFreeDisk], span{}) // a lone primary may hold no disk
	var low, high [sdCount]float64
	for i := 0; i < sdCount; i++ {
		mean := st.sum[i] / st.n
		eps := 1e-12 * (math.Abs(st.sq[i])/st.n + mean*mean + 1)
		l.mean[i], l.v[i] = mean, st.sq[i]/st.n-mean*mean-eps
		d0, d1 := r.x[i][0]-mean, r.x[i][1]-mean
		amax := func(sp span) float64 { return max(sp[0]*sp[0], sp[1]*sp[1]) }
		sum0, sum1 := pair[i][0]+sec[i][0], pair[i][1]+sec[i][1]
		low[i] = min(sqLow(single[i], d0, d1)-amax(single[i])/st.n, sqLow(sec[i], d0, d1)-amax(sec[i])/st.n,
			sqLow(pair[i], d0, d1)+sqLow(sec[i], d0, d1)-max(sum0*sum0, sum1*sum1)/st.n)
		high[i] = max(sqHigh(single[i], d0, d1), sqHigh(sec[i], d0, d1), sqHigh(pair[i], d0, d1)+sqHigh(sec[i], d0, d1))
	}
	for i := 0; i < onCount; i++ {
		l.rest += onWeights[i] * st.on[i]
	}
	for i := 0; i < offCount; i++ {
		l.rest += offWeights[i] * st.off[i]
	}
	l.rest += st.locExcl
	l.group = l.chord(&low, &high)
	return l
}

// chord builds the bound's deviations for raw changes within [low, high].
// On an interval the square root is above its chord; the variance after
// the move, less the rounding, is in the interval.
func (l *linear) chord(low, high *[sdCount]float64) chord {
	var c chord
	for i := 0; i < sdCount; i++ {
		lo := max(l.v[i]+low[i]/l.n, 0)
		hi := max(l.v[i]+high[i]/l.n, lo)
		slope := 0.0
		if hi > lo {
			slope = (math.Sqrt(hi) - math.Sqrt(lo)) / (hi - lo)
		}
		c.base += sdWeights[i] * (math.Sqrt(lo) + slope*(l.v[i]-lo))
		c.k[i] = sdWeights[i] * slope / l.n
	}
	c.base += l.rest
	c.base -= 1e-9 * (1 + math.Abs(c.base))
	return c
}

// sqHigh is the most 2a·d + a² with a in sp and d in [d0, d1]: a convex
// function of a and linear in d, largest at a corner.
func sqHigh(sp span, d0, d1 float64) float64 {
	at := func(a, d float64) float64 { return a*a + 2*a*d }
	return max(at(sp[0], d0), at(sp[0], d1), at(sp[1], d0), at(sp[1], d1))
}

// nodeTerms is one node's part of a bound: raw per component (the least
// where the change is a range), the most of the reservation's range, what
// the instance adds to each component (a; 0 where it is a range), and the
// change of the N+1 count.
type nodeTerms struct {
	raw   [sdCount]float64
	resHi float64
	a     [sdCount]float64
	n1    float64
}

// inverses are a node's totals inverted once (a bound multiplies by
// them for every node of a group for every instance); 0 for a total of 0,
// where the component does not change.
type inverses struct {
	mem, cpu, dsk, sp, hi float64
}

func inverseOf(n *nodeState) inverses {
	v := inverses{mem: inv(n.tMem), cpu: inv(n.tCpu), dsk: inv(n.tDsk), hi: inv(n.hiSp)}
	if n.excl {
		v.sp = inv(float64(n.tSp))
	}
	return v
}

// terms computes node t's terms in role.
func (l *linear) terms(s *state, t int32, role nodeRole) nodeTerms {
	n, c, in, iv := &s.nodes[t], &s.contribs[t], l.in, &s.inverses[t]
	var a [sdCount]float64
	primary := role != roleAddSec
	switch {
	case n.excl:
		a[sdFreeDisk] = -float64(in.spindles) * iv.sp
	case !primary || role == rolePairPri || in.localDisk:
		a[sdFreeDisk] = -float64(in.dsk) * iv.dsk
	}
	if in.localDisk && !n.excl {
		a[sdSpindles] = float64(in.spindleUse) * iv.hi
	}
	a[sdDiskLoad] = 1
	var t0 nodeTerms
	if primary {
		if in.usesMem {
			a[sdFreeMem] = -float64(in.mem) * iv.mem
		}
		if in.online {
			a[sdVCPURatio] = float64(in.vcpus) * iv.cpu
		}
		a[sdPrimaryLoad] = 1
		a[sdFreeMemForth] = -float64(in.mem) * iv.mem
		free := n.unallocated()
		if in.usesMem {
			free -= in.mem
		}
		if free <= n.rMem {
			t0.n1 = float64(n.nPri + 1 + n.nSec)
		}
	} else if n.unallocated() <= n.rMem {
		// The reservation only grows: flagged now, flagged after.
		t0.n1 = float64(n.nPri + n.nSec + 1)
	}
	t0.n1 -= c.on[onN1]
	for i := 0; i < sdCount; i++ {
		d := c.v[i] - l.mean[i]
		t0.raw[i] = 2*a[i]*d + a[i]*a[i]*l.c
	}
	t0.resHi = t0.raw[sdReservedMem]
	if !primary && in.usesSecMem {
		// The reservation grows by 0 to the instance's memory: the least
		// and the most change over that range.
		d := c.v[sdReservedMem] - l.mean[sdReservedMem]
		top := float64(in.mem) * iv.mem
		r := min(max(-d/l.c, 0), top)
		t0.raw[sdReservedMem] = 2*r*d + r*r*l.c
		t0.resHi = max(0, 2*top*d+top*top*l.c)
	}
	t0.a = a
	return t0
}

// span widens [low, high] to a node's or a pair's raw changes.
func (t *nodeTerms) span(low, high *[sdCount]float64, first bool) {
	for i := 0; i < sdCount; i++ {
		hi := t.raw[i]
		if i == sdReservedMem {
			hi = t.resHi
		}
		if first || t.raw[i] < low[i] {
			low[i] = t.raw[i]
		}
		if first || hi > high[i] {
			high[i] = hi
		}
	}
}

// one is the bound for one node's terms on chord c.
func (l *linear) one(c *chord, t *nodeTerms) float64 {
	b := c.base + onWeights[onN1]*t.n1
	for i := 0; i < sdCount; i++ {
		b += c.k[i] * t.raw[i]
	}
	return b
}

// pairTerms are a new primary's terms p and a new secondary's q together.
func (l *linear) pairTerms(p, q *nodeTerms) nodeTerms {
	var t nodeTerms
	for i := 0; i < sdCount; i++ {
		t.raw[i] = p.raw[i] + q.raw[i] - 2*p.a[i]*q.a[i]/l.n
	}
	t.resHi = p.raw[sdReservedMem] + q.resHi // the primary's reservation is unchanged (a is 0)
	t.n1 = p.n1 + q.n1
	return t
}

// topPairs is pairs' first round with the bounds: the k best nodes of each
// role, found without trying the nodes that cannot be among them, and
// their pairs but those that cannot beat the best found. It reports
// whether a pair fitted; if none did, the reasons are dropped and pairs
// goes on as without bounds (the nodes skipped here may fit).
func (x *search) topPairs(targets []int32, k int, build func(tp, ts int32) candidate) bool {
	s := x.s
	pri := x.rankTop(mvFailoverToAny, roleAddPri, targets, k, s.buf.pri)
	s.buf.pri = pri
	sec := x.rankTop(mvReplaceSecondary, roleAddSec, targets, k, s.buf.sec)
	s.buf.sec = sec
	ps, qs := s.buf.priTerms[:0], s.buf.secTerms[:0]
	for _, t := range pri {
		ps = append(ps, x.lin.terms(s, t, rolePairPri))
	}
	for _, t := range sec {
		qs = append(qs, x.lin.terms(s, t, roleAddSec))
	}
	s.buf.priTerms, s.buf.secTerms = ps, qs
	pairs := s.buf.terms[:0]
	var low, high [sdCount]float64
	for a := range pri {
		for b := range sec {
			t := x.lin.pairTerms(&ps[a], &qs[b])
			t.span(&low, &high, len(pairs) == 0)
			pairs = append(pairs, t)
		}
	}
	s.buf.terms = pairs
	ch := x.lin.chord(&low, &high)
	for a := range pri {
		for b := range sec {
			if pri[a] == sec[b] {
				continue
			}
			if x.best.ok && x.lin.one(&ch, &pairs[a*len(sec)+b]) > x.best.score {
				continue // cannot beat the best pair found
			}
			x.consider(build(pri[a], sec[b]))
		}
	}
	if x.best.ok {
		return true
	}
	x.why = reasons{}
	return false
}

// rankTop is rankFast's first limit nodes, best first, ties in target
// order. The nodes with the 2·limit lowest bounds are tried first; then,
// in target order, every node whose bound is not above the limit-th best
// score found so far.
func (x *search) rankTop(kind moveKind, role nodeRole, targets []int32, limit int, out []int32) []int32 {
	s := x.s
	terms := s.buf.terms[:0]
	var low, high [sdCount]float64
	for k, t := range targets {
		tm := x.lin.terms(s, t, role)
		tm.span(&low, &high, k == 0)
		terms = append(terms, tm)
	}
	s.buf.terms = terms
	ch := x.lin.chord(&low, &high)
	lbs := s.buf.lb[:0]
	for k := range terms {
		lbs = append(lbs, x.lin.one(&ch, &terms[k]))
	}
	s.buf.lb = lbs
	// The positions of the 2·limit lowest bounds, lowest first.
	seeds := s.buf.seeds[:0]
	for k, v := range lbs {
		i := len(seeds)
		for i > 0 && lbs[seeds[i-1]] > v {
			i--
		}
		if i == 2*limit {
			continue
		}
		if len(seeds) == 2*limit {
			seeds = seeds[:len(seeds)-1]
		}
		seeds = slices.Insert(seeds, i, k)
	}
	s.buf.seeds = seeds
	top := s.buf.top[:0]
	add := func(k int, score float64) {
		i := len(top)
		for i > 0 && (top[i-1].score > score || top[i-1].score == score && top[i-1].pos > k) {
			i--
		}
		if i == limit {
			return
		}
		if len(top) == limit {
			top = top[:limit-1]
		}
		top = slices.Insert(top, i, ranked{k, score})
	}
	sub := s.buf.sub[:0]
	for _, k := range seeds {
		sub = append(sub, targets[k])
	}
	s.buf.sub = sub
	x.eachFast(kind, sub, nil, func(j int, score float64) { add(seeds[j], score) })
	seeded := s.buf.seeded[:0]
	for range targets {
		seeded = append(seeded, false)
	}
	for _, k := range seeds {
		seeded[k] = true
	}
	s.buf.seeded = seeded
	if len(top) == limit {
		// The nodes left to try are those whose bound is not above the
		// limit-th best: a chord over their changes alone is closer to
		// the square root, and their bounds on it tighter.
		var low, high [sdCount]float64
		first := true
		for k := range terms {
			if !seeded[k] && lbs[k] <= top[limit-1].score {
				terms[k].span(&low, &high, first)
				first = false
			}
		}
		if !first {
			tight := x.lin.chord(&low, &high)
			for k := range terms {
				if !seeded[k] && lbs[k] <= top[limit-1].score {
					lbs[k] = max(lbs[k], x.lin.one(&tight, &terms[k]))
				}
			}
		}
	}
	x.eachFast(kind, targets, func(k int) bool {
		return seeded[k] || len(top) == limit && lbs[k] > top[limit-1].score
	}, add)
	s.buf.top = top
	out = out[:0]
	for _, r := range top {
		out = append(out, targets[r.pos])
	}
	return out
}

// ranked is a target's position and score.
type ranked struct {
	pos   int
	score float64
}
