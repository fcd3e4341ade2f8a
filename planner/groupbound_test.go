package planner

import (
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
	checked, pruned := 0, 0
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
		n, p := checkBounds(t, c, r, o, seed)
		checked, pruned = checked+n, pruned+p
		got, err := Compute(c, r, o)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := compute(c, r, o, func(s *state) { s.exhaustiveGroups = true })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: the bounded search planned otherwise than the exhaustive one", seed)
		}
	}
	if checked == 0 || pruned == 0 {
		t.Fatalf("checked %d bounds, %d of them above the best: the test exercises nothing", checked, pruned)
	}
	t.Logf("%d bounds checked, %d would skip their group", checked, pruned)
}

// checkBounds replays changeGroup's loop, checking every bound against
// every group's search; it returns how many bounds it checked and how many
// were above the instance's best score.
func checkBounds(t *testing.T, c *Cluster, r Request, o Options, seed int) (checked, pruned int) {
	t.Helper()
	s, err := newState(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.locActive {
		return 0, 0
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
			x, _ := s.searchGroup(&in, g)
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
		x, _ := s.bestGroup(&in, targets, b)
		if x == nil {
			continue
		}
		out.move(s, &in, x.best)
		b.moved(s, &in)
	}
	return checked, pruned
}
