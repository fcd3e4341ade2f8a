package inventory

import (
	"cmp"
	"slices"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

// Inventory is the fold of drove.inventory: the last whole state of every
// group, node and instance, kept in the order each first appeared in the
// log so that the planner's input, and so its plan, is reproducible.
//
// "First appeared" must mean the same on every replay, but the topic's
// partitions are read side by side in no fixed interleaving. So an object's
// place is the position of its first event: (event time, partition,
// offset), a total order fixed by the log itself, which follows the order
// objects were declared in (a seed writes them in its cluster's order).
type Inventory struct {
	groups    map[string]*events.GroupDeclared
	Nodes     map[string]*events.NodeAnnounced
	Instances map[string]*events.InstanceDeclared

	groupOrder, nodeOrder []string
	// InstanceOrder lists instance names by where each first appeared.
	InstanceOrder []string
	first         map[object]Pos
}

// object names a group, node or instance: its kind is one of the constants
// below, so a key shares its name's bytes rather than building a string.
type object struct{ kind, name string }

const (
	kindGroup    = "group"
	kindNode     = "node"
	kindInstance = "instance"
)

// Pos is where an event sits in the log. Events the service applies
// before reading them back have no partition yet: they sort after every
// read event of the same time (they never declare an object anyway).
type Pos struct {
	Time      time.Time
	Partition int32
	Offset    int64
}

// Unread is the position of an event not read from the log.
func Unread(e events.Envelope) Pos { return Pos{e.Time, 1<<31 - 1, 0} }

// Compare orders positions: by time, then partition, then offset.
func (a Pos) Compare(b Pos) int {
	return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

// Entry returns what a fold keeps under k in m, first making it with
// made and keeping it there when an event names k for the first time;
// added says it did. The folds of planner/jobs and planner/migration make
// their requests, jobs, opcodes, migrations and phases this way: an object
// of the log exists from the first event that names it, whichever that is.
func Entry[K comparable, V any](m map[K]V, k K, made func() V) (v V, added bool) {
	if v, ok := m[k]; ok {
		return v, false
	}
	v = made()
	m[k] = v
	return v, true
}

// New returns an empty inventory.
func New() *Inventory {
	return &Inventory{
		groups:    map[string]*events.GroupDeclared{},
		Nodes:     map[string]*events.NodeAnnounced{},
		Instances: map[string]*events.InstanceDeclared{},
		first:     map[object]Pos{},
	}
}

// place records where an object first appeared and keeps order sorted by
// it.
func (inv *Inventory) place(order *[]string, kind, name string, pos Pos) {
	key := object{kind, name}
	old, seen := inv.first[key]
	if seen && old.Compare(pos) <= 0 {
		return
	}
	inv.first[key] = pos
	if seen {
		*order = slices.DeleteFunc(*order, func(n string) bool { return n == name })
	}
	// A replay meets objects mostly in their order: the newest goes last
	// without a search (each of whose steps builds a key).
	if n := len(*order); n == 0 || inv.first[object{kind, (*order)[n-1]}].Compare(pos) < 0 {
		*order = append(*order, name)
		return
	}
	i, _ := slices.BinarySearchFunc(*order, pos, func(n string, p Pos) int {
		return inv.first[object{kind, n}].Compare(p)
	})
	*order = slices.Insert(*order, i, name)
}

// Apply folds one inventory event. Every event states a whole object (or a
// whole placement), so applying one twice leaves the same state: reading
// back what the service wrote itself is a no-op.
func (inv *Inventory) Apply(p events.Payload, pos Pos) {
	switch e := p.(type) {
	case events.GroupDeclared:
		inv.place(&inv.groupOrder, kindGroup, e.Name, pos)
		inv.groups[e.Name] = &e
	case events.NodeAnnounced:
		inv.place(&inv.nodeOrder, kindNode, e.Name, pos)
		inv.Nodes[e.Name] = &e
	case events.NodeUpdated:
		inv.place(&inv.nodeOrder, kindNode, e.Name, pos)
		n := events.NodeAnnounced(e)
		inv.Nodes[e.Name] = &n
	case events.InstanceDeclared:
		inv.place(&inv.InstanceOrder, kindInstance, e.Name, pos)
		inv.Instances[e.Name] = &e
	case events.InstancePlaced:
		// A placement of an instance never declared is kept nowhere: the
		// planner cannot move what it does not know the size of.
		if in, ok := inv.Instances[e.Instance]; ok {
			in.PrimaryNode = e.PrimaryNode
			in.SecondaryNode = e.SecondaryNode
		}
	}
}

// DiskTotal is the sum of an instance's disks.
func DiskTotal(s events.Size) int64 {
	var t int64
	for _, d := range s.DisksMiB {
		t += d
	}
	return t
}

// FreeOf derives a node's free memory and disk from its totals and the
// instances placed on it now. Nodes report free space only when they
// announce themselves; deriving it keeps the snapshot consistent while
// instances move, and matches the planner's books exactly: free memory is
// total - reserved - running primaries, so nothing is "missing" against
// the records.
func (inv *Inventory) FreeOf(node string) (mem, disk int64) {
	n := inv.Nodes[node]
	u := inv.used(func(name string) bool { return name == node })[node]
	return n.Total.MemoryMiB - n.ReservedMemoryMiB - u.mem, n.Total.DiskMiB - u.disk
}

// usage is what the instances placed on a node take of it.
type usage struct{ mem, disk int64 }

// used sums, in one pass over the instances, what they take of each node
// for which want is true: building the whole cluster is then O(nodes +
// instances), not O(nodes × instances).
func (inv *Inventory) used(want func(node string) bool) map[string]usage {
	out := make(map[string]usage, len(inv.Nodes))
	add := func(node string, mem, disk int64) {
		if node != "" && want(node) {
			u := out[node]
			u.mem, u.disk = u.mem+mem, u.disk+disk
			out[node] = u
		}
	}
	for _, name := range inv.InstanceOrder {
		in := inv.Instances[name]
		if in.RunState == events.RunRunning {
			add(in.PrimaryNode, in.Size.MemoryMiB, 0)
		}
		if in.Storage.UsesLocalDisk() {
			add(in.PrimaryNode, 0, DiskTotal(in.Size))
			if in.SecondaryNode != in.PrimaryNode {
				add(in.SecondaryNode, 0, DiskTotal(in.Size))
			}
		}
	}
	return out
}

// NodeState returns the node's whole state as a NodeUpdated would restate
// it, with free space derived from the placements.
func (inv *Inventory) NodeState(name string) events.NodeUpdated {
	n := *inv.Nodes[name]
	n.Free.MemoryMiB, n.Free.DiskMiB = inv.FreeOf(name)
	n.Free.MemoryMiB = max(n.Free.MemoryMiB, 0)
	n.Free.DiskMiB = max(n.Free.DiskMiB, 0)
	return events.NodeUpdated(n)
}

var runStates = map[events.RunState]planner.RunState{
	events.RunRunning: planner.Up, events.RunStopped: planner.Down, events.RunOffline: planner.Offline,
}

// Cluster builds the planner's snapshot. References to undeclared groups or
// nodes become index -1, which planner.Compute reports as inconsistent data
// naming the object: a request is then rejected with that reason rather
// than planned on a guess.
func (inv *Inventory) Cluster() *planner.Cluster {
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
	// Sized up front: at fleet scale (100,000 instances) growing these
	// slices and maps cost more than filling them.
	nodeIdx := make(map[string]int, len(inv.nodeOrder))
	c.Nodes = make([]planner.Node, 0, len(inv.nodeOrder))
	c.Instances = make([]planner.Instance, 0, len(inv.InstanceOrder))
	used := inv.used(func(string) bool { return true })
	for _, name := range inv.nodeOrder {
		n := inv.Nodes[name]
		g, ok := groupIdx[n.Group]
		if !ok {
			g = -1
		}
		freeMem, freeDisk := n.Total.MemoryMiB-n.ReservedMemoryMiB-used[name].mem, n.Total.DiskMiB-used[name].disk
		nodeIdx[name] = len(c.Nodes)
		c.Nodes = append(c.Nodes, planner.Node{
			Name: n.Name, Group: g,
			TotalMemory: n.Total.MemoryMiB, FreeMemory: freeMem, ReservedMemory: n.ReservedMemoryMiB,
			TotalDisk: n.Total.DiskMiB, FreeDisk: freeDisk,
			TotalCPUs: int64(n.Total.CPUs), TotalSpindles: int64(n.Total.Spindles),
			FreeSpindles: int64(n.Free.Spindles),
			Offline:      n.Offline, Drained: n.Drained, VMCapable: n.VMCapable, Tags: n.Tags,
			SendBytesPerSecond: n.SendBytesPerSecond, ReceiveBytesPerSecond: n.ReceiveBytesPerSecond,
		})
	}
	disks := 0
	for _, name := range inv.InstanceOrder {
		disks += len(inv.Instances[name].Size.DisksMiB)
	}
	all := make([]planner.Disk, 0, disks) // one array for every instance's disks
	for _, name := range inv.InstanceOrder {
		in := inv.Instances[name]
		idx := func(node string) int {
			if i, ok := nodeIdx[node]; ok {
				return i
			}
			return -1
		}
		pi := planner.Instance{
			Name: in.Name, Memory: in.Size.MemoryMiB, DiskSpace: DiskTotal(in.Size),
			VCPUs: int64(in.Size.VCPUs), SpindleUse: int64(in.Size.Spindles),
			NICs: int64(len(in.NICs)), Tags: in.Tags, Storage: planner.StorageKind(in.Storage),
			State: runStates[in.RunState], Owner: in.Owner,
			Primary: idx(in.PrimaryNode), Secondary: planner.NoNode,
		}
		if len(in.Size.DisksMiB) > 0 {
			from := len(all)
			for _, d := range in.Size.DisksMiB {
				all = append(all, planner.Disk{Size: d})
			}
			pi.Disks = all[from:len(all):len(all)]
		}
		if in.SecondaryNode != "" {
			pi.Secondary = idx(in.SecondaryNode)
		}
		c.Instances = append(c.Instances, pi)
	}
	return c
}
