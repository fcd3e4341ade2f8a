package inventory

import (
	"encoding/json"
	"fmt"

	"github.com/drovehq/drove/events"
)

// The planner service's snapshot holds the inventory as a stream of JSON
// values, one per object, rather than one document: at 100,000 instances a
// document is tens of megabytes built (and on restore parsed) whole, twice
// over when it nests in the snapshot's own document, while a stream is
// written and read one object at a time. JSON because every object here
// was decoded from an event's JSON: encoding it back is lossless by
// construction (a *bool holding false, an empty policy stay what they
// were), which an encoding of its own would have to prove field by field.

// counts opens the stream: how many objects of each kind follow.
type counts struct {
	Groups    int `json:"groups"`
	Nodes     int `json:"nodes"`
	Instances int `json:"instances"`
}

// entry is one object with where it first appeared; exactly one of the
// pointers is set.
type entry struct {
	First    Pos                      `json:"first"`
	Group    *events.GroupDeclared    `json:"group,omitempty"`
	Node     *events.NodeAnnounced    `json:"node,omitempty"`
	Instance *events.InstanceDeclared `json:"instance,omitempty"`
}

// Encode writes the whole inventory to enc: its counts, then every group,
// node and instance in its order. Equal inventories encode to equal bytes.
func (inv *Inventory) Encode(enc *json.Encoder) error {
	if err := enc.Encode(counts{len(inv.groupOrder), len(inv.nodeOrder), len(inv.InstanceOrder)}); err != nil {
		return err
	}
	for _, name := range inv.groupOrder {
		if err := enc.Encode(entry{First: inv.first["group/"+name], Group: inv.groups[name]}); err != nil {
			return err
		}
	}
	for _, name := range inv.nodeOrder {
		if err := enc.Encode(entry{First: inv.first["node/"+name], Node: inv.Nodes[name]}); err != nil {
			return err
		}
	}
	for _, name := range inv.InstanceOrder {
		if err := enc.Encode(entry{First: inv.first["instance/"+name], Instance: inv.Instances[name]}); err != nil {
			return err
		}
	}
	return nil
}

// Decode reads an inventory Encode wrote. Objects come in their order, so
// each is appended to it: no sorting, no search.
func Decode(dec *json.Decoder) (*Inventory, error) {
	var n counts
	if err := dec.Decode(&n); err != nil {
		return nil, fmt.Errorf("inventory: counts: %w", err)
	}
	if n.Groups < 0 || n.Nodes < 0 || n.Instances < 0 {
		return nil, fmt.Errorf("inventory: negative counts %+v", n)
	}
	inv := New()
	// Counts come from a file: cap the room made ahead, let append grow.
	inv.groupOrder = make([]string, 0, min(n.Groups, 1<<16))
	inv.nodeOrder = make([]string, 0, min(n.Nodes, 1<<20))
	inv.InstanceOrder = make([]string, 0, min(n.Instances, 1<<22))
	for i := range n.Groups + n.Nodes + n.Instances {
		var e entry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("inventory: object %d: %w", i, err)
		}
		kind, name, err := e.check(i, n)
		if err != nil {
			return nil, err
		}
		if _, dup := inv.first[kind+"/"+name]; dup {
			return nil, fmt.Errorf("inventory: %s %q twice", kind, name)
		}
		inv.first[kind+"/"+name] = e.First
		switch kind {
		case "group":
			inv.groups[name], inv.groupOrder = e.Group, append(inv.groupOrder, name)
		case "node":
			inv.Nodes[name], inv.nodeOrder = e.Node, append(inv.nodeOrder, name)
		default:
			inv.Instances[name], inv.InstanceOrder = e.Instance, append(inv.InstanceOrder, name)
		}
	}
	return inv, nil
}

// check says what object the i-th entry of a stream with counts n must be,
// and whether it is.
func (e entry) check(i int, n counts) (kind, name string, err error) {
	switch {
	case i < n.Groups && e.Group != nil && e.Node == nil && e.Instance == nil:
		return "group", e.Group.Name, nil
	case i >= n.Groups && i < n.Groups+n.Nodes && e.Node != nil && e.Group == nil && e.Instance == nil:
		return "node", e.Node.Name, nil
	case i >= n.Groups+n.Nodes && e.Instance != nil && e.Group == nil && e.Node == nil:
		return "instance", e.Instance.Name, nil
	}
	return "", "", fmt.Errorf("inventory: object %d is not the kind its place in the stream (counts %+v) says", i, n)
}
