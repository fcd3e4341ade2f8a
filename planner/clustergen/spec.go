package clustergen

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/drovehq/drove/planner"
)

// Range is an inclusive range of sizes (MiB, or a count for CPUs).
type Range struct {
	Min, Max int64
}

func (r Range) zero() bool { return r.Min == 0 && r.Max == 0 }

// Mix gives the relative weight of each storage kind among instances.
// Weights need not add up to 1; kinds with no weight are not used.
type Mix map[planner.StorageKind]float64

// DefaultMix is mostly DRBD, with some of every other kind Drove moves.
func DefaultMix() Mix {
	return Mix{
		planner.DRBD:          0.6,
		planner.Plain:         0.1,
		planner.RBD:           0.1,
		planner.ZFSLocal:      0.1,
		planner.ZFSReplicated: 0.1,
	}
}

// kinds returns the kinds with a positive weight, in a fixed order, and
// their cumulative weights.
func (m Mix) kinds() ([]planner.StorageKind, []float64) {
	var ks []planner.StorageKind
	for k, w := range m {
		if w > 0 {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	cum := make([]float64, len(ks))
	var t float64
	for i, k := range ks {
		t += m[k]
		cum[i] = t
	}
	return ks, cum
}

// internalShare is the weight fraction of kinds mirrored on a secondary.
func (m Mix) internalShare() float64 {
	var all, in float64
	for k, w := range m {
		if w <= 0 {
			continue
		}
		all += w
		if k.Mirroring() == planner.MirroredInternally {
			in += w
		}
	}
	if all == 0 {
		return 0
	}
	return in / all
}

// Spec describes the cluster to generate. Zero fields take the defaults of
// DefaultSpec, except Seed, where zero is a seed like any other.
type Spec struct {
	Groups           int
	NodesPerGroup    int
	InstancesPerNode int // primary instances on every node
	// Fill is the fraction of each node's total memory its primary
	// instances use, such as 0.6.
	Fill float64
	// DiskFill is the fraction of each node's disk that local-disk
	// instances, primaries and secondaries together, use on average;
	// zero means Fill.
	DiskFill float64
	Mix      Mix
	Seed     uint64

	NodeMemory     Range // MiB; drawn in steps of 16 GiB
	NodeDisk       Range // MiB; drawn in steps of 256 GiB
	NodeCPUs       Range // drawn in steps of 4, larger on larger nodes
	NodeSpindles   Range
	ReservedMemory int64 // MiB each node keeps for itself
	InstanceMemory Range // MiB; sizes are multiples of 256 MiB
	InstanceVCPUs  Range
}

// DefaultSpec is two groups of 20 nodes with 10 instances each at 60%
// memory.
func DefaultSpec() Spec {
	return Spec{
		Groups:           2,
		NodesPerGroup:    20,
		InstancesPerNode: 10,
		Fill:             0.6,
		Mix:              DefaultMix(),
		NodeMemory:       Range{64 << 10, 256 << 10},
		NodeDisk:         Range{1 << 20, 8 << 20},
		NodeCPUs:         Range{16, 64},
		NodeSpindles:     Range{1, 4},
		ReservedMemory:   1 << 10,
		InstanceMemory:   Range{512, 16 << 10},
		InstanceVCPUs:    Range{1, 8},
	}
}

// withDefaults fills the zero fields from DefaultSpec.
func (s Spec) withDefaults() Spec {
	d := DefaultSpec()
	if s.Groups == 0 {
		s.Groups = d.Groups
	}
	if s.NodesPerGroup == 0 {
		s.NodesPerGroup = d.NodesPerGroup
	}
	if s.InstancesPerNode == 0 {
		s.InstancesPerNode = d.InstancesPerNode
	}
	if s.Fill == 0 {
		s.Fill = d.Fill
	}
	if s.DiskFill == 0 {
		s.DiskFill = s.Fill
	}
	if s.Mix == nil {
		s.Mix = d.Mix
	}
	for _, f := range []struct{ r, def *Range }{
		{&s.NodeMemory, &d.NodeMemory}, {&s.NodeDisk, &d.NodeDisk},
		{&s.NodeCPUs, &d.NodeCPUs}, {&s.NodeSpindles, &d.NodeSpindles},
		{&s.InstanceMemory, &d.InstanceMemory}, {&s.InstanceVCPUs, &d.InstanceVCPUs},
	} {
		if f.r.zero() {
			*f.r = *f.def
		}
	}
	if s.ReservedMemory == 0 {
		s.ReservedMemory = d.ReservedMemory
	}
	return s
}

// Validate reports every problem of the spec, after defaults, at once.
func (s Spec) Validate() error {
	s = s.withDefaults()
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	if s.Groups < 1 {
		add("groups must be at least 1, got %d", s.Groups)
	}
	if s.NodesPerGroup < 2 {
		add("nodes per group must be at least 2 (a secondary needs another node), got %d", s.NodesPerGroup)
	}
	if s.InstancesPerNode < 1 {
		add("instances per node must be at least 1, got %d", s.InstancesPerNode)
	}
	if !(s.Fill > 0 && s.Fill < 1) {
		add("fill must be between 0 and 1, got %v", s.Fill)
	}
	if !(s.DiskFill > 0 && s.DiskFill < 1) {
		add("disk fill must be between 0 and 1, got %v", s.DiskFill)
	}
	ks, _ := s.Mix.kinds()
	if len(ks) == 0 {
		add("mix has no storage kind with a positive weight")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Mix)) {
		w := s.Mix[k]
		if !k.Known() {
			add("mix: unknown storage kind %q", k)
		}
		if w < 0 {
			add("mix: negative weight %v for %q", w, k)
		}
	}
	for _, r := range []struct {
		name string
		r    Range
		min  int64
	}{
		{"node memory", s.NodeMemory, 1024}, {"node disk", s.NodeDisk, 1024},
		{"node cpus", s.NodeCPUs, 1}, {"node spindles", s.NodeSpindles, 1},
		{"instance memory", s.InstanceMemory, 128}, {"instance vcpus", s.InstanceVCPUs, 1},
	} {
		if r.r.Min < r.min || r.r.Max < r.r.Min {
			add("%s range [%d, %d] must have %d <= min <= max", r.name, r.r.Min, r.r.Max, r.min)
		}
	}
	if s.ReservedMemory < 0 {
		add("reserved memory must not be negative, got %d", s.ReservedMemory)
	}
	if len(probs) == 0 {
		probs = s.feasibility()
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, strings.Join(probs, "; "))
	}
	return nil
}

