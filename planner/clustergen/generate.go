package clustergen

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/drovehq/drove/planner"
)

// Size steps: servers come in round sizes, instances in multiples of
// 256 MiB and whole GiB disks.
const (
	memStep      = 16 << 10
	diskStep     = 256 << 10
	cpuStep      = 4
	instMemStep  = 256
	instDiskStep = 1 << 10
	maxDiskSize  = 1 << 20 // Ganeti's default policy: 1 TiB per disk
	minDiskSize  = 1 << 10
	secSamples   = 8 // random nodes tried first for each secondary
)

// pcgStream separates the generator's stream from other users of a seed.
const pcgStream = 0x64726f7665 // "drove"

// Generate builds the cluster spec describes. The same spec always gives the
// same cluster.
func Generate(spec Spec) (*planner.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	s := spec.withDefaults()
	g := &gen{s: s, rng: rand.New(rand.NewPCG(s.Seed, pcgStream))}
	g.kinds, g.cum = s.Mix.kinds()
	c := &planner.Cluster{
		Name:   fmt.Sprintf("synthetic-%d", s.Seed),
		Tags:   []string{},
		Policy: policyFor(s.Mix),
	}
	g.c = c
	for gi := 0; gi < s.Groups; gi++ {
		c.Groups = append(c.Groups, planner.Group{
			UUID:        g.uuid(),
			Name:        fmt.Sprintf("g%d", gi+1),
			AllocPolicy: planner.Preferred,
			Policy:      policyFor(s.Mix),
		})
	}
	width := digits(s.NodesPerGroup, 3)
	for gi := 0; gi < s.Groups; gi++ {
		for ni := 0; ni < s.NodesPerGroup; ni++ {
			c.Nodes = append(c.Nodes, g.node(gi, fmt.Sprintf("node-g%d-%0*d", gi+1, width, ni+1)))
		}
	}
	for ni := range c.Nodes {
		g.primaries(ni)
	}
	// Instances are listed in random order, not node by node, as in a
	// real inventory; the order matters to both planners' tie breaks.
	g.rng.Shuffle(len(c.Instances), func(a, b int) {
		c.Instances[a], c.Instances[b] = c.Instances[b], c.Instances[a]
	})
	iw := digits(len(c.Instances), 6)
	for i := range c.Instances {
		c.Instances[i].Name = fmt.Sprintf("inst-%0*d", iw, i+1)
	}
	if err := g.secondaries(); err != nil {
		return nil, err
	}
	Recount(c)
	return c, nil
}

// policyFor is Ganeti's default instance policy, allowing the disk
// templates Ganeti knows plus any other kind the mix uses. Ganeti's hail
// refuses a document whose policy names a kind it does not know (such as
// zfs-local), so a cluster without Drove's own kinds stays readable by hail.
func policyFor(m Mix) planner.IPolicy {
	p := planner.DefaultIPolicy()
	var kinds []planner.StorageKind
	for _, k := range p.DiskTemplates {
		if GanetiKind(k) || m[k] > 0 {
			kinds = append(kinds, k)
		}
	}
	p.DiskTemplates = kinds
	return p
}

// GanetiKind reports whether Ganeti (and so hail) knows storage kind k as a
// disk template; Drove's ZFS kinds are its own.
func GanetiKind(k planner.StorageKind) bool {
	switch k {
	case planner.DRBD, planner.Plain, planner.File, planner.SharedFile, planner.BlockDev,
		planner.RBD, planner.Ext, planner.Gluster, planner.Diskless:
		return true
	}
	return false
}

// gen carries the generator's state.
type gen struct {
	s     Spec
	rng   *rand.Rand
	c     *planner.Cluster
	kinds []planner.StorageKind
	cum   []float64
}

func digits(n, min int) int {
	d := len(fmt.Sprint(n))
	if d < min {
		return min
	}
	return d
}

