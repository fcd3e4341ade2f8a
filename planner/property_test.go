package planner

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomCluster makes a small, tight, irregular cluster: several groups of
// mixed policies, nodes of different sizes, some offline or drained,
// instances of every storage kind packed until nodes are nearly full, and
// exclusion tags. Small and tight is where planners go wrong.
func randomCluster(rng *rand.Rand) *Cluster { return randomClusterOf(rng, 3) }

// randomClusterOf is randomCluster with up to maxGroups groups.
func randomClusterOf(rng *rand.Rand, maxGroups int) *Cluster {
	b := newBuilder()
	b.c.Tags = []string{ExclusionTagPrefix + "svc"}
	policies := []AllocPolicy{Preferred, Preferred, LastResort, Unallocable}
	groups := 1 + rng.IntN(maxGroups)
	for g := 2; g <= groups; g++ {
		b.group(fmt.Sprintf("g%d", g), policies[rng.IntN(len(policies))])
	}
	var names []string
	for g := 1; g <= groups; g++ {
		for i := 0; i < 3+rng.IntN(8); i++ {
			name := fmt.Sprintf("g%dn%d", g, i)
			n := b.node(name, fmt.Sprintf("g%d", g), int64(8+rng.IntN(57)), int64(100+rng.IntN(900)))
			switch rng.IntN(12) {
			case 0:
				n.Drained = true
			case 1:
				n.Offline = true
			}
			names = append(names, name)
		}
	}
	kinds := []StorageKind{DRBD, DRBD, DRBD, ZFSReplicated, Plain, RBD, SharedFile, ZFSLocal, Diskless, File}
	freeMem := map[string]int64{}
	freeDisk := map[string]int64{}
	for _, n := range b.c.Nodes {
		freeMem[n.Name] = n.TotalMemory - n.ReservedMemory
		freeDisk[n.Name] = n.TotalDisk
	}
	groupOf := func(n string) int { return b.c.Nodes[b.nodeIdx(n)].Group }
	for i := 0; i < len(names)*4; i++ {
		kind := kinds[rng.IntN(len(kinds))]
		mem := int64(1+rng.IntN(8)) * 1024
		dsk := int64(5+rng.IntN(80)) * 1024
		pri := names[rng.IntN(len(names))]
		if b.c.Nodes[b.nodeIdx(pri)].Offline {
			continue
		}
		if freeMem[pri] <= mem+1024 || (kind.UsesLocalDisk() && freeDisk[pri] <= dsk+1024) {
			continue
		}
		sec := ""
		if kind.Mirroring() == MirroredInternally {
			sec = names[rng.IntN(len(names))]
			if sec == pri || groupOf(sec) != groupOf(pri) || freeDisk[sec] <= dsk+1024 {
				continue
			}
		}
		in := b.inst(fmt.Sprintf("i%d", i), kind, mem/1024, dsk/1024, pri, sec)
		in.VCPUs = int64(1 + rng.IntN(4))
		if rng.IntN(5) == 0 {
			in.State = Down
		}
		if rng.IntN(6) == 0 {
			in.Tags = []string{"svc:db"}
		}
		if in.State == Up {
			freeMem[pri] -= mem
		}
		if kind.UsesLocalDisk() {
			freeDisk[pri] -= dsk
			if sec != "" {
				freeDisk[sec] -= dsk
			}
		}
	}
	return b.build()
}