// feasibility checks that every node can reach its fill with the instance
// sizes allowed, and that the node keeps room for itself.
func (s Spec) feasibility() []string {
	var probs []string
	k := int64(s.InstancesPerNode)
	lo := int64(s.Fill * float64(s.NodeMemory.Min))
	hi := int64(s.Fill * float64(s.NodeMemory.Max))
	if k*s.InstanceMemory.Min > lo {
		probs = append(probs, fmt.Sprintf("fill %v of a %d MiB node is %d MiB, less than %d instances of at least %d MiB",
			s.Fill, s.NodeMemory.Min, lo, k, s.InstanceMemory.Min))
	}
	if k*s.InstanceMemory.Max < hi {
		probs = append(probs, fmt.Sprintf("fill %v of a %d MiB node is %d MiB, more than %d instances of at most %d MiB: raise the instance memory maximum or lower the node memory maximum",
			s.Fill, s.NodeMemory.Max, hi, k, s.InstanceMemory.Max))
	}
	if lo+s.ReservedMemory >= s.NodeMemory.Min {
		probs = append(probs, fmt.Sprintf("fill %v plus %d MiB reserved leaves no free memory on a %d MiB node",
			s.Fill, s.ReservedMemory, s.NodeMemory.Min))
	}
	return probs
}