func (g *gen) uuid() string {
	a, b := g.rng.Uint64(), g.rng.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xfff,
		0x8000|(b>>48)&0x3fff, b&0xffffffffffff)
}

// step draws a multiple of step in r, at least r.Min.
func (g *gen) step(r Range, step int64) int64 {
	v := r.Min + g.rng.Int64N(r.Max-r.Min+1)
	v -= v % step
	return max(v, r.Min)
}

func (g *gen) node(group int, name string) planner.Node {
	s := &g.s
	mem := g.step(s.NodeMemory, memStep)
	// Bigger servers have more cores: place the CPU count at the memory's
	// relative position in its range, give or take a quarter of the range.
	pos := 0.5
	if s.NodeMemory.Max > s.NodeMemory.Min {
		pos = float64(mem-s.NodeMemory.Min) / float64(s.NodeMemory.Max-s.NodeMemory.Min)
	}
	pos += (g.rng.Float64() - 0.5) / 2
	pos = math.Min(1, math.Max(0, pos))
	cpus := s.NodeCPUs.Min + int64(pos*float64(s.NodeCPUs.Max-s.NodeCPUs.Min))
	cpus -= cpus % cpuStep
	cpus = max(cpus, s.NodeCPUs.Min)
	sp := s.NodeSpindles.Min + g.rng.Int64N(s.NodeSpindles.Max-s.NodeSpindles.Min+1)
	return planner.Node{
		Name:           name,
		Group:          group,
		TotalMemory:    mem,
		ReservedMemory: s.ReservedMemory,
		TotalDisk:      g.step(s.NodeDisk, diskStep),
		TotalCPUs:      cpus,
		ReservedCPUs:   1,
		TotalSpindles:  sp,
		FreeSpindles:   sp,
		VMCapable:      true,
		Tags:           []string{},
	}
}

func (g *gen) kind() planner.StorageKind {
	x := g.rng.Float64() * g.cum[len(g.cum)-1]
	for i, c := range g.cum {
		if x < c {
			return g.kinds[i]
		}
	}
	return g.kinds[len(g.kinds)-1]
}

// logUniform draws from [lo, hi] with every order of magnitude alike, as
// instance sizes are: many small, few large.
func (g *gen) logUniform(lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + g.rng.Float64()*(math.Log(hi)-math.Log(lo)))
}

// primaries creates node ni's primary instances: memory adding up to the
// fill, disks to the node's share of the disk fill.
func (g *gen) primaries(ni int) {
	s := &g.s
	n := &g.c.Nodes[ni]
	k := s.InstancesPerNode
	lo, hi := float64(s.InstanceMemory.Min), float64(s.InstanceMemory.Max)
	mem := make([]float64, k)
	for i := range mem {
		mem[i] = g.logUniform(lo, hi)
	}
	target := s.Fill * float64(n.TotalMemory)
	sizes := roundTo(spread(mem, target, lo, hi), int64(target), instMemStep, s.InstanceMemory)

	insts := make([]planner.Instance, k)
	var local []int
	for i := range insts {
		in := &insts[i]
		in.Memory = sizes[i]
		in.Storage = g.kind()
		in.State = planner.Up
		in.NICs = 1
		in.SpindleUse = 1
		in.Tags = []string{}
		in.Primary = ni
		in.Secondary = planner.NoNode
		// About one vCPU per 2 GiB, give or take one.
		v := in.Memory/2048 + g.rng.Int64N(3) - 1
		in.VCPUs = min(max(v, s.InstanceVCPUs.Min), s.InstanceVCPUs.Max)
		if localDisk(in.Storage) {
			local = append(local, i)
		}
	}
	g.fitVCPUs(n, insts)

	// Local disks share the node's budget; internally mirrored ones will
	// take as much again on their secondaries, so the budget leaves room.
	budget := s.DiskFill * float64(n.TotalDisk) / (1 + s.Mix.internalShare())
	w := make([]float64, len(local))
	for i := range w {
		w[i] = g.logUniform(1, 32)
	}
	dl, dh := float64(minDiskSize), float64(2*maxDiskSize)
	var dsk []float64
	if len(local) > 0 {
		dsk = spread(w, budget, dl, dh)
	}
	avg := budget / float64(max(len(local), 1))
	for i := range insts {
		var size float64
		if j := indexOf(local, i); j >= 0 {
			size = dsk[j]
		} else {
			size = math.Min(dh, avg*g.logUniform(0.25, 2))
		}
		g.disks(&insts[i], int64(size))
	}
	g.c.Instances = append(g.c.Instances, insts...)
}

