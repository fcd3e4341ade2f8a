package service

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
)

// inventory is the fold of drove.inventory: the last whole state of every
// group, node and instance, kept in the order each first appeared in the
// log so that the planner's input, and so its plan, is reproducible.
//
// "First appeared" must mean the same on every replay, but the topic's
// partitions are read side by side in no fixed interleaving. So an object's
// place is the position of its first event: (event time, partition,
// offset), a total order fixed by the log itself, which follows the order
// objects were declared in (a seed writes them in its cluster's order).
type inventory struct {
	groups    map[string]*events.GroupDeclared
	nodes     map[string]*events.NodeAnnounced
	instances map[string]*events.InstanceDeclared

	groupOrder, nodeOrder, instanceOrder []string
	first                                map[string]logPos // by kind + name
}

// logPos is where an event sits in the log. Events the service applies
// before reading them back have no partition yet: they sort after every
// read event of the same time (they never declare an object anyway).
type logPos struct {
	time      time.Time
	partition int32
	offset    int64
}

// unread is the position of an event not read from the log.
func unread(e events.Envelope) logPos { return logPos{e.Time, 1<<31 - 1, 0} }

func (a logPos) compare(b logPos) int {
	return cmp.Or(a.time.Compare(b.time), cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
}

func newInventory() *inventory {
	return &inventory{
		groups:    map[string]*events.GroupDeclared{},
		nodes:     map[string]*events.NodeAnnounced{},
		instances: map[string]*events.InstanceDeclared{},
		first:     map[string]logPos{},
	}
}

// place records where an object first appeared and keeps order sorted by
// it.
func (inv *inventory) place(order *[]string, kind, name string, pos logPos) {
	key := kind + "/" + name
	old, seen := inv.first[key]
	if seen && old.compare(pos) <= 0 {
		return
	}
	inv.first[key] = pos
	if seen {
		*order = slices.DeleteFunc(*order, func(n string) bool { return n == name })
	}
	i, _ := slices.BinarySearchFunc(*order, pos, func(n string, p logPos) int {
		return inv.first[kind+"/"+n].compare(p)
	})
	*order = slices.Insert(*order, i, name)
}

// apply folds one inventory event. Every event states a whole object (or a
// whole placement), so applying one twice leaves the same state: reading
// back what the service wrote itself is a no-op.
func (inv *inventory) apply(p events.Payload, pos logPos) {
	switch e := p.(type) {
	case events.GroupDeclared:
		inv.place(&inv.groupOrder, "group", e.Name, pos)
		inv.groups[e.Name] = &e
	case events.NodeAnnounced:
		inv.place(&inv.nodeOrder, "node", e.Name, pos)
		inv.nodes[e.Name] = &e
	case events.NodeUpdated:
		inv.place(&inv.nodeOrder, "node", e.Name, pos)
		n := events.NodeAnnounced(e)
		inv.nodes[e.Name] = &n
	case events.InstanceDeclared:
		inv.place(&inv.instanceOrder, "instance", e.Name, pos)
		inv.instances[e.Name] = &e
	case events.InstancePlaced:
		// A placement of an instance never declared is kept nowhere: the
		// planner cannot move what it does not know the size of.
		if in, ok := inv.instances[e.Instance]; ok {
			in.PrimaryNode = e.PrimaryNode
			in.SecondaryNode = e.SecondaryNode
		}
	}
}

// usesLocalDisk mirrors the planner's rule: these kinds take space from the
// disks of the nodes holding them (primary and, if any, secondary).
func usesLocalDisk(k events.StorageKind) bool {
	switch k {
	case events.StorageDRBD, events.StoragePlain, events.StorageZFSReplicated, events.StorageZFSLocal:
		return true
	}
	return false
}

func diskTotal(s events.Size) int64 {
	var t int64
	for _, d := range s.DisksMiB {
		t += d
	}
	return t
}

// freeOf derives a node's free memory and disk from its totals and the
// instances placed on it now. Nodes report free space only when they
// announce themselves; deriving it keeps the snapshot consistent while
// instances move, and matches the planner's books exactly: free memory is
// total - reserved - running primaries, so nothing is "missing" against
// the records.
func (inv *inventory) freeOf(node string) (mem, disk int64) {
	n := inv.nodes[node]
	mem, disk = n.Total.MemoryMiB-n.ReservedMemoryMiB, n.Total.DiskMiB
	for _, name := range inv.instanceOrder {
		in := inv.instances[name]
		if in.PrimaryNode == node && in.RunState == events.RunRunning {
			mem -= in.Size.MemoryMiB
		}
		if usesLocalDisk(in.Storage) && (in.PrimaryNode == node || in.SecondaryNode == node) {
			disk -= diskTotal(in.Size)
		}
	}
	return mem, disk
}

// nodeState returns the node's whole state as a NodeUpdated would restate
// it, with free space derived from the placements.
func (inv *inventory) nodeState(name string) events.NodeUpdated {
	n := *inv.nodes[name]
	n.Free.MemoryMiB, n.Free.DiskMiB = inv.freeOf(name)
	n.Free.MemoryMiB = max(n.Free.MemoryMiB, 0)
	n.Free.DiskMiB = max(n.Free.DiskMiB, 0)
	return events.NodeUpdated(n)
}

var runStates = map[events.RunState]planner.RunState{
	events.RunRunning: planner.Up, events.RunStopped: planner.Down, events.RunOffline: planner.Offline,
}

// cluster builds the planner's snapshot. References to undeclared groups or
// nodes become index -1, which planner.Compute reports as inconsistent data
// naming the object: a request is then rejected with that reason rather
// than planned on a guess.
func (inv *inventory) cluster() *planner.Cluster {
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	groupIdx := map[string]int{}
	for _, name := range inv.groupOrder {
		g := inv.groups[name]
		c.Tags = unionTags(c.Tags, g.ClusterTags)
		groupIdx[name] = len(c.Groups)
		c.Groups = append(c.Groups, planner.Group{
			UUID: g.Name, Name: g.Name, AllocPolicy: planner.AllocPolicy(g.AllocPolicy),
			Policy: groupPolicy(g.Policy), Tags: g.Tags,
		})
	}
	nodeIdx := map[string]int{}
	for _, name := range inv.nodeOrder {
		n := inv.nodes[name]
		g, ok := groupIdx[n.Group]
		if !ok {
			g = -1
		}
		freeMem, freeDisk := inv.freeOf(name)
		nodeIdx[name] = len(c.Nodes)
		c.Nodes = append(c.Nodes, planner.Node{
			Name: n.Name, Group: g,
			TotalMemory: n.Total.MemoryMiB, FreeMemory: freeMem, ReservedMemory: n.ReservedMemoryMiB,
			TotalDisk: n.Total.DiskMiB, FreeDisk: freeDisk,
			TotalCPUs: int64(n.Total.CPUs), TotalSpindles: int64(n.Total.Spindles),
			FreeSpindles: int64(n.Free.Spindles),
			Offline:      n.Offline, Drained: n.Drained, VMCapable: n.VMCapable, Tags: n.Tags,
		})
	}
	for _, name := range inv.instanceOrder {
		in := inv.instances[name]
		idx := func(node string) int {
			if i, ok := nodeIdx[node]; ok {
				return i
			}
			return -1
		}
		pi := planner.Instance{
			Name: in.Name, Memory: in.Size.MemoryMiB, DiskSpace: diskTotal(in.Size),
			VCPUs: int64(in.Size.VCPUs), SpindleUse: int64(in.Size.Spindles),
			NICs: int64(len(in.NICs)), Tags: in.Tags, Storage: planner.StorageKind(in.Storage),
			State: runStates[in.RunState], Owner: in.Owner,
			Primary: idx(in.PrimaryNode), Secondary: planner.NoNode,
		}
		for _, d := range in.Size.DisksMiB {
			pi.Disks = append(pi.Disks, planner.Disk{Size: d})
		}
		if in.SecondaryNode != "" {
			pi.Secondary = idx(in.SecondaryNode)
		}
		c.Instances = append(c.Instances, pi)
	}
	return c
}

// InventoryEvents states a cluster as inventory events: GroupDeclared for
// every group, NodeAnnounced for every node, InstanceDeclared for every
// instance, in the cluster's order. It is the reverse of the service's fold
// (up to what events carry: groups' instance policies and nodes' reserved
// memory are, and the cluster's tags ride on every group),
// and is how `drove seed` imports a cluster, a Ganeti IAllocator file
// included (planner/iallocator.DecodeCluster).
//
// Event times increase by a nanosecond from one event to the next, so the
// fold, which orders objects by the time they first appear, keeps the
// cluster's order however the topic's partitions are interleaved.
func InventoryEvents(c *planner.Cluster, reason events.Reason) []events.Envelope {
	base := time.Now().UTC()
	var out []events.Envelope
	opts := func() []events.Option {
		return []events.Option{events.WithReason(reason), events.WithProducer("drove-seed"),
			events.WithTime(base.Add(time.Duration(len(out))))}
	}
	for _, g := range c.Groups {
		out = append(out, events.New(events.GroupDeclared{
			Name: g.Name, AllocPolicy: events.AllocPolicy(g.AllocPolicy), Tags: g.Tags,
			Policy: policyEvent(g.Policy), ClusterTags: c.Tags,
		}, opts()...))
	}
	for _, n := range c.Nodes {
		group := ""
		if n.Group >= 0 && n.Group < len(c.Groups) {
			group = c.Groups[n.Group].Name
		}
		out = append(out, events.New(events.NodeAnnounced{
			Name: n.Name, Group: group,
			Total: events.Resources{MemoryMiB: n.TotalMemory, DiskMiB: n.TotalDisk,
				CPUs: int(n.TotalCPUs), Spindles: int(n.TotalSpindles)},
			Free: events.Resources{MemoryMiB: max(n.FreeMemory, 0), DiskMiB: max(n.FreeDisk, 0),
				CPUs: int(max(n.TotalCPUs-n.ReservedCPUs, 0)), Spindles: int(max(n.FreeSpindles, 0))},
			ReservedMemoryMiB: max(n.ReservedMemory, 0),
			Offline:           n.Offline, Drained: n.Drained, VMCapable: n.VMCapable, Tags: n.Tags,
		}, opts()...))
	}
	states := map[planner.RunState]events.RunState{
		planner.Up: events.RunRunning, planner.Down: events.RunStopped, planner.Offline: events.RunOffline,
	}
	for _, in := range c.Instances {
		d := events.InstanceDeclared{
			Name: in.Name, Owner: in.Owner, Storage: events.StorageKind(in.Storage),
			RunState: states[in.State], Tags: in.Tags,
			Size: events.Size{MemoryMiB: in.Memory, VCPUs: int(in.VCPUs), Spindles: int(in.SpindleUse)},
		}
		if d.Owner == "" {
			d.Owner = "unknown" // Ganeti has no owners; the schema requires one
		}
		if d.RunState == "" {
			d.RunState = events.RunRunning
		}
		for _, disk := range in.Disks {
			d.Size.DisksMiB = append(d.Size.DisksMiB, disk.Size)
		}
		if len(in.Disks) == 0 && in.DiskSpace > 0 {
			d.Size.DisksMiB = []int64{in.DiskSpace}
		}
		if in.Primary >= 0 && in.Primary < len(c.Nodes) {
			d.PrimaryNode = c.Nodes[in.Primary].Name
		}
		if in.Storage.Mirroring() == planner.MirroredInternally && in.Secondary >= 0 && in.Secondary < len(c.Nodes) {
			d.SecondaryNode = c.Nodes[in.Secondary].Name
		}
		// Only the count of NICs matters to the planner (the instance
		// policy bounds it); Ganeti's MACs are not in its IAllocator input.
		d.NICs = make([]events.NIC, in.NICs)
		out = append(out, events.New(d, opts()...))
	}
	return out
}

// seedBatch bounds the events of one seeding transaction.
const seedBatch = 500

// Seed appends envs, grouped by topic in their order, in transactions of
// at most 500 events. Each batch is atomic; a failure leaves the batches
// before it in the log, and seeding again restates the same objects, which
// the whole-state inventory events make harmless.
func Seed(ctx context.Context, p *kafka.Producer, envs []events.Envelope) error {
	byTopic := map[string][]events.Envelope{}
	var topics []string
	for i, e := range envs {
		t, err := e.Topic()
		if err != nil {
			return fmt.Errorf("seed: event %d: %w", i, err)
		}
		if _, ok := byTopic[t]; !ok {
			topics = append(topics, t)
		}
		byTopic[t] = append(byTopic[t], e)
	}
	for _, t := range topics {
		evs := byTopic[t]
		for len(evs) > 0 {
			n := min(len(evs), seedBatch)
			if err := p.Append(ctx, t, evs[:n]...); err != nil {
				return fmt.Errorf("seed %s: %w", t, err)
			}
			evs = evs[n:]
		}
	}
	return nil
}
