package jobs

import (
	"slices"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// reserveInFlight takes from c the room that other active requests' moves
// still need. A plan is computed on the placements of now, but the moves
// of requests under way have not all landed: counting their targets'
// room as free lets two plans fill one node twice (test/chaos found a node
// planned to 67,584 MiB of memory out of 65,536). A move is in flight from
// its plan until its job has ended: then the instance either sits where
// the plan put it, and the inventory counts it there, or it stayed. Its
// source keeps the instance's room until it has left, as the inventory
// already says.
//
// Per-instance migrations' targets (Env.Migrations) are taken the same
// way.
func (p *pass) reserveInFlight(c *planner.Cluster) {
	p.st.reserve(p.env.Inv, c, p.r)
	if p.env.Migrations != nil {
		ReserveMigrations(p.env.Inv, c, p.env.Migrations())
	}
}

// ReserveInFlight takes from c the room every active request's moves
// still need: what a per-instance migration's target must leave free.
func (s *State) ReserveInFlight(inv *inventory.Inventory, c *planner.Cluster) {
	s.reserve(inv, c, nil)
}

// ReserveMigrations takes from c the room of migrations in flight:
// instance → the nodes it still needs (migration.State.InFlight).
func ReserveMigrations(inv *inventory.Inventory, c *planner.Cluster, inFlight map[string][]string) {
	for instance, nodes := range inFlight {
		if in := inv.Instances[instance]; in != nil {
			reserve(c, in, nodes)
		}
	}
}

// reserve takes the room of the moves of every active request but skip.
func (s *State) reserve(inv *inventory.Inventory, c *planner.Cluster, skip *request) {
	for _, id := range s.order {
		o := s.requests[id]
		if o == skip || !o.active() || o.plan == nil {
			continue
		}
		pending := o.pendingInstances()
		for _, mv := range o.plan.Moved {
			in := inv.Instances[mv.Instance]
			if in == nil || !pending[mv.Instance] {
				continue
			}
			reserve(c, in, mv.Nodes)
		}
	}
}

// pendingInstances names the instances of r's plan whose job has not
// ended: their moves may still land.
func (r *request) pendingInstances() map[string]bool {
	out := map[string]bool{}
	for i := range r.plan.Jobs {
		if j, ok := r.jobs[i]; ok && j.done() {
			continue
		}
		for _, op := range r.planJob(i).Opcodes {
			out[op.Instance] = true
		}
	}
	return out
}

// reserve takes in's room on the nodes a move puts it on and it does not
// hold yet: memory on a new primary when it runs, local disk on every new
// node of a kind that keeps its disks on the node.
func reserve(c *planner.Cluster, in *events.InstanceDeclared, nodes []string) {
	held := []string{in.PrimaryNode, in.SecondaryNode}
	for k, name := range nodes {
		i := c.NodeIndex(name)
		if i < 0 || slices.Contains(held, name) {
			continue
		}
		n := &c.Nodes[i]
		if k == 0 && in.RunState == events.RunRunning {
			n.FreeMemory -= in.Size.MemoryMiB
		}
		if in.Storage.UsesLocalDisk() {
			n.FreeDisk -= inventory.DiskTotal(in.Size)
		}
	}
}
