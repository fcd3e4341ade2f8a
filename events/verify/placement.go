package verify

import (
	"fmt"
	"slices"

	"github.com/drovehq/drove/events"
)

// inventory folds drove.inventory into where each instance is and what
// each node carries, and the node statuses of drove.progress into the
// sides of each move.
type inventory struct {
	rep       *Report
	nodes     map[string]*nodeBook
	instances map[string]*instance
	order     []string // instances by first declaration
}

// nodeBook is a node's capacity and what is placed on it now.
type nodeBook struct {
	total   events.Resources
	memory  int64 // of running instances whose primary it is
	disk    int64 // of instances with local disks on it
	overMem bool  // reported already, so one overload is one violation
	overDsk bool
}

type instance struct {
	name               string
	decl               events.InstanceDeclared
	primary, secondary string
	last               Ref // the event that put it where it is
	// byRequest is the last placement each request or migration made.
	byRequest map[string]placement
	// move is the node statuses of the instance's current opcode move.
	move map[string]status
}

type placement struct {
	group, primary, secondary string
	ref                       Ref
}

type status struct {
	s   events.NodeMoveStatus
	ref Ref
}

func newInventory(rep *Report) *inventory {
	return &inventory{rep: rep, nodes: map[string]*nodeBook{}, instances: map[string]*instance{}}
}

func (inv *inventory) book(name string) *nodeBook {
	n, ok := inv.nodes[name]
	if !ok {
		n = &nodeBook{}
		inv.nodes[name] = n
	}
	return n
}

// node takes a node's restated totals.
func (inv *inventory) node(p events.NodeUpdated, _ *event) {
	inv.book(p.Name).total = p.Total
}

// localDisk reports whether an instance of kind k keeps its disks on its
// nodes' own storage, which the nodes' disk figure counts: Ganeti's
// LVM-backed kinds and Drove's ZFS pools. File, shared and external
// storage live outside it; diskless instances have none.
func localDisk(k events.StorageKind) bool {
	switch k {
	case events.StoragePlain, events.StorageDRBD, events.StorageZFSLocal, events.StorageZFSReplicated:
		return true
	}
	return false
}

func sum(disks []int64) int64 {
	var t int64
	for _, d := range disks {
		t += d
	}
	return t
}

// load adds (sign 1) or removes (sign -1) the instance's use of its nodes.
func (inv *inventory) load(in *instance, sign int64) {
	if in.primary != "" && in.decl.RunState == events.RunRunning {
		inv.book(in.primary).memory += sign * in.decl.Size.MemoryMiB
	}
	if localDisk(in.decl.Storage) {
		d := sign * sum(in.decl.Size.DisksMiB)
		for _, n := range []string{in.primary, in.secondary} {
			if n != "" {
				inv.book(n).disk += d
			}
		}
	}
}

// declare takes an instance's whole declared state. A declaration is the
// inventory's word on where an instance is (a seed, an import), not a
// move, so it may put the instance anywhere.
func (inv *inventory) declare(p events.InstanceDeclared, e *event) {
	in, ok := inv.instances[p.Name]
	if !ok {
		in = &instance{name: p.Name, byRequest: map[string]placement{}, move: map[string]status{}}
		inv.instances[p.Name] = in
		inv.order = append(inv.order, p.Name)
	} else {
		inv.load(in, -1)
	}
	in.decl, in.primary, in.secondary, in.last = p, p.PrimaryNode, p.SecondaryNode, e.ref
	inv.load(in, 1)
	inv.rep.Counts.Instances = len(inv.instances)
}

// place checks that a placement starts from where the instance is: one
// that starts elsewhere forks the instance's history, leaving it on the
// nodes of both branches at once.
func (inv *inventory) place(p events.InstancePlaced, e *event) {
	inv.rep.Counts.Placements++
	in, ok := inv.instances[p.Instance]
	if !ok {
		inv.rep.add(Placement, []Ref{e.ref}, "instance %s placed on %s before it was declared", p.Instance, p.PrimaryNode)
		return
	}
	if p.PreviousPrimary != in.primary || p.PreviousSecondary != in.secondary {
		inv.rep.add(Placement, []Ref{in.last, e.ref},
			"instance %s placed on %s from %s, but it was on %s: it would be on two nodes at once",
			p.Instance, nodes(p.PrimaryNode, p.SecondaryNode), nodes(p.PreviousPrimary, p.PreviousSecondary),
			nodes(in.primary, in.secondary))
	}
	if p.SecondaryNode != "" && p.SecondaryNode == p.PrimaryNode {
		inv.rep.add(Placement, []Ref{e.ref}, "instance %s placed with %s as both primary and secondary", p.Instance, p.PrimaryNode)
	}
	inv.load(in, -1)
	in.primary, in.secondary, in.last = p.PrimaryNode, p.SecondaryNode, e.ref
	inv.load(in, 1)
	if p.Request != "" {
		in.byRequest[p.Request] = placement{group: p.Group, primary: p.PrimaryNode, secondary: p.SecondaryNode, ref: e.ref}
	}
	for _, n := range []string{p.PrimaryNode, p.SecondaryNode} {
		if n != "" {
			inv.checkNode(n, fmt.Sprintf("after %s was placed on it", p.Instance), e.ref)
		}
	}
}

