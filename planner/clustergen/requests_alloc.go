package clustergen

import (
	"fmt"
	"math/rand/v2"

	"github.com/drovehq/drove/planner"
)

// NewInstances draws n instances to create, of the kinds in mix (Ganeti's
// only, so that hail can read the request), sized like the generator's own
// (512 MiB to 8 GiB, 1 to 4 vCPUs, one disk of 10 to 100 GiB), named
// new-0001 and on. Internally mirrored ones need two nodes.
func NewInstances(n int, mix Mix, seed uint64) []planner.NewInstance {
	rng := rand.New(rand.NewPCG(seed, pcgStream+2))
	kinds, cum := mix.kinds()
	out := make([]planner.NewInstance, 0, n)
	for i := 0; i < n; i++ {
		x := rng.Float64() * cum[len(cum)-1]
		k := kinds[len(kinds)-1]
		for j, c := range cum {
			if x < c {
				k = kinds[j]
				break
			}
		}
		disk := int64(10+rng.IntN(10)*10) << 10
		in := planner.Instance{
			Name: fmt.Sprintf("new-%04d", i+1), Memory: int64(2+rng.IntN(31)) * 256,
			VCPUs: int64(1 + rng.IntN(4)), DiskSpace: disk, Disks: []planner.Disk{{Size: disk}},
			SpindleUse: 1, NICs: 1, Tags: []string{}, Storage: k, State: planner.Up,
			Primary: planner.NoNode, Secondary: planner.NoNode,
		}
		req := 1
		if k.Mirroring() == planner.MirroredInternally {
			req = 2
		}
		out = append(out, planner.NewInstance{Instance: in, RequiredNodes: req})
	}
	return out
}

// RelocateRequest asks for a new secondary for the internally mirrored
// instance drawn with seed, or a new primary for an externally stored one
// when there is no mirrored instance; ok is false when c has neither.
func RelocateRequest(c *planner.Cluster, seed uint64) (r planner.Request, ok bool) {
	var pool []int
	for i := range c.Instances {
		if m := c.Instances[i].Storage.Mirroring(); m == planner.MirroredInternally {
			pool = append(pool, i)
		}
	}
	if len(pool) == 0 {
		for i := range c.Instances {
			if c.Instances[i].Storage.Mirroring() == planner.MirroredExternally {
				pool = append(pool, i)
			}
		}
	}
	if len(pool) == 0 {
		return r, false
	}
	rng := rand.New(rand.NewPCG(seed, pcgStream+3))
	in := &c.Instances[pool[rng.IntN(len(pool))]]
	from := in.Primary
	if in.Storage.Mirroring() == planner.MirroredInternally {
		from = in.Secondary
	}
	return planner.Request{Kind: planner.Relocate, Instances: []string{in.Name},
		RelocateFrom: []string{c.Nodes[from].Name}, RequiredNodes: 1}, true
}
