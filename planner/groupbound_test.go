package planner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestGroupBoundIsBelowTheSearch: on random tight clusters of many groups,
// for every instance of a change-group and every target group, the bound
// is at most the score the group's search finds, all along the plan (the
// ranges kept between instances equal ranges measured afresh); and the
// plan equals the exhaustive search's.
func TestGroupBoundIsBelowTheSearch(t *testing.T) {
	checked, pruned, nodes := 0, 0, 0
	for seed := 0; seed < 1000; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 13))
		c := randomClusterOf(rng, 7)
		if len(c.Groups) < 2 || len(c.Instances) == 0 {
			continue
		}
		r := randomRequest(rng, c)
		if r.Kind != ChangeGroup {
			r = Request{Kind: ChangeGroup}
			for _, in := range c.Instances {
				if c.Nodes[in.Primary].Group == 0 {
					r.Instances = append(r.Instances, in.Name)
				}
			}
		}
		o := DefaultOptions()
		if seed%2 == 0 {
			o.PairCandidates = 2
		}
		if seed%3 == 0 {
			o.IgnoreSoftErrors = true
		}
		n, p, nc := checkBounds(t, c, r, o, seed)
		checked, pruned, nodes = checked+n, pruned+p, nodes+nc
		got, err := Compute(c, r, o)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := compute(c, r, o, func(s *state) { s.exhaustiveGroups = true })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: the bounded search planned otherwise than the exhaustive one", seed)
		}
	}
	if checked == 0 || pruned == 0 || nodes == 0 {
		t.Fatalf("checked %d group bounds, %d of them above the best, and %d node bounds: the test exercises nothing", checked, pruned, nodes)
	}
	t.Logf("%d group bounds checked, %d would skip their group; %d node and pair bounds checked", checked, pruned, nodes)
}

// checkBounds replays changeGroup's loop, checking every bound against
// every group's search; it returns how many bounds it checked and how many
// were above the instance's best score.
func checkBounds(t *testing.T, c *Cluster, r Request, o Options, seed int) (checked, pruned, nodeChecks int) {
	t.Helper()
	s, err := newState(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.locActive {
		return 0, 0, 0
	}
	from := map[int32]bool{}
	for _, name := range r.Instances {
		from[s.nodes[s.insts[s.instance(name)].pri].group] = true
	}
	var targets []int32
	for g := range c.Groups {
		if !from[int32(g)] && c.Groups[g].AllocPolicy != Unallocable {
			targets = append(targets, int32(g))
		}
	}
	slices.SortStableFunc(targets, func(a, b int32) int {
		return c.Groups[a].AllocPolicy.rank() - c.Groups[b].AllocPolicy.rank()
	})
	b := s.newGroupBounds()
	var out outcome
	for _, name := range r.Instances {
		in := s.insts[s.instance(name)]
		if in.mirror == NotMirrored {
			continue
		}
		best := math.Inf(1)
		var bounds []float64
		for _, g := range targets {
			if b.fresh[g] && !reflect.DeepEqual(b.ranges[g], s.rangeOf(g)) {
				t.Fatalf("seed %d: group %d's kept range differs from its nodes'", seed, g)
			}
			rg := s.rangeOf(g)
			bound := s.lowerBound(g, &rg, &in)
			bounds = append(bounds, bound)
			nodeChecks += checkNodeBounds(t, s, &in, g, &rg, seed)
			x, _, _ := s.searchGroup(&in, g, nil)
			if x == nil {
				continue
			}
			checked++
			if bound > x.best.score {
				t.Fatalf("seed %d: %s into group %d: bound %v above the search's score %v", seed, name, g, bound, x.best.score)
			}
			best = min(best, x.best.score)
		}
		for _, v := range bounds {
			if v > best {
				pruned++
			}
		}
		x, _, _ := s.bestGroup(&in, targets, b)
		if x == nil {
			continue
		}
		out.move(s, &in, x.best)
		b.moved(s, &in)
	}
	return checked, pruned, nodeChecks
}

// checkNodeBounds checks nodebound.go's bounds of in's moves into group g
// against the scores of every node in each role and of every pair, and
// returns how many it checked.
func checkNodeBounds(t *testing.T, s *state, in *instState, g int32, r *groupRange, seed int) int {
	t.Helper()
	if s.nodes[in.pri].group == g || (in.sec != NoNode && s.nodes[in.sec].group == g) {
		return 0
	}
	x := newSearch(s, *in, g)
	x.lin = s.newLinear(g, r, &x.in)
	if !x.lin.ok {
		return 0
	}
	targets := s.targets(g, nil)
	checked := 0
	// Each bound on the group's chord, and on the chord of the moves
	// weighed together (a role's nodes, the pairs), as the searches do.
	check := func(what string, tm *nodeTerms, tight *chord, score float64) {
		for _, c := range []*chord{&x.lin.group, tight} {
			if b := x.lin.one(c, tm); b > score {
				t.Fatalf("seed %d: %s of group %d: bound %v above its score %v", seed, what, g, b, score)
			}
		}
		checked++
	}
	for _, role := range []struct {
		kind moveKind
		role nodeRole
	}{{mvFailoverToAny, roleAddPri}, {mvReplaceSecondary, roleAddSec}} {
		if role.kind == mvReplaceSecondary && in.mirror != MirroredInternally {
			continue
		}
		var low, high [sdCount]float64
		terms := map[int32]nodeTerms{}
		for k, tg := range targets {
			tm := x.lin.terms(s, tg, role.role)
			tm.span(&low, &high, k == 0)
			terms[tg] = tm
		}
		tight := x.lin.chord(&low, &high)
		x.eachFast(role.kind, targets, nil, func(k int, score float64) {
			tm := terms[targets[k]]
			check(fmt.Sprintf("node %d in role %d", targets[k], role.role), &tm, &tight, score)
		})
	}
	if in.mirror != MirroredInternally {
		return checked
	}
	var low, high [sdCount]float64
	pairs := map[[2]int32]nodeTerms{}
	for _, tp := range targets {
		for _, ts := range targets {
			p, q := x.lin.terms(s, tp, rolePairPri), x.lin.terms(s, ts, roleAddSec)
			pt := x.lin.pairTerms(&p, &q)
			pt.span(&low, &high, len(pairs) == 0)
			pairs[[2]int32{tp, ts}] = pt
		}
	}
	tight := x.lin.chord(&low, &high)
	for _, tp := range targets {
		for _, ts := range targets {
			if tp == ts {
				continue
			}
			score, _, f := x.eval(mk(move{mvReplaceSecondary, tp}, move{mvFailover, 0}, move{mvReplaceSecondary, ts}))
			if !f.ok() {
				continue
			}
			pt := pairs[[2]int32{tp, ts}]
			check(fmt.Sprintf("pair %d, %d", tp, ts), &pt, &tight, score)
		}
	}
	return checked
}