// fitVCPUs trims vCPUs until the node's primaries respect the policy's
// vCPU ratio.
func (g *gen) fitVCPUs(n *planner.Node, insts []planner.Instance) {
	limit := int64(g.c.Policy.VCPURatio*float64(n.TotalCPUs)) - n.ReservedCPUs
	for {
		var sum int64
		big := 0
		for i := range insts {
			sum += insts[i].VCPUs
			if insts[i].VCPUs > insts[big].VCPUs {
				big = i
			}
		}
		if sum <= limit || insts[big].VCPUs <= g.s.InstanceVCPUs.Min {
			return
		}
		insts[big].VCPUs--
	}
}

// disks gives in one or two disks of total about size MiB, each within the
// policy's bounds.
func (g *gen) disks(in *planner.Instance, size int64) {
	size -= size % instDiskStep
	size = max(size, minDiskSize)
	parts := 1
	if size > maxDiskSize || (size >= 2*minDiskSize && g.rng.Float64() < 0.3) {
		parts = 2
	}
	size = min(size, int64(parts)*maxDiskSize)
	first := size
	if parts == 2 {
		first = size / 2
		first -= first % instDiskStep
		first = max(first, size-maxDiskSize)
	}
	in.Disks = []planner.Disk{{Size: first, Spindles: 1}}
	if parts == 2 {
		in.Disks = append(in.Disks, planner.Disk{Size: size - first, Spindles: 1})
	}
	in.DiskSpace = size
}

func indexOf(xs []int, v int) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return -1
}

// spread scales weights w so they add up to target, each within [lo, hi],
// moving only the values not already at a bound.
func spread(w []float64, target, lo, hi float64) []float64 {
	out := append([]float64(nil), w...)
	for iter := 0; iter < 64; iter++ {
		var sum, movable float64
		for _, v := range out {
			sum += v
		}
		r := target - sum
		if math.Abs(r) < 0.5 {
			break
		}
		for _, v := range out {
			if (r > 0 && v < hi) || (r < 0 && v > lo) {
				movable += v
			}
		}
		if movable == 0 {
			break
		}
		f := (movable + r) / movable
		for i, v := range out {
			if (r > 0 && v < hi) || (r < 0 && v > lo) {
				out[i] = math.Min(hi, math.Max(lo, v*f))
			}
		}
	}
	return out
}

// roundTo rounds sizes to multiples of step within r, then walks the
// rounding error back one step at a time so the total stays within a step
// of target.
func roundTo(v []float64, target, step int64, r Range) []int64 {
	lo := r.Min + (step-r.Min%step)%step
	hi := r.Max - r.Max%step
	out := make([]int64, len(v))
	var sum int64
	for i, x := range v {
		s := int64(math.Round(x/float64(step))) * step
		out[i] = min(max(s, lo), hi)
		sum += out[i]
	}
	for i := 0; sum-target >= step || target-sum >= step; i = (i + 1) % len(out) {
		moved := false
		for j := range out {
			k := (i + j) % len(out)
			if sum > target && out[k]-step >= lo {
				out[k] -= step
				sum -= step
				moved = true
				break
			}
			if sum < target && out[k]+step <= hi {
				out[k] += step
				sum += step
				moved = true
				break
			}
		}
		if !moved {
			break
		}
	}
	return out
}
