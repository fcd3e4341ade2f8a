package planner

import (
	"cmp"
	"slices"
	"sort"
)

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
	// lin, when ok, bounds the score of the instance's moves into the
	// search's group from below (nodebound.go): a change-group's
	// searches skip the nodes and pairs that cannot win.
	lin linear
}

// wholeCluster, as a search's group, scores moves with the cluster score
// of all nodes together, as hail does for allocations.
const wholeCluster int32 = -1

// scores reports whether nodes of group g count in the search's score.
func (x *search) scores(g int32) bool { return x.group == wholeCluster || g == x.group }

// scopeStats returns the score sums of group g, or of the whole cluster.
func (s *state) scopeStats(g int32) groupStats {
	if g != wholeCluster {
		return s.groups[g]
	}
	var t groupStats
	for i := range s.groups {
		t.merge(&s.groups[i])
	}
	t.locExcl = s.lxSpread
	return t
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
	g := x.s.scopeStats(x.group)
	for k := 0; k < x.ov.n; k++ {
		i := x.ov.idx[k]
		if !x.scores(x.s.nodes[i].group) {
			continue
		}
		g.addContrib(&x.s.contribs[i], -1)
		g.add(&x.ov.ns[k], 1)
	}
	if in.pri != x.in.pri {
		g.locExcl += x.s.locExclDelta(&in, x.s.books(x.in.pri), x.s.books(in.pri), x.group)
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
	k := x.s.pairCandidates()
	build := func(tp, ts int32) candidate {
		var c candidate
		c.n = copy(c.moves[:], prefix)
		c.n += copy(c.moves[c.n:], []move{{mvReplaceSecondary, tp}, {mvFailover, 0}, {mvReplaceSecondary, ts}})
		return c
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
	if x.lin.ok && len(prefix) == 0 && x.topPairs(targets, k, build) {
		return
	}
	var pri, sec []int32
	if len(prefix) == 0 {
		// Rank the new primary as if the instance moved there alone, and
		// the new secondary as a replaced secondary: exact for each role
		// on its own, and one node's books per target.
		pri = x.rankFast(mvFailoverToAny, targets, k, x.s.buf.pri)
		sec = x.rankFast(mvReplaceSecondary, targets, k, x.s.buf.sec)
		x.s.buf.pri, x.s.buf.sec = pri, sec
	} else {
		pri = x.rank(targets, func(t int32) candidate {
			return mk(append(append([]move{}, prefix...), move{mvReplaceSecondary, t}, move{mvFailover, 0})...)
		})
		sec = x.rank(targets, func(t int32) candidate {
			return mk(append(append([]move{}, prefix...), move{mvReplaceSecondary, t})...)
		})
	}
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

// pairCandidates is Options.PairCandidates or its default.
func (s *state) pairCandidates() int {
	if s.opts.PairCandidates > 0 {
		return s.opts.PairCandidates
	}
	return DefaultOptions().PairCandidates
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
		if cur.pri != NoNode {
			prof.sender(cur.pri)
		}
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
		g.addContrib(&s.contribs[i], -1)
		s.own(i)
		n := o.ns[k]
		// The trial copy was taken before own: write the node's own maps.
		n.peers, n.tags = s.nodes[i].peers, s.nodes[i].tags
		n.flushPeers()
		s.nodes[i] = n
		s.contribs[i] = contribOf(&s.nodes[i])
		g.addContrib(&s.contribs[i], 1)
	}
	if cur.pri != in.pri {
		if in.pri != NoNode {
			s.own(in.pri)
			commitPriTags(&s.nodes[in.pri], in, false)
			s.locExclAdd(&s.nodes[in.pri], in, -1)
		}
		s.own(cur.pri)
		commitPriTags(&s.nodes[cur.pri], in, true)
		s.locExclAdd(&s.nodes[cur.pri], &cur, 1)
	}
	*in = cur
	if !s.scratch {
		s.insts[in.idx] = cur
	}
	return prof
}

// usage is what a node has given away of its hard capacity: memory for
// running instances and disk.
func usage(n *nodeState) [2]int64 {
	return [2]int64{-n.unallocated(), -n.fDsk}
}

// fast tries a one-target move family whose effect splits into a part that
// does not depend on the target (taking the instance off its old nodes),
// applied once, and the target's own change: each target then costs one
// node's books and one score update instead of a fresh overlay. It chooses
// exactly what single would (same order, same tie rule); on a group of
// thousands of nodes it is what keeps an evacuation under a second.
func (x *search) fast(kind moveKind, targets []int32) {
	var skip func(k int) bool
	if x.lin.ok && kind == mvFailoverToAny {
		// A target whose bound is above the best found cannot win.
		skip = func(k int) bool {
			if !x.best.ok {
				return false
			}
			tm := x.lin.terms(x.s, targets[k], roleAddPri)
			return x.lin.one(&x.lin.group, &tm) > x.best.score
		}
	}
	after := x.eachFast(kind, targets, skip, func(k int, score float64) {
		if x.best.ok && x.best.score < score {
			return
		}
		x.best = mk(move{kind, targets[k]})
		x.best.score, x.best.ok = score, true
	})
	if x.best.ok {
		x.result = after(x.best.moves[0].node)
	}
}

// eachFast calls fn with the position in targets and the score of every
// target that accepts the move, but those skip (if not nil) skips;
// refusals become reasons. It returns what the instance is after the move
// to a target that accepted it.
func (x *search) eachFast(kind moveKind, targets []int32, skip func(k int) bool, fn func(k int, score float64)) func(t int32) instState {
	s := x.s
	if s.locActive {
		// A new node changes the instance's location score on its
		// primary, which the split below does not see: try each target
		// whole.
		for k, t := range targets {
			if skip != nil && skip(k) {
				continue
			}
			score, _, f := x.eval(mk(move{kind, t}))
			if !f.ok() {
				x.why.add(f)
				continue
			}
			fn(k, score)
		}
		return func(t int32) instState {
			_, in, _ := x.eval(mk(move{kind, t}))
			return in
		}
	}
	x.ov.reset()
	in := x.in
	P, S := in.pri, in.sec
	strictP := !(s.nodes[P].offline || x.force)
	var target func(n nodeState) (nodeState, failure)
	after := in
	switch kind {
	case mvFailoverToAny:
		p := x.ov.node(s, P)
		*p = removePri(*p, &in)
		target = func(n nodeState) (nodeState, failure) {
			if f := s.migrationRefusal(P, n.idx); !f.ok() {
				return n, f
			}
			return addPri(n, &in, strictP)
		}
	case mvReplaceSecondary:
		strictS := !(s.nodes[S].offline || x.force)
		q := x.ov.node(s, S)
		*q = removeSec(*q, &in, P)
		target = func(n nodeState) (nodeState, failure) { return addSec(n, &in, P, strictS, false) }
	case mvFailoverAndReplace:
		if f := s.migrationRefusal(P, S); !f.ok() {
			x.why.add(f)
			return nil
		}
		p, q := x.ov.node(s, P), x.ov.node(s, S)
		*p = removePri(*p, &in)
		intS := removeSec(*q, &in, P)
		var f failure
		if *q, f = addPri(intS, &in, strictP); !f.ok() {
			x.why.add(f)
			return nil // the failover half fails whatever the new secondary
		}
		target = func(n nodeState) (nodeState, failure) { return addSec(n, &in, S, strictP, false) }
		after.pri = S
	default:
		panic("planner: no fast path for this move")
	}
	g := s.scopeStats(x.group)
	for k := 0; k < x.ov.n; k++ {
		if i := x.ov.idx[k]; x.scores(s.nodes[i].group) {
			g.addContrib(&s.contribs[i], -1)
			g.add(&x.ov.ns[k], 1)
		}
	}
	for k, t := range targets {
		if skip != nil && skip(k) {
			continue
		}
		x.tried++
		base := &s.nodes[t]
		n, f := target(*base)
		if !f.ok() {
			x.why.add(f)
			continue
		}
		var score float64
		if x.scores(base.group) {
			c := contribOf(&n)
			score = g.swapScore(&s.contribs[t], &c)
		} else {
			score = g.score()
		}
		fn(k, score)
	}
	return func(t int32) instState {
		res := after
		switch kind {
		case mvFailoverToAny:
			res.pri = t
		default:
			res.sec = t
		}
		return res
	}
}

// rankFast ranks targets for one role of a pair move by the matching
// one-target family, best first. Only the first limit are sorted (the
// rest follow in target order): pairs look past them only when none of the
// best fit, and then sort them too. The ranking is written to out's
// storage and returned.
func (x *search) rankFast(kind moveKind, targets []int32, limit int, out []int32) []int32 {
	ok := x.s.buf.scored[:0]
	x.eachFast(kind, targets, nil, func(k int, score float64) {
		ok = append(ok, scored{targets[k], score})
	})
	x.s.buf.scored = ok
	less := func(a, b scored) int { return cmp.Compare(a.score, b.score) }
	if limit >= len(ok) {
		slices.SortStableFunc(ok, less)
	} else {
		// Select the limit best in one pass, keeping ties in target order.
		best := x.s.buf.best[:0]
		rest := x.s.buf.rest[:0]
		for _, v := range ok {
			i := len(best)
			for i > 0 && best[i-1].score > v.score {
				i--
			}
			if i == limit {
				rest = append(rest, v)
				continue
			}
			if len(best) == limit {
				rest = append(rest, best[limit-1])
				best = best[:limit-1]
			}
			best = slices.Insert(best, i, v)
		}
		x.s.buf.best, x.s.buf.rest = best, rest
		ok = append(ok[:0], best...)
		ok = append(ok, rest...)
	}
	out = out[:0]
	for _, v := range ok {
		out = append(out, v.node)
	}
	return out
}

// scored is a target and its score.
type scored struct {
	node  int32
	score float64
}
