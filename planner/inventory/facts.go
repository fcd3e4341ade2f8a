package inventory

import "github.com/drovehq/drove/events"

// Facts are what a dispatch tells the executor of instance: its size,
// storage and run state, its placement now, and the groups of the nodes
// named here and of its primary and secondary (events.InstanceFacts). An
// executor reads only its own node's work, so these are how it knows
// them. Nil when the inventory does not know the instance.
func (inv *Inventory) Facts(instance string, nodes ...string) *events.InstanceFacts {
	in := inv.Instances[instance]
	if in == nil {
		return nil
	}
	f := &events.InstanceFacts{Size: in.Size, Storage: in.Storage, RunState: in.RunState,
		Primary: in.PrimaryNode, Secondary: in.SecondaryNode, Groups: map[string]string{}}
	for _, n := range append([]string{in.PrimaryNode, in.SecondaryNode}, nodes...) {
		if nd := inv.Nodes[n]; nd != nil {
			f.Groups[n] = nd.Group
		}
	}
	return f
}
