package clustergen

import (
	"fmt"

	"github.com/drovehq/drove/planner"
)

// books is what secondary placement tracks per node: the memory left after
// the primaries, the memory each primary peer would fail over onto it (N+1),
// and the disk left.
type books struct {
	unalloc int64
	peers   map[int]int64
	rMem    int64 // largest peer reservation
	freeDsk int64
	nSec    int
	total   int64 // disk
}

// secondaries gives every internally mirrored instance a secondary in its
// primary's group: among a few random nodes first, then among all, the one
// whose N+1 reserve and disk stay lowest relative to what the node has.
// It keeps N+1 wherever some node allows it, and never overfills a disk.
func (g *gen) secondaries() error {
	c := g.c
	bk := make([]books, len(c.Nodes))
	byGroup := make([][]int, len(c.Groups))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		bk[i] = books{unalloc: n.TotalMemory - n.ReservedMemory, peers: map[int]int64{},
			freeDsk: n.TotalDisk, total: n.TotalDisk}
		byGroup[n.Group] = append(byGroup[n.Group], i)
	}
	for i := range c.Instances {
		in := &c.Instances[i]
		b := &bk[in.Primary]
		if in.State == planner.Up {
			b.unalloc -= in.Memory
		}
		if localDisk(in.Storage) {
			b.freeDsk -= in.DiskSpace
		}
	}
	for i := range c.Instances {
		in := &c.Instances[i]
		if in.Storage.Mirroring() != planner.MirroredInternally {
			continue
		}
		nodes := byGroup[c.Nodes[in.Primary].Group]
		best := g.pickSecondary(bk, nodes, in)
		if best < 0 {
			return fmt.Errorf("%w: instance %q (%d MiB of disk) fits on no node of group %q besides its primary; lower the disk fill",
				ErrNoRoom, in.Name, in.DiskSpace, c.Groups[c.Nodes[in.Primary].Group].Name)
		}
		in.Secondary = best
		b := &bk[best]
		b.peers[in.Primary] += in.Memory
		b.rMem = max(b.rMem, b.peers[in.Primary])
		b.freeDsk -= in.DiskSpace
		b.nSec++
	}
	return nil
}

// pickSecondary returns the best node for in's secondary, or -1.
func (g *gen) pickSecondary(bk []books, nodes []int, in *planner.Instance) int {
	best, bestCost := -1, 0.0
	try := func(i int, needN1 bool) {
		if i == in.Primary {
			return
		}
		cost, ok := secondaryCost(&bk[i], in, needN1)
		if ok && (best < 0 || cost < bestCost) {
			best, bestCost = i, cost
		}
	}
	for k := 0; k < secSamples; k++ {
		try(nodes[g.rng.IntN(len(nodes))], true)
	}
	if best >= 0 {
		return best
	}
	for _, needN1 := range []bool{true, false} {
		for _, i := range nodes {
			try(i, needN1)
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

// secondaryCost scores node b as in's secondary; lower is better. The node
// must keep disk space, and when needN1, still be able to take over the
// peer's instances.
func secondaryCost(b *books, in *planner.Instance, needN1 bool) (float64, bool) {
	dsk := b.freeDsk - in.DiskSpace
	if dsk <= 0 {
		return 0, false
	}
	peer := b.peers[in.Primary] + in.Memory
	if needN1 && (b.unalloc <= max(b.rMem, peer) || b.unalloc <= 0) {
		return 0, false
	}
	reserve := float64(max(b.rMem, peer)) / float64(max(b.unalloc, 1))
	used := 1 - float64(dsk)/float64(b.total)
	return reserve + used + 0.02*float64(b.nSec), true
}
