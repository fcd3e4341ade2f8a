package clustergen

import (
	"math/rand/v2"
	"slices"

	"github.com/drovehq/drove/planner"
)

// EvacuateNodes asks to empty the named nodes in mode: every instance that
// holds one of them in the mode's role (primary, secondary, or either for
// EvacAll), in the cluster's instance order. Names c does not have match
// nothing. EvacuatedNodes is left empty, as Ganeti sends it, so that hail
// and Drove read the same document; Drove infers the nodes.
func EvacuateNodes(c *planner.Cluster, nodes []string, mode planner.EvacMode) planner.Request {
	evac := map[int]bool{}
	for _, name := range nodes {
		if i := c.NodeIndex(name); i >= 0 {
			evac[i] = true
		}
	}
	r := planner.Request{Kind: planner.NodeEvacuate, Mode: mode, Instances: []string{}}
	for i := range c.Instances {
		in := &c.Instances[i]
		pri := evac[in.Primary]
		sec := in.Secondary != planner.NoNode && evac[in.Secondary]
		var hit bool
		switch mode {
		case planner.PrimaryOnly:
			hit = pri
		case planner.SecondaryOnly:
			hit = sec
		default:
			hit = pri || sec
		}
		if hit {
			r.Instances = append(r.Instances, in.Name)
		}
	}
	return r
}

// ChangeGroupRequest asks to move n mirrored instances (internally or
// externally: their disks can follow them) whose primaries are in the first
// group to any other group. The instances are drawn with seed and listed in
// the cluster's order; fewer than n are asked for when fewer exist.
func ChangeGroupRequest(c *planner.Cluster, n int, seed uint64) planner.Request {
	var pool []int
	for i := range c.Instances {
		in := &c.Instances[i]
		m := in.Storage.Mirroring()
		if c.Nodes[in.Primary].Group == 0 && (m == planner.MirroredInternally || m == planner.MirroredExternally) {
			pool = append(pool, i)
		}
	}
	rng := rand.New(rand.NewPCG(seed, pcgStream+1))
	rng.Shuffle(len(pool), func(a, b int) { pool[a], pool[b] = pool[b], pool[a] })
	pool = pool[:min(n, len(pool))]
	slices.Sort(pool)
	r := planner.Request{Kind: planner.ChangeGroup, Instances: make([]string, 0, len(pool)), TargetGroups: []string{}}
	for _, i := range pool {
		r.Instances = append(r.Instances, c.Instances[i].Name)
	}
	return r
}

// NodesOfGroup returns the names of count nodes of group g spread evenly
// over it (the first, then every len/count-th), for evacuation requests.
func NodesOfGroup(c *planner.Cluster, g, count int) []string {
	var all []string
	for i := range c.Nodes {
		if c.Nodes[i].Group == g {
			all = append(all, c.Nodes[i].Name)
		}
	}
	count = min(count, len(all))
	out := make([]string, 0, count)
	for k := 0; k < count; k++ {
		out = append(out, all[k*len(all)/count])
	}
	return out
}