func nodes(primary, secondary string) string {
	if secondary == "" {
		return primary
	}
	return primary + "/" + secondary
}

// checkNode reports a node carrying more than its totals, once per
// overload (it is reported again only after it fitted in between).
func (inv *inventory) checkNode(name, when string, ref Ref) {
	inv.rep.Counts.NodeChecks++
	n := inv.book(name)
	over := n.memory > n.total.MemoryMiB
	if over && !n.overMem {
		inv.rep.add(Capacity, []Ref{ref}, "node %s carries %d MiB of running instances' memory %s; it has %d MiB",
			name, n.memory, when, n.total.MemoryMiB)
	}
	n.overMem = over
	over = n.disk > n.total.DiskMiB
	if over && !n.overDsk {
		inv.rep.add(Capacity, []Ref{ref}, "node %s carries %d MiB of local disks %s; it has %d MiB",
			name, n.disk, when, n.total.DiskMiB)
	}
	n.overDsk = over
}

// checkPlan applies a plan's moves to the nodes as they are now and checks
// every node the plan puts an instance on.
func (inv *inventory) checkPlan(p events.PlanComputed, e *event) {
	inv.rep.Counts.Plans++
	mem, disk := map[string]int64{}, map[string]int64{}
	var targets []string
	for _, m := range p.Moved {
		in, ok := inv.instances[m.Instance]
		if !ok {
			inv.rep.add(Capacity, []Ref{e.ref}, "plan of %s moves %s, which was never declared", p.Request, m.Instance)
			continue
		}
		running, local := in.decl.RunState == events.RunRunning, localDisk(in.decl.Storage)
		size := sum(in.decl.Size.DisksMiB)
		if running && in.primary != "" {
			mem[in.primary] -= in.decl.Size.MemoryMiB
		}
		for _, n := range []string{in.primary, in.secondary} {
			if local && n != "" {
				disk[n] -= size
			}
		}
		for i, n := range m.Nodes {
			if i == 0 && running {
				mem[n] += in.decl.Size.MemoryMiB
			}
			if local {
				disk[n] += size
			}
			if !slices.Contains(targets, n) {
				targets = append(targets, n)
			}
		}
	}
	for _, n := range targets {
		inv.rep.Counts.NodeChecks++
		b, ok := inv.nodes[n]
		if !ok {
			inv.rep.add(Capacity, []Ref{e.ref}, "plan of %s puts instances on node %s, which never announced itself", p.Request, n)
			continue
		}
		if m := b.memory + mem[n]; m > b.total.MemoryMiB {
			inv.rep.add(Capacity, []Ref{e.ref}, "plan of %s leaves node %s with %d MiB of running instances' memory; it has %d MiB",
				p.Request, n, m, b.total.MemoryMiB)
		}
		if d := b.disk + disk[n]; d > b.total.DiskMiB {
			inv.rep.add(Capacity, []Ref{e.ref}, "plan of %s leaves node %s with %d MiB of local disks; it has %d MiB",
				p.Request, n, d, b.total.DiskMiB)
		}
	}
}

// status folds what a node says of an instance during and after an
// opcode's move. The source's "migration source" opens a move; when the
// next one opens, and at the end of the log, the move before is over and
// at most one of its nodes may still report the instance up.
func (inv *inventory) status(p events.MoveStatusReported, e *event) {
	in, ok := inv.instances[p.Instance]
	if !ok {
		inv.rep.add(Placement, []Ref{e.ref}, "node %s reports %s for instance %s, which was never declared", p.Node, p.Status, p.Instance)
		return
	}
	if p.Status == events.StatusMigrationSource {
		inv.closeMove(in)
	}
	in.move[p.Node] = status{p.Status, e.ref}
}

func (inv *inventory) closeMove(in *instance) {
	if len(in.move) == 0 {
		return
	}
	inv.rep.Counts.Moves++
	var up []string
	var refs []Ref
	for n, s := range in.move {
		if s.s == events.StatusUp {
			up = append(up, n)
			refs = append(refs, s.ref)
		}
	}
	if len(up) > 1 {
		slices.Sort(up)
		slices.SortFunc(refs, func(a, b Ref) int { return a.Time.Compare(b.Time) })
		inv.rep.add(Placement, refs, "instance %s reported running on %v at once after its move ended", in.name, up)
	}
	in.move = map[string]status{}
}

func (inv *inventory) finish() {
	for _, name := range inv.order {
		inv.closeMove(inv.instances[name])
	}
}