// randomRequest evacuates a few nodes or moves some instances of a group.
func randomRequest(rng *rand.Rand, c *Cluster) Request {
	if rng.IntN(3) == 0 {
		g := c.Instances[rng.IntN(len(c.Instances))].Primary
		group := c.Nodes[g].Group
		r := Request{Kind: ChangeGroup}
		for _, in := range c.Instances {
			if c.Nodes[in.Primary].Group == group && rng.IntN(2) == 0 {
				r.Instances = append(r.Instances, in.Name)
			}
		}
		if rng.IntN(2) == 0 {
			r.TargetGroups = []string{c.Groups[rng.IntN(len(c.Groups))].Name}
		}
		return r
	}
	modes := []EvacMode{EvacAll, PrimaryOnly, SecondaryOnly}
	r := Request{Kind: NodeEvacuate, Mode: modes[rng.IntN(3)]}
	group := c.Nodes[rng.IntN(len(c.Nodes))].Group
	evac := map[int]bool{}
	for i := range c.Nodes {
		if c.Nodes[i].Group == group && rng.IntN(3) == 0 {
			evac[i] = true
			r.EvacuatedNodes = append(r.EvacuatedNodes, c.Nodes[i].Name)
		}
	}
	for _, in := range c.Instances {
		onP, onS := evac[in.Primary], in.Secondary != NoNode && evac[in.Secondary]
		if (r.Mode == PrimaryOnly && onP) || (r.Mode == SecondaryOnly && onS) || (r.Mode == EvacAll && (onP || onS)) {
			r.Instances = append(r.Instances, in.Name)
		}
	}
	if rng.IntN(2) == 0 {
		r.EvacuatedNodes = nil // let the planner infer them
	}
	return r
}

// TestRandomClusters checks every invariant of checkPlan on many random
// clusters and requests, with pair pruning both on and off.
func TestRandomClusters(t *testing.T) {
	runs := 400
	if testing.Short() {
		runs = 60
	}
	moved, failed := 0, 0
	for seed := 0; seed < runs; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		c := randomCluster(rng)
		if len(c.Instances) == 0 {
			continue
		}
		r := randomRequest(rng, c)
		o := DefaultOptions()
		o.MaxMovesPerNode = 1 + rng.IntN(3)
		if seed%2 == 0 {
			o.PairCandidates = 2 // force the pruned pair search on small groups
		}
		o.LimitAtRelease = seed%3 == 1 // the job queue keeps the per-node limit
		p, err := Compute(c, r, o)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := checkPlan(c, r, o, p); err != nil {
			t.Fatalf("seed %d (%s %s, %d instances): %v\n%s", seed, r.Kind, r.Mode, len(r.Instances), err, describe(p))
		}
		again, _ := Compute(c, r, o)
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("seed %d: the same input gave two plans", seed)
		}
		moved += len(p.Moved)
		failed += len(p.Failed)
	}
	if moved == 0 || failed == 0 {
		t.Fatalf("random requests should both move and fail some instances; moved %d, failed %d", moved, failed)
	}
	t.Logf("%d runs: %d instances moved, %d failed", runs, moved, failed)
}

// TestEvacuatedNodesEndEmpty: in mode all with explicit nodes, a node being
// evacuated holds, after the plan, only instances that failed to move.
func TestEvacuatedNodesEndEmpty(t *testing.T) {
	for seed := 0; seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		c := randomCluster(rng)
		r := randomRequest(rng, c)
		if r.Kind != NodeEvacuate || r.Mode != EvacAll || len(r.EvacuatedNodes) == 0 {
			continue
		}
		p, err := Compute(c, r, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		where := map[string][]string{}
		for _, in := range c.Instances {
			where[in.Name] = []string{c.Nodes[in.Primary].Name}
			if in.Secondary != NoNode {
				where[in.Name] = append(where[in.Name], c.Nodes[in.Secondary].Name)
			}
		}
		for _, m := range p.Moved {
			where[m.Instance] = m.Nodes
		}
		stuck := map[string]bool{}
		for _, f := range p.Failed {
			stuck[f.Instance] = true
		}
		for _, n := range r.EvacuatedNodes {
			for name, nodes := range where {
				for _, x := range nodes {
					if x == n && !stuck[name] {
						t.Fatalf("seed %d: %s still on evacuated node %s", seed, name, n)
					}
				}
			}
		}
	}
}
