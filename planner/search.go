package planner

import "sort"

// candidate is one way to move an instance: its moves, where it ends, and
// the score of the group it ends in.
type candidate struct {
	moves [4]move
	n     int
	score float64
	ok    bool
}

func (c *candidate) list() []move { return c.moves[:c.n] }

func mk(ms ...move) candidate {
	var c candidate
	c.n = copy(c.moves[:], ms)
	return c
}

// search finds the best candidate for one instance. It keeps the reasons
// every refused node gave, for the failure message.
type search struct {
	s      *state
	in     instState // the instance as it is now
	group  int32     // the group whose score decides
	force  bool
	ov     overlay
	best   candidate
	why    reasons
	tried  int
	result instState // the instance after the best candidate
}

func newSearch(s *state, in instState, group int32) *search {
	return &search{s: s, in: in, group: group, force: s.opts.IgnoreSoftErrors}
}

// eval applies c on a fresh overlay and scores it; it does not keep it.
func (x *search) eval(c candidate) (float64, instState, failure) {
	x.tried++
	x.ov.reset()
	in := x.in
	for _, mv := range c.list() {
		if f := x.s.apply(&x.ov, &in, mv, x.force); !f.ok() {
			return 0, in, f
		}
	}
	g := x.s.groups[x.group]
	for k := 0; k < x.ov.n; k++ {
		i := x.ov.idx[k]
		if x.s.nodes[i].group != x.group {
			continue
		}
		g.add(&x.s.nodes[i], -1)
		g.add(&x.ov.ns[k], 1)
	}
	return g.score(), in, failure{}
}

// consider evaluates c and keeps it if it is the best so far. Ties go to
// the later candidate, as in Ganeti, so that both pick the same node when
// scores are equal.
func (x *search) consider(c candidate) {
	score, in, f := x.eval(c)
	if !f.ok() {
		x.why.add(f)
		return
	}
	if x.best.ok && x.best.score < score {
		return
	}
	c.score, c.ok = score, true
	x.best = c
	x.result = in
}

// single tries one move family over a list of target nodes.
func (x *search) single(targets []int32, build func(t int32) candidate) {
	for _, t := range targets {
		x.consider(build(t))
	}
}

// pairs tries a new primary and a new secondary together: the moves
// replace the secondary with tp, fail over to it and replace the old
// primary with ts. With more than 2*k candidates it first ranks each role
// on its own and scores only the k best of each together, widening while
// no pair fits; a group of n nodes thus costs O(n + k²) trials, not O(n²).
func (x *search) pairs(targets []int32, prefix []move) {
	k := x.s.opts.PairCandidates
	if k <= 0 {
		k = DefaultOptions().PairCandidates
	}
	build := func(tp, ts int32) candidate {
		ms := append(append([]move{}, prefix...),
			move{mvReplaceSecondary, tp}, move{mvFailover, 0}, move{mvReplaceSecondary, ts})
		return mk(ms...)
	}
	if len(targets) <= 2*k {
		for _, tp := range targets {
			for _, ts := range targets {
				if tp != ts {
					x.consider(build(tp, ts))
				}
			}
		}
		return
	}
	pri := x.rank(targets, func(t int32) candidate {
		return mk(append(append([]move{}, prefix...), move{mvReplaceSecondary, t}, move{mvFailover, 0})...)
	})
	sec := x.rank(targets, func(t int32) candidate {
		return mk(append(append([]move{}, prefix...), move{mvReplaceSecondary, t})...)
	})
	done := 0
	for width := k; ; width *= 4 {
		np, ns := min(width, len(pri)), min(width, len(sec))
		for a := 0; a < np; a++ {
			for b := 0; b < ns; b++ {
				if a < done && b < done || pri[a] == sec[b] {
					continue
				}
				x.consider(build(pri[a], sec[b]))
			}
		}
		done = width
		if x.best.ok || (np == len(pri) && ns == len(sec)) {
			return
		}
	}
}

// rank scores each target in one role and returns the feasible ones, best
// first. Refusals are kept as reasons.
func (x *search) rank(targets []int32, build func(int32) candidate) []int32 {
	type scored struct {
		node  int32
		score float64
	}
	var ok []scored
	for _, t := range targets {
		score, _, f := x.eval(build(t))
		if !f.ok() {
			x.why.add(f)
			continue
		}
		ok = append(ok, scored{t, score})
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].score < ok[j].score })
	out := make([]int32, len(ok))
	for i, v := range ok {
		out[i] = v.node
	}
	return out
}

// commit applies the chosen candidate to the state for real and returns
// the per-node resource profile of the job that carries it out.
func (s *state) commit(in *instState, c candidate) jobProfile {
	var o overlay
	prof := jobProfile{}
	start := map[int32][2]int64{}
	track := func() {
		for k := 0; k < o.n; k++ {
			i := o.idx[k]
			if _, seen := start[i]; !seen {
				start[i] = usage(&s.nodes[i])
			}
			u := usage(&o.ns[k])
			prof.observe(i, u[0]-start[i][0], u[1]-start[i][1])
		}
	}
	cur := *in
	for _, mv := range c.list() {
		prof.sender(cur.pri)
		if mv.kind == mvFailoverAndReplace {
			prof.sender(cur.sec) // it sends the new replica after the failover
		}
		if f := s.apply(&o, &cur, mv, s.opts.IgnoreSoftErrors); !f.ok() {
			panic("planner: a committed move was refused on replay")
		}
		track()
	}
	for k := 0; k < o.n; k++ {
		i := o.idx[k]
		g := &s.groups[s.nodes[i].group]
		g.add(&s.nodes[i], -1)
		n := o.ns[k]
		n.flushPeers()
		s.nodes[i] = n
		g.add(&s.nodes[i], 1)
	}
	if cur.pri != in.pri {
		commitPriTags(&s.nodes[in.pri], in, false)
		commitPriTags(&s.nodes[cur.pri], in, true)
	}
	*in = cur
	s.insts[in.idx] = cur
	return prof
}

// usage is what a node has given away of its hard capacity: memory for
// running instances and disk.
func usage(n *nodeState) [2]int64 {
	return [2]int64{-n.unallocated(), -n.fDsk}
}
